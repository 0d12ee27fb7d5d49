//! Per-step overhead of the run loop without the provider and the tool: a run of 50 tool steps
//! (each one `ls` call) and a final answer (51 requests), against, in the same run,
//! - the same 50 calls made directly with `Runner::call` (tool time, results persisted alike),
//! - the same 51 requests streamed directly through the same provider, with the conversation
//!   growing as the loop's does (provider time: HTTP, SSE parsing, the fake server's checks).
//!
//! overhead per step = (run wall - tool time - provider time) / 51: what the loop adds (storage of
//! messages, rebuilding each request from SQLite, presentation, events). Median of 3 rounds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::agent::tools::tool_specs;
use aibuddy::agent::{Agent, AgentOptions, NullRunSink, RunStart, RunStatus};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::discovery::Presentation as Discovery;
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::CallRequest;
use aibuddy_provider::testing::{FakeServer, Turn};
use aibuddy_provider::{
    ApiKey, BaseUrlFrom, ContentBlock, HttpProvider, Message, ModelRequest, Presentation, Provider,
    ProviderEvent, ProviderKind, Route,
};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{load, median, ms, project, verdict};

const STEPS: usize = 50;
const ROUNDS: usize = 3;
const GOAL_MS: f64 = 5.0;
const KIND: ProviderKind = ProviderKind::Anthropic;

fn turn(round: usize, i: usize) -> Turn {
    if i == STEPS {
        Turn::text("done")
    } else {
        Turn::text("listing").call(&call_id("run", round, i), "ls", json!({"path": "."}))
    }
}

/// Call ids are unique per round and per path (the store keys tool calls by id).
fn call_id(what: &str, round: usize, i: usize) -> String {
    format!("call_{what}_{round}_{i}")
}

struct Round {
    run: Duration,
    tools: Duration,
    provider: Duration,
}

/// A fresh fake provider and a provider pointed at it (the fake server checks that assistant
/// turns come back as served, from the start of its history: one conversation per server).
async fn fake() -> Result<(FakeServer, Arc<HttpProvider>), String> {
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    let route = Route {
        name: "bench".into(),
        kind: KIND,
        model: "claude-sonnet-4-6".into(),
        base_url: server.base_url(KIND),
        first_party: false,
        base_url_from: BaseUrlFrom::Settings,
        presentation: Presentation::Native,
        context_window: 200_000,
        stream: None,
        images: true,
    };
    let provider =
        HttpProvider::new(route, ApiKey::new("sk-bench-key")).map_err(|e| e.to_string())?;
    Ok((server, Arc::new(provider)))
}

fn violations(server: &FakeServer) -> Result<(), String> {
    match server.violations().first() {
        None => Ok(()),
        Some(v) => Err(format!("protocol violation [{}] {}", v.rule, v.detail)),
    }
}

