//! Tool-definition bytes in the first request with the 7 real MCP servers (78 tools), measured
//! from the body the fake provider actually receives, on both presentations.
//!
//! - native (Anthropic, `tool_search: "native"`): the array carries every tool, the deferred ones
//!   with `defer_loading: true`; the provider keeps deferred definitions out of the model's
//!   context, so the goal applies to the loaded (not deferred) definitions. The wire size of the
//!   whole array is printed too.
//! - activeTools (Chat Completions): only active tools are sent; everything sent is loaded.
//!
//! The baseline is the same format's array with every schema loaded (what a client without
//! deferral sends), built by the same provider code.

use std::sync::Arc;
use std::time::Duration;

use aibuddy::agent::tools::tool_specs;
use aibuddy::agent::{Agent, AgentOptions, NullRunSink, RunStart};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::discovery::Presentation as Discovery;
use aibuddy_mcp::ServerState;
use aibuddy_provider::testing::{FakeServer, Turn};
use aibuddy_provider::{
    ApiKey, BaseUrlFrom, HttpProvider, Message, ModelRequest, Presentation, Provider, ProviderKind,
    Route,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::common::{load, project, real_servers, tools_dir, verdict};

const GOAL_BYTES: f64 = 15_000.0;

fn route(kind: ProviderKind, presentation: Presentation, server: &FakeServer) -> Route {
    Route {
        name: "bench".into(),
        kind,
        model: match kind {
            ProviderKind::Anthropic => "claude-sonnet-4-6".into(),
            _ => "qwen3:8b".into(),
        },
        base_url: server.base_url(kind),
        first_party: false,
        base_url_from: BaseUrlFrom::Settings,
        presentation,
        context_window: 200_000,
        stream: None,
        images: true,
    }
}

fn len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len())
}

pub async fn run() {
    println!("\n-- tool-definition bytes in the first request (7 real MCP servers)");
    let Some(t) = tools_dir() else {
        println!("   skipped: the real MCP servers are not installed (.tools/mcp; `make setup`)");
        return;
    };
    let p = project();
    p.write_data("mcp.json", &real_servers(&t, p.tmp.path()));
    let app = match App::open(AppOptions {
        project: p.root.clone(),
        data_dir: p.data.clone(),
    })
    .await
    {
        Ok(a) => Arc::new(a),
        Err(e) => return println!("   skipped: the app did not open: {e}"),
    };
    let Some(mcp) = app.capabilities.mcp.clone() else {
        return println!("   skipped: no MCP servers configured");
    };
    let ready = mcp
        .wait_for(Duration::from_secs(240), |s| {
            s.len() == 7
                && s.iter().all(|x| x.state == ServerState::Connected)
                && s.iter()
                    .any(|x| x.server == "everything" && x.tools_refreshed >= 1)
        })
        .await;
    if !ready {
        return println!(
            "   skipped: the servers did not all connect: {:?}",
            mcp.status()
        );
    }
    app.capabilities.refresh();
    let cases = [
        (
            "native (Anthropic, tool_search native)",
            ProviderKind::Anthropic,
            Presentation::Native,
        ),
        (
            "activeTools (Chat Completions)",
            ProviderKind::OpenAiChat,
            Presentation::ActiveTools,
        ),
    ];
    for (label, kind, presentation) in cases {
        let server = match FakeServer::start().await {
            Ok(s) => s,
            Err(e) => return println!("   skipped: fake server: {e}"),
        };
        server.push(Turn::text("ok").reply(kind));
        let provider = match HttpProvider::new(
            route(kind, presentation, &server),
            ApiKey::new("sk-bench-key"),
        ) {
            Ok(p) => Arc::new(p),
            Err(e) => return println!("   skipped: provider: {e}"),
        };
        let agent = Agent::new(
            app.clone(),
            provider.clone(),
            Arc::new(ApproveAll),
            AgentOptions::default(),
        );
        let start = RunStart {
            prompt: "hello".into(),
            ..RunStart::default()
        };
        if let Err(e) = agent
            .run(start, CancellationToken::new(), Arc::new(NullRunSink))
            .await
        {
            return println!("   skipped: the run failed: {e}");
        }
        let Some(first) = server.requests().into_iter().next() else {
            return println!("   skipped: no request reached the fake provider");
        };
        let tools: Vec<Value> = first.body["tools"].as_array().cloned().unwrap_or_default();
        let (deferred, loaded): (Vec<&Value>, Vec<&Value>) = tools
            .iter()
            .partition(|t| t["defer_loading"] == Value::Bool(true));
        let loaded_bytes = len(&Value::Array(loaded.iter().map(|v| (*v).clone()).collect()));
        let wire_bytes = len(&first.body["tools"]);
        // Baseline: every schema loaded, in the same format.
        let mut all = tool_specs(app.present_tools("bench_all_schemas", Discovery::ProviderNative));
        for s in &mut all {
            s.deferred = false;
        }
        let mut req = ModelRequest::new(
            provider.route().model.clone(),
            vec![Message::user_text("hello")],
        );
        req.tools = all;
        req.presentation = Presentation::ActiveTools;
        let all_bytes = provider
            .request_body(&req)
            .map(|b| len(&b["tools"]))
            .unwrap_or(0);
        println!("   {label}:");
        println!(
            "     loaded definitions: {loaded_bytes} B ({} tools), goal <= 15000 B: {}",
            loaded.len(),
            verdict(loaded_bytes as f64, GOAL_BYTES)
        );
        println!(
            "     whole tools array on the wire: {wire_bytes} B ({} deferred with defer_loading)",
            deferred.len()
        );
        println!(
            "     all schemas loaded (baseline): {all_bytes} B => {:.1}% of it loaded",
            100.0 * loaded_bytes as f64 / all_bytes.max(1) as f64
        );
    }
    println!("   (load average: {})", load());
}
