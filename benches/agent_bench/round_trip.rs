//! The first-request round trip (issue 25): `aibuddy run --json --yes` with the 7 real MCP servers
//! configured, started together with the run (it never waits for them), and a scripted model whose
//! very first step searches for the time tool, then calls `get_current_time`, then answers. One
//! success is a completed run whose time call returned the real server's answer with no protocol
//! violation. 10 runs per route (Anthropic Messages and OpenAI Responses with native tool search,
//! Chat Completions with activeTools). Goal: 10/10 on each route.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};

use crate::common::{load, project, real_servers, tools_dir};

const RUNS: usize = 10;
const KEY: &str = "sk-bench-round-trip";

/// One run: Ok(seconds) when the round trip succeeded, else why not.
async fn round_trip(bin: &Path, tools: &Path, kind: ProviderKind) -> Result<f64, String> {
    let p = project();
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    let provider = match kind {
        ProviderKind::Anthropic => json!({"default": "anthropic", "anthropic": {
            "model": "claude-sonnet-4-6", "tool_search": "native"}}),
        ProviderKind::OpenAiResponses => json!({"default": "openai", "openai": {
            "model": "gpt-5.4", "tool_search": "native"}}),
        ProviderKind::OpenAiChat => json!({"default": "local", "local": {
            "kind": "openai-chat", "base_url": server.openai_base(), "model": "qwen3:8b"}}),
    };
    p.write_data("settings.json", &json!({ "providers": provider }));
    p.write_data("mcp.json", &real_servers(tools, p.tmp.path()));
    let search = json!({"query": "get the current time in a timezone", "limit": 3});
    server.push(
        if kind == ProviderKind::OpenAiResponses {
            Turn::default().search_call("call_s1", search)
        } else {
            Turn::text("Searching.").call("call_s1", "tool_search", search)
        }
        .reply(kind),
    );
    server.push(
        Turn::text("Asking the clock.")
            .call(
                "call_t1",
                "mcp__time__get_current_time",
                json!({"timezone": "UTC"}),
            )
            .reply(kind),
    );
    server.push(Turn::text("It is time.").reply(kind));
    let mut cmd = p.cli(bin, &["run", "--json", "--yes", "What time is it?"]);
    match kind {
        ProviderKind::Anthropic => {
            cmd.env("ANTHROPIC_API_KEY", KEY)
                .env("ANTHROPIC_BASE_URL", server.anthropic_base());
        }
        ProviderKind::OpenAiResponses => {
            cmd.env("OPENAI_API_KEY", KEY)
                .env("OPENAI_BASE_URL", server.openai_base());
        }
        ProviderKind::OpenAiChat => {
            cmd.env_remove("ANTHROPIC_BASE_URL");
        }
    }
    let started = Instant::now();
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .map_err(|_| "the run did not end within 180 s".to_string())?
        .map_err(|e| e.to_string())?;
    let took = started.elapsed().as_secs_f64();
    if let Some(v) = server.violations().first() {
        return Err(format!("protocol violation [{}] {}", v.rule, v.detail));
    }
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let first_has_search = server.requests().first().is_some_and(|r| {
        r.body["tools"].as_array().into_iter().flatten().any(|t| {
            t["name"] == "tool_search"
                || t["type"] == "tool_search"
                || t["function"]["name"] == "tool_search"
        })
    });
    if !first_has_search {
        return Err("the first request had no tool_search".into());
    }
    let time_ok = events.iter().any(|e| {
        e["type"] == "tool_result"
            && e["tool_call_id"]
                .as_str()
                .is_some_and(|id| id.ends_with(":call_t1"))
            && e["status"] == "ok"
            && e["model"].as_str().is_some_and(|m| m.contains("UTC"))
    });
    if !time_ok {
        let why = events
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .map(|e| {
                e["model"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" | ");
        return Err(format!("get_current_time did not answer: {why}"));
    }
    let completed = events
        .last()
        .is_some_and(|e| e["type"] == "run_finished" && e["status"] == "completed");
    if !completed || !out.status.success() {
        return Err(format!("the run ended {}", out.status));
    }
    Ok(took)
}

pub async fn run(bin: &Path) {
    println!(
        "\n-- first-request round trip (search -> get_current_time -> answer) with the 7 real MCP \
         servers starting with the run (CLI), {RUNS} runs per route"
    );
    let Some(t) = tools_dir() else {
        println!("   skipped: the real MCP servers are not installed (.tools/mcp; `make setup`)");
        return;
    };
    for (kind, label) in [
        (ProviderKind::Anthropic, "Anthropic Messages (native)"),
        (ProviderKind::OpenAiResponses, "OpenAI Responses (native)"),
        (ProviderKind::OpenAiChat, "Chat Completions (activeTools)"),
    ] {
        let mut ok = 0;
        let mut times = Vec::new();
        let mut failures = Vec::new();
        for _ in 0..RUNS {
            match round_trip(bin, &t, kind).await {
                Ok(s) => {
                    ok += 1;
                    times.push(s);
                }
                Err(e) => failures.push(e),
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
        println!(
            "   {label}: {ok}/{RUNS} round trips (median run {median:.1} s), goal {RUNS}/{RUNS}: {}",
            if ok == RUNS { "PASS" } else { "MISS" }
        );
        for f in failures.iter().take(3) {
            println!("     failed: {f}");
        }
    }
    println!("   (load average: {})", load());
}