async fn round(app: &Arc<App>, r: usize) -> Result<Round, String> {
    // 1. The loop.
    let (server, provider) = fake().await?;
    for i in 0..=STEPS {
        server.push(turn(r, i).reply(KIND));
    }
    let agent = Agent::new(
        app.clone(),
        provider.clone(),
        Arc::new(ApproveAll),
        AgentOptions::default(),
    );
    let start = RunStart {
        prompt: "list the project fifty times".into(),
        max_steps: Some(STEPS as u32 + 1),
        ..RunStart::default()
    };
    let t = Instant::now();
    let out = agent
        .run(start, CancellationToken::new(), Arc::new(NullRunSink))
        .await
        .map_err(|e| e.to_string())?;
    let run = t.elapsed();
    if out.status != RunStatus::Completed || out.steps as usize != STEPS + 1 {
        return Err(format!(
            "the run ended {:?} after {} steps",
            out.status, out.steps
        ));
    }
    // 2. The same tool calls, directly.
    let run_id = format!("bench_direct_{r}");
    let runner = app.runner(Some(run_id.clone()), Arc::new(ApproveAll));
    let toolset = app.run_toolset(&run_id);
    let mut results = Vec::new();
    let t = Instant::now();
    for i in 0..STEPS {
        let req = CallRequest {
            id: Some(call_id("direct", r, i)),
            name: "ls".into(),
            arguments: json!({"path": "."}).to_string(),
        };
        let o = runner
            .call(&toolset, req, CancellationToken::new(), Arc::new(NullSink))
            .await;
        if o.status != CallStatus::Ok {
            return Err(format!("ls failed: {}", o.model));
        }
        results.push(o.model);
    }
    let tools = t.elapsed();
    violations(&server)?;
    // 3. The same requests, directly through the provider.
    let (server, provider) = fake().await?;
    let specs = tool_specs(app.present_tools(&run_id, Discovery::ProviderNative));
    let mut messages = vec![Message::user_text("list the project fifty times")];
    let t = Instant::now();
    for i in 0..=STEPS {
        server.push(turn(r, i).reply(KIND));
        let mut req = ModelRequest::new(provider.route().model.clone(), messages.clone());
        req.system = "You are aibuddy, an agent working inside the project folder.".into();
        req.tools = specs.clone();
        req.presentation = Presentation::Native;
        let mut stream = provider
            .stream(&req, CancellationToken::new())
            .await
            .map_err(|e| e.to_string())?;
        let mut message = None;
        while let Some(ev) = stream.next().await {
            if let ProviderEvent::MessageEnd { message: m } = ev.map_err(|e| e.to_string())? {
                message = Some(m);
            }
        }
        let message = message.ok_or("a stream ended without its message")?;
        let ids: Vec<String> = message
            .tool_calls()
            .map(|(id, ..)| id.to_string())
            .collect();
        messages.push(message);
        if !ids.is_empty() {
            let blocks = ids
                .into_iter()
                .map(|id| {
                    let text = results.get(i).cloned().unwrap_or_default();
                    ContentBlock::tool_result_text(id, text)
                })
                .collect();
            messages.push(Message::tool_results(blocks));
        }
    }
    let provider_time = t.elapsed();
    violations(&server)?;
    Ok(Round {
        run,
        tools,
        provider: provider_time,
    })
}

pub async fn run() {
    println!(
        "\n-- per-step overhead of the loop ({STEPS} `ls` steps + a final answer, no provider or tool time)"
    );
    let p = project();
    let app = match App::open(AppOptions {
        project: p.root.clone(),
        data_dir: p.data.clone(),
    })
    .await
    {
        Ok(a) => Arc::new(a),
        Err(e) => return println!("   skipped: the app did not open: {e}"),
    };
    let mut rounds = Vec::new();
    for r in 0..ROUNDS {
        match round(&app, r).await {
            Ok(x) => rounds.push(x),
            Err(e) => return println!("   skipped: {e}"),
        }
    }
    let steps = (STEPS + 1) as u32;
    let overhead: Vec<Duration> = rounds
        .iter()
        .map(|x| x.run.saturating_sub(x.tools + x.provider) / steps)
        .collect();
    let run = median(rounds.iter().map(|x| x.run).collect());
    let tools = median(rounds.iter().map(|x| x.tools).collect());
    let prov = median(rounds.iter().map(|x| x.provider).collect());
    let per_step = median(overhead);
    println!(
        "   run of {steps} steps: {} ({} per step)",
        ms(run),
        ms(run / steps)
    );
    println!(
        "   baseline, the same {STEPS} calls directly: {}",
        ms(tools)
    );
    println!(
        "   baseline, the same {steps} requests directly: {}",
        ms(prov)
    );
    println!(
        "   loop overhead per step: {} ({:.2}x the direct cost), goal <= {GOAL_MS} ms: {}",
        ms(per_step),
        run.as_secs_f64() / (tools + prov).as_secs_f64().max(1e-9),
        verdict(per_step.as_secs_f64() * 1e3, GOAL_MS)
    );
    println!("   (median of {ROUNDS} rounds; load average: {})", load());
}
