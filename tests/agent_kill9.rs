//! `kill -9` of a real `aibuddy run` mid-tool, then `aibuddy run --continue RUN_ID`: the run is
//! found `interrupted`, its dangling call is answered as interrupted, and the continued run sends
//! a valid protocol, which the fake provider checks on every request (pairs, replayed assistant
//! items exactly as served). On each route, the OpenAI Responses native presentation included.

mod agent_common;
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_common::processes_with;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const KEY: &str = "sk-test-kill9-77aa";

fn settings(kind: ProviderKind, server: &FakeServer) -> Value {
    match kind {
        ProviderKind::Anthropic => json!({"providers": {"default": "anthropic",
            "anthropic": {"model": "claude-sonnet-4-6", "tool_search": "native"}}}),
        // A custom base URL presents activeTools; the native path is forced (as above).
        ProviderKind::OpenAiResponses => json!({"providers": {"default": "openai",
            "openai": {"model": "gpt-5.4", "tool_search": "native"}}}),
        ProviderKind::OpenAiChat => json!({"providers": {"default": "local", "local": {
            "kind": "openai-chat", "base_url": server.openai_base(), "model": "qwen3:8b"}}}),
    }
}

fn command(
    project: &std::path::Path,
    data: &std::path::Path,
    server: &FakeServer,
    args: &[&str],
) -> tokio::process::Command {
    let mut cmd = support::aibuddy_cmd(project, data);
    cmd.args(args)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base())
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", server.openai_base())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

fn events_of(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

async fn kill_9_then_continue(kind: ProviderKind, marker: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("proj"), base.join("data"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let server = FakeServer::start().await.unwrap();
    if kind != ProviderKind::OpenAiChat {
        server.expect_key(KEY);
    }
    std::fs::write(
        data.join("settings.json"),
        settings(kind, &server).to_string(),
    )
    .unwrap();
    let sleep = format!("sleep {marker}");
    server.push(
        Turn::text("Waiting.")
            .call("call_long", "execute", json!({"command": sleep}))
            .reply(kind),
    );

    let mut child = command(
        &project,
        &data,
        &server,
        &["run", "wait a long time", "--yes", "--json"],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut started: Option<Value> = None;
    let saw_call = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["type"] == "run_started" {
                started = Some(v.clone());
            }
            if v["type"] == "tool_call" {
                return;
            }
        }
    })
    .await;
    assert!(saw_call.is_ok(), "no tool_call event within 90 s");
    let started = started.expect("run_started");
    if kind != ProviderKind::OpenAiChat {
        assert_eq!(started["presentation"], "native", "{started}");
    }
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&sleep).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SIGKILL mid-tool: nothing in aibuddy gets to run.
    child.start_kill().unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the killed process is reaped")
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    // The orphaned command is not aibuddy's to finish any more.
    for pid in processes_with(&sleep) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }

    // The next process finds the run interrupted.
    let out = command(&project, &data, &server, &["runs", "--json"])
        .output()
        .await
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(rows[0]["run_id"], run_id.as_str());
    assert_eq!(rows[0]["status"], "interrupted", "{rows}");

    server.push(Turn::text("The command was interrupted; I will not rerun it.").reply(kind));
    let out = command(
        &project,
        &data,
        &server,
        &["run", "--continue", &run_id, "--json"],
    )
    .output()
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ev = events_of(&out.stdout);
    let last = ev.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["status"].as_str()),
        (Some("run_finished"), Some("completed")),
        "{ev:?}"
    );
    assert_eq!(last["run_id"], run_id.as_str());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let body = &reqs[1].raw_body;
    assert!(
        body.contains("call_long") && body.contains("nterrupted"),
        "{body}"
    );
    if kind == ProviderKind::OpenAiResponses {
        // The served function_call item comes back as served, answered by one output.
        let input = reqs[1].body["input"].as_array().unwrap();
        let outputs: Vec<&Value> = input
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .collect();
        assert_eq!(outputs.len(), 1, "{body}");
        assert_eq!(outputs[0]["call_id"], "call_long");
    }
    server.assert_clean();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY) && !err.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_continue_responses() {
    kill_9_then_continue(ProviderKind::OpenAiResponses, "30.817").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_continue_anthropic() {
    kill_9_then_continue(ProviderKind::Anthropic, "30.829").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_continue_chat() {
    kill_9_then_continue(ProviderKind::OpenAiChat, "30.841").await;
}
