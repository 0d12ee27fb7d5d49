//! A run that ends for a reason other than "the model finished" says so, over real HTTP in each
//! wire format: an answer cut at its output limit (`max_tokens` / `length` / `incomplete` with
//! `max_output_tokens`), a refusal, and an unknown reason end `completed` with `stop_reason` on
//! the outcome, the `run_finished` event and the stored run. An Anthropic `pause_turn` is
//! continued automatically (the conversation is sent back with the paused content last), a
//! bounded number of times.

use crate::agent_common;

use agent_common::*;
use aibuddy::agent::{RunEvent, RunOutcome, RunStatus};
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::Value;

const KINDS: [ProviderKind; 3] = [
    ProviderKind::Anthropic,
    ProviderKind::OpenAiResponses,
    ProviderKind::OpenAiChat,
];

/// The flag on the outcome, the last event and the stored run (all three must agree).
async fn flag(h: &Harness, out: &RunOutcome, events: &[RunEvent]) -> Option<String> {
    let Some(RunEvent::RunFinished {
        status,
        stop_reason,
        ..
    }) = events.last()
    else {
        panic!("the last event is not run_finished: {:?}", events.last());
    };
    assert_eq!(*status, out.status);
    assert_eq!(*stop_reason, out.stop_reason, "event and outcome differ");
    let stored = h.store().get_run(&out.run_id).await.unwrap().unwrap();
    assert_eq!(
        stored.stop_reason, out.stop_reason,
        "stored run and outcome differ"
    );
    out.stop_reason.clone()
}

/// The word each format uses for "cut at the output limit".
fn limit_word(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "max_tokens",
        ProviderKind::OpenAiResponses => "max_output_tokens",
        ProviderKind::OpenAiChat => "length",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_the_output_limit_is_flagged_in_every_format() {
    for kind in KINDS {
        let h = harness(kind, None).await;
        h.push(Turn::text("The first half of a long ans").stopping(limit_word(kind)));
        let (out, events) = h.run_prompt("write a lot").await;
        assert_eq!(out.status, RunStatus::Completed, "{kind:?}: {out:?}");
        assert_eq!(
            flag(&h, &out, &events).await.as_deref(),
            Some("max_tokens"),
            "{kind:?}"
        );
        // The cut text is kept as the model's answer.
        assert_eq!(text_of(&events), "The first half of a long ans");
        h.server.assert_clean();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_answer_has_no_flag() {
    for kind in KINDS {
        let h = harness(kind, None).await;
        h.push(Turn::text("All done."));
        let (out, events) = h.run_prompt("hi").await;
        assert_eq!(out.status, RunStatus::Completed, "{kind:?}");
        assert_eq!(flag(&h, &out, &events).await, None, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_flagged() {
    let h = harness(ProviderKind::Anthropic, None).await;
    h.push(Turn::text("I can't help with that.").stopping("refusal"));
    let (out, events) = h.run_prompt("do something bad").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(flag(&h, &out, &events).await.as_deref(), Some("refusal"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_reason_is_kept_verbatim_without_control_characters() {
    for (kind, word) in [
        (ProviderKind::Anthropic, "model_context_window_exceeded"),
        (ProviderKind::OpenAiChat, "content_filter"),
        (ProviderKind::OpenAiResponses, "content_filter"),
    ] {
        let h = harness(kind, None).await;
        h.push(Turn::text("Partial").stopping(word));
        let (out, events) = h.run_prompt("hi").await;
        assert_eq!(
            flag(&h, &out, &events).await.as_deref(),
            Some(word),
            "{kind:?}"
        );
    }
    let h = harness(ProviderKind::Anthropic, None).await;
    h.push(Turn::text("x").stopping("odd\u{1b}[2J\nreason"));
    let (out, events) = h.run_prompt("hi").await;
    assert_eq!(
        flag(&h, &out, &events).await.as_deref(),
        Some("odd[2Jreason")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_turn_is_continued_with_the_paused_content_sent_back() {
    let h = harness(ProviderKind::Anthropic, None).await;
    h.server.check_replay(true);
    h.push(Turn::text("Searching the web...").stopping("pause_turn"));
    h.push(Turn::text("Here is what I found."));
    let (out, events) = h.run_prompt("research this").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.steps, 2);
    assert_eq!(flag(&h, &out, &events).await, None);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2, "the paused turn was continued once");
    // The continuation sends the conversation back with the paused assistant content last, and
    // no user turn after it.
    let messages = reqs[1].body["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(
        last["content"][0]["text"],
        Value::from("Searching the web...")
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_stays_paused_ends_flagged_after_five_continuations() {
    let h = harness(ProviderKind::Anthropic, None).await;
    for i in 0..7 {
        h.push(Turn::text(&format!("still working {i}")).stopping("pause_turn"));
    }
    let (out, events) = h.run_prompt("research this").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(flag(&h, &out, &events).await.as_deref(), Some("pause_turn"));
    // The first step and five continuations.
    assert_eq!(h.server.requests().len(), 6);
    h.server.assert_clean();
}

/// The last message of a recorded Anthropic request: its role and its first text.
fn last_message(req: &aibuddy_provider::testing::RecordedRequest) -> (String, String) {
    let messages = req.body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let text = match &last["content"] {
        Value::String(s) => s.clone(),
        c => c[0]["text"].as_str().unwrap_or_default().to_string(),
    };
    (last["role"].as_str().unwrap_or_default().to_string(), text)
}

/// Continuing a run that ended still paused resends the conversation as it is (the paused
/// content last, as the API asks), without the "Continue." a finished answer gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_a_paused_run_resends_the_conversation_as_is() {
    let h = harness(ProviderKind::Anthropic, None).await;
    for i in 0..6 {
        h.push(Turn::text(&format!("still working {i}")).stopping("pause_turn"));
    }
    let (out, events) = h.run_prompt("research this").await;
    assert_eq!(flag(&h, &out, &events).await.as_deref(), Some("pause_turn"));
    h.push(Turn::text("Here is what I found."));
    let (again, _) = h.continue_run(&out.run_id, "").await;
    assert_eq!(again.status, RunStatus::Completed, "{again:?}");
    assert_eq!(again.stop_reason, None);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 7);
    assert_eq!(
        last_message(&reqs[6]),
        ("assistant".to_string(), "still working 5".to_string()),
        "{}",
        reqs[6].raw_body
    );
    h.server.assert_clean();

    // A run whose model finished (here: cut at its limit) is continued with "Continue.".
    let h = harness(ProviderKind::Anthropic, None).await;
    h.push(Turn::text("The first half").stopping("max_tokens"));
    let (out, _) = h.run_prompt("write a lot").await;
    h.push(Turn::text("The second half."));
    let (again, _) = h.continue_run(&out.run_id, "").await;
    assert_eq!(again.status, RunStatus::Completed, "{again:?}");
    let reqs = h.server.requests();
    assert_eq!(
        last_message(&reqs[1]),
        ("user".to_string(), "Continue.".to_string()),
        "{}",
        reqs[1].raw_body
    );
    h.server.assert_clean();
}
