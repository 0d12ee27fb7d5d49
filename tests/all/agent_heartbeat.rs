//! The idle watchdog and tool heartbeats: a command that runs longer than the idle timeout is
//! kept alive by `execute`'s heartbeats (the person's setting `exec.heartbeat_secs`), and the same
//! command without heartbeats (interval longer than the timeout) is stopped by the watchdog and
//! answered to the model, which goes on. Real commands, real HTTP, real SQLite; on the Anthropic
//! and Responses routes.

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Idle timeout of these runs: three heartbeat intervals, so a late heartbeat on a loaded machine
/// does not expire it, and well under the command's length.
const IDLE: Duration = Duration::from_secs(3);

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

fn result_of(events: &[RunEvent], id: &str) -> Option<CallStatus> {
    events.iter().find_map(|e| match e {
        RunEvent::ToolResult {
            tool_call_id,
            status,
            ..
        } if tool_call_id.ends_with(&format!(":{id}")) => Some(*status),
        _ => None,
    })
}

async fn heartbeats_keep_the_step_alive(kind: ProviderKind) {
    let settings = json!({"exec": {"heartbeat_secs": 1}});
    let h = harness_with_settings(kind, None, Some(settings)).await;
    // Silent for twice the idle timeout: only heartbeats re-arm the watchdog.
    let command = "sleep 6.2 && echo finished-quietly";
    h.push(Turn::text("Waiting.").call("call_hb", "execute", json!({"command": command})));
    h.push(Turn::text("It finished."));
    let mut opts = fast_options();
    opts.idle_timeout = IDLE;
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), opts)
        .run(
            start("run the slow command"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    let ev = events.events();
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {ev:?}");
    assert_eq!(result_of(&ev, "call_hb"), Some(CallStatus::Ok), "{ev:?}");
    assert!(
        !ev.iter().any(|e| matches!(e, RunEvent::Retry { .. })),
        "no retry: {ev:?}"
    );
    let beats = ev
        .iter()
        .filter(|e| matches!(e, RunEvent::Heartbeat { tool_call_id } if tool_call_id.ends_with(":call_hb")))
        .count();
    assert!(
        beats >= 3,
        "a 6 s command with 1 s heartbeats: {beats} heartbeats"
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2, "one request per step, none repeated");
    assert!(
        reqs[1].raw_body.contains("finished-quietly"),
        "{}",
        reqs[1].raw_body
    );
    assert!(
        !reqs[1].raw_body.to_lowercase().contains("heartbeat"),
        "heartbeats never reach the model: {}",
        reqs[1].raw_body
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_the_step_alive_anthropic() {
    heartbeats_keep_the_step_alive(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_the_step_alive_responses() {
    heartbeats_keep_the_step_alive(ProviderKind::OpenAiResponses).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_the_step_alive_chat() {
    heartbeats_keep_the_step_alive(ProviderKind::OpenAiChat).await;
}

/// Default heartbeats (30 s) with a 3 s idle timeout: the silent command is stopped by the
/// watchdog (no child left), the model is told, and the run goes on.
async fn silence_past_the_idle_timeout_is_stopped(kind: ProviderKind, marker: &str) {
    let h = harness(kind, None).await;
    let command = format!("sleep {marker}");
    h.push(Turn::text("Waiting.").call("call_quiet", "execute", json!({"command": command})));
    h.push(Turn::text("It went quiet, so it was stopped."));
    let mut opts = fast_options();
    opts.idle_timeout = IDLE;
    let events = sink();
    let started = Instant::now();
    let out = h
        .agent(Arc::new(ApproveAll), opts)
        .run(
            start("run the silent command"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    let ev = events.events();
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {ev:?}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the 30 s command was stopped, not waited for"
    );
    let status = result_of(&ev, "call_quiet");
    assert!(
        matches!(status, Some(CallStatus::Cancelled | CallStatus::Error)),
        "{status:?} {ev:?}"
    );
    assert!(processes_with(&command).is_empty(), "no child left");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].raw_body.contains("call_quiet"),
        "{}",
        reqs[1].raw_body
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_past_the_idle_timeout_is_stopped_anthropic() {
    silence_past_the_idle_timeout_is_stopped(ProviderKind::Anthropic, "30.163").await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_past_the_idle_timeout_is_stopped_responses() {
    silence_past_the_idle_timeout_is_stopped(ProviderKind::OpenAiResponses, "30.257").await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_past_the_idle_timeout_is_stopped_chat() {
    silence_past_the_idle_timeout_is_stopped(ProviderKind::OpenAiChat, "30.311").await;
}
