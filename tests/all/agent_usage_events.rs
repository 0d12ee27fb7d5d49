//! The context meter's `usage` run events, against the fake provider over real HTTP with real
//! tools and SQLite, on all three routes: one event after each model step carrying the counts the
//! fake provider reported (10 prompt tokens, 20 output tokens per step) and the route's window;
//! an honest "not known" for a model the window table does not know; and, for a continued run,
//! its last step's counts right after `run_started`.

use crate::agent_common;

use std::sync::Arc;

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy_provider::testing::Turn;
use aibuddy_provider::{ApiKey, HttpProvider, ProviderKind, Route};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The fake provider's counts for every step, with `window` and the default threshold.
fn fake_step(window: u64, known: bool) -> RunEvent {
    RunEvent::Usage {
        input_tokens: 10,
        output_tokens: 20,
        context_tokens: 30,
        window_tokens: window,
        window_known: known,
        compaction_threshold: 0.8,
    }
}

fn usages(events: &[RunEvent]) -> Vec<&RunEvent> {
    events
        .iter()
        .filter(|e| matches!(e, RunEvent::Usage { .. }))
        .collect()
}

fn position(events: &[RunEvent], what: impl Fn(&RunEvent) -> bool) -> usize {
    events
        .iter()
        .position(what)
        .unwrap_or_else(|| panic!("{events:?}"))
}

async fn one_event_per_step(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("Reading it.").call("call_u1", "read_file", json!({"path": "notes.txt"})));
    h.push(Turn::text("It says alpha."));
    let (out, ev) = h.run_prompt("what is in notes.txt?").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.steps, 2);
    // The harness's route names a 200,000-token window (a setting, as far as the table goes).
    assert_eq!(usages(&ev), vec![&fake_step(200_000, true); 2], "{ev:?}");
    // After the step's text and before its calls run; the second after the final answer.
    let first = position(&ev, |e| matches!(e, RunEvent::Usage { .. }));
    let text = position(&ev, |e| matches!(e, RunEvent::TextDelta { .. }));
    let call = position(&ev, |e| matches!(e, RunEvent::ToolCall { .. }));
    assert!(text < first && first < call, "{ev:?}");
    let second = ev
        .iter()
        .rposition(|e| matches!(e, RunEvent::Usage { .. }))
        .unwrap();
    let result = position(&ev, |e| matches!(e, RunEvent::ToolResult { .. }));
    assert!(result < second, "{ev:?}");
    assert!(matches!(ev.last(), Some(RunEvent::RunFinished { .. })));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_event_follows_each_step_anthropic() {
    one_event_per_step(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_event_follows_each_step_chat() {
    one_event_per_step(ProviderKind::OpenAiChat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_event_follows_each_step_responses() {
    one_event_per_step(ProviderKind::OpenAiResponses).await;
}

/// `qwen3:8b` is not in the window table and nothing names its window: the event says the
/// window (the Chat kind's 32,768 that compaction assumes) is not known. A custom threshold
/// travels as set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_window_is_said_to_be_unknown() {
    let kind = ProviderKind::OpenAiChat;
    let h = harness(kind, None).await;
    h.push(Turn::text("Hello."));
    let route = Route {
        context_window: 32_768,
        ..h.route()
    };
    let provider = HttpProvider::new(route, ApiKey::new(KEY)).unwrap();
    let mut options = fast_options();
    options.compaction.threshold = 0.6;
    let agent = aibuddy::agent::Agent::new(
        h.app.clone(),
        Arc::new(provider),
        Arc::new(ApproveAll),
        options,
    );
    let events = sink();
    let out = agent
        .run(new_run("hi"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert_eq!(
        usages(&ev),
        vec![&RunEvent::Usage {
            input_tokens: 10,
            output_tokens: 20,
            context_tokens: 30,
            window_tokens: 32_768,
            window_known: false,
            compaction_threshold: 0.6,
        }],
        "{ev:?}"
    );
    h.server.assert_clean();
}

async fn continued_run_starts_from_its_last_step(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("First answer."));
    let (out, _) = h.run_prompt("first").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");

    h.push(Turn::text("Second answer."));
    let (again, ev) = h.continue_run(&out.run_id, "and again").await;
    assert_eq!(again.status, RunStatus::Completed, "{again:?}");
    assert!(matches!(&ev[0], RunEvent::RunStarted { run_id, .. } if *run_id == out.run_id));
    // The stored step's counts before anything streams, then the new step's.
    assert_eq!(ev[1], fake_step(200_000, true), "{ev:?}");
    assert_eq!(usages(&ev).len(), 2, "{ev:?}");
    assert!(position(&ev, |e| matches!(e, RunEvent::TextDelta { .. })) > 1);
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_run_starts_from_its_last_step_anthropic() {
    continued_run_starts_from_its_last_step(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_run_starts_from_its_last_step_responses() {
    continued_run_starts_from_its_last_step(ProviderKind::OpenAiResponses).await;
}
