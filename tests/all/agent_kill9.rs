//! `kill -9` of a real `aibuddy run` mid-tool, then `aibuddy run --continue RUN_ID`: the run is
//! found `interrupted`, its dangling call is answered as interrupted, and the continued run sends
//! a valid protocol, which the fake provider checks on every request (pairs, replayed assistant
//! items exactly as served). On each route, the OpenAI Responses native presentation included.
//!
//! The spool of an agent-run command (call id `<run_id>:<provider id>`) is the store's own file:
//! killed mid-command, the next process attaches it as the call's partial output; finished, the
//! store consumes it and nothing is left in `spool/`.

use crate::agent_common;
use crate::support;

use support::cli_run::{self, CliRun};

use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_common::processes_with;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// `aibuddy ARGS` of `run`'s fixture, its output piped, killed if the test drops it.
fn command(run: &CliRun, args: &[&str]) -> tokio::process::Command {
    let mut cmd = run.command(args);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

fn events_of(stdout: &[u8]) -> Vec<Value> {
    cli_run::events_of(&String::from_utf8_lossy(stdout), "")
}

async fn kill_9_then_continue(kind: ProviderKind, marker: &str) {
    let run = CliRun::start(kind).await;
    run.user_settings(json!({
        "providers": cli_run::with_native_search(cli_run::providers(kind, &run.server))
    }));
    let server = &run.server;
    let sleep = format!("sleep {marker}");
    server.push(
        Turn::text("Waiting.")
            .call("call_long", "execute", json!({"command": sleep}))
            .reply(kind),
    );

    let mut child = command(&run, &["run", "wait a long time", "--yes", "--json"])
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
    let out = command(&run, &["runs", "--json"]).output().await.unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(rows[0]["run_id"], run_id.as_str());
    assert_eq!(rows[0]["status"], "interrupted", "{rows}");

    server.push(Turn::text("The command was interrupted; I will not rerun it.").reply(kind));
    let out = command(&run, &["run", "--continue", &run_id, "--json"])
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
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(cli_run::KEY) && !err.contains(cli_run::KEY)
    );
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

/// The files in `<data>/spool` (none when the folder does not exist).
fn spool_files(data: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(data.join("spool"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// `kill -9` while an agent run's command runs: the output it had produced is kept as the call's
/// partial raw output (`aibuddy show CALL_ID` after the restart), from the spool the store knows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_command_keeps_its_partial_output() {
    let d = CliRun::start(ProviderKind::Anthropic).await;
    let server = &d.server;
    let marker = "partial-output-5e1d";
    let sleep = "sleep 30.863";
    server.push(
        Turn::text("Working.")
            .call(
                "call_part",
                "execute",
                json!({"command": format!("echo {marker}; {sleep}")}),
            )
            .reply(ProviderKind::Anthropic),
    );
    let mut child = command(&d, &["run", "print and wait", "--yes", "--json"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let call_id = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["type"] == "tool_call" {
                return v["tool_call_id"].as_str().unwrap().to_string();
            }
        }
        panic!("the run ended without a tool_call event");
    })
    .await
    .expect("no tool_call event within 90 s");
    assert!(
        call_id.ends_with(":call_part"),
        "a run-scoped id: {call_id}"
    );
    // Mid-command, once the output reached a spool file (wherever it is).
    let deadline = Instant::now() + Duration::from_secs(30);
    let spooled = || {
        spool_files(&d.data)
            .iter()
            .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(marker)))
    };
    while processes_with(sleep).is_empty() || !spooled() {
        assert!(
            Instant::now() < deadline,
            "the command never spooled its output"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.start_kill().unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the killed process is reaped")
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    for pid in processes_with(sleep) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }

    // The next process finds the call interrupted, with what it had printed.
    let out = command(&d, &["show", &call_id, "--json"])
        .output()
        .await
        .unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(rec["status"], "interrupted", "{rec}");
    let out = command(&d, &["show", &call_id, "--raw"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{marker}\n"),
        "the partial output of {call_id}"
    );
    let out = command(&d, &["show", &call_id]).output().await.unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("(partial)") && shown.contains(marker),
        "{shown}"
    );
    assert_eq!(spool_files(&d.data), Vec::<std::path::PathBuf>::new());
}

/// A command of an agent run that finishes leaves no spool file behind: the finish consumes the
/// call's own spool (read inline, or moved into `blobs/` when large) instead of copying another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_command_leaves_no_spool_file_behind() {
    let d = CliRun::start(ProviderKind::Anthropic).await;
    let server = &d.server;
    server.push(
        Turn::text("Small, then large.")
            .call(
                "call_small",
                "execute",
                json!({"command": "echo small-output"}),
            )
            .call(
                "call_large",
                "execute",
                json!({"command": "head -c 200000 /dev/zero | tr '\\0' x"}),
            )
            .reply(ProviderKind::Anthropic),
    );
    server.push(Turn::text("Done.").reply(ProviderKind::Anthropic));
    let out = command(&d, &["run", "print things", "--yes", "--json"])
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ev = events_of(&out.stdout);
    let results: Vec<&Value> = ev.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{ev:?}");
    let statuses: Vec<&Value> = results.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, [&json!("ok"), &json!("ok")]);
    assert_eq!(spool_files(&d.data), Vec::<std::path::PathBuf>::new());
    // The raw outputs are whole: inline for the small one, a blob for the large one.
    let id = |provider: &str| {
        results
            .iter()
            .map(|r| r["tool_call_id"].as_str().unwrap().to_string())
            .find(|id| id.ends_with(provider))
            .unwrap()
    };
    let raw = |id: String| {
        let d = &d;
        async move {
            command(d, &["show", &id, "--raw"])
                .output()
                .await
                .unwrap()
                .stdout
        }
    };
    assert_eq!(raw(id(":call_small")).await, b"small-output\n");
    assert_eq!(raw(id(":call_large")).await, vec![b'x'; 200_000]);
    server.assert_clean();
}
