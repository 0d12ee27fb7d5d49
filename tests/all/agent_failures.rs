//! The run loop's failure paths over real HTTP: 429 then success, a stalled stream (watchdog,
//! retried), a fatal 4xx, stop mid-stream (partial text kept) and mid-tool (no child left), and
//! `continue_run` after a cancelled and after an interrupted run (dangling calls answered).
//! Every test ends with the fake server's protocol check (`assert_clean`).

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy::contract::Stage;
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{Reply, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

async fn rate_limited_then_success(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.server.push(Reply::rate_limited(0));
    h.push(Turn::text("Made it."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("hi"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(
        ev.iter().any(
            |e| matches!(e, RunEvent::Retry { attempt: 1, reason, .. } if reason.contains("429"))
        ),
        "{ev:?}"
    );
    assert_eq!(h.server.requests().len(), 2);
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_success_anthropic() {
    rate_limited_then_success(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_success_chat() {
    rate_limited_then_success(ProviderKind::OpenAiChat).await;
}

async fn stalled_stream_is_retried(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("never finished").stalling());
    h.push(Turn::text("Second try worked."));
    let mut opts = fast_options();
    opts.idle_timeout = Duration::from_millis(700);
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), opts)
        .run(start("hi"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(
        ev.iter().any(
            |e| matches!(e, RunEvent::Retry { reason, .. } if reason.contains("idle timeout"))
        ),
        "{ev:?}"
    );
    assert_eq!(h.server.requests().len(), 2);
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let last = conv.messages.last().unwrap();
    assert!(last.content.contains("Second try worked."));
    assert!(
        !conv
            .messages
            .iter()
            .any(|m| m.content.contains("never finished"))
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_is_retried_anthropic() {
    stalled_stream_is_retried(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_is_retried_chat() {
    stalled_stream_is_retried(ProviderKind::OpenAiChat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_4xx_ends_the_run_with_the_providers_message_and_stage() {
    let h = harness(ProviderKind::Anthropic, None).await;
    h.server.push(Reply::error(
        400,
        "invalid_request_error",
        "max_tokens is too large",
    ));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("hi"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Error);
    assert_eq!(out.stage, Some(Stage::Parameters));
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("max_tokens is too large"),
        "{out:?}"
    );
    assert_eq!(h.server.requests().len(), 1, "not retried");
    let run = h.store().get_run(&out.run_id).await.unwrap().unwrap();
    assert_eq!(run.status, Some(RunStatus::Error));
    assert_eq!(run.stage, Some(aibuddy::contract::Stage::Parameters));
    h.server.assert_clean();
}

async fn stop_mid_stream(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("partial words then more").stalling());
    h.push(Turn::text("Resumed fine."));
    let events = sink();
    let agent = Arc::new(h.agent(Arc::new(ApproveAll), fast_options()));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel, events) = (agent.clone(), cancel.clone(), events.clone());
        tokio::spawn(async move { agent.run(start("talk"), cancel, events).await })
    };
    wait_event(&events, "a text delta", |e| {
        matches!(e, RunEvent::TextDelta { .. })
    })
    .await;
    let stopped = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert!(stopped.elapsed() < Duration::from_secs(5), "stop is prompt");
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let last = conv.messages.last().unwrap();
    let partial = text_of(&events.events());
    assert!(
        !partial.is_empty() && last.content.contains(&partial),
        "partial text kept: {last:?}"
    );
    // Continue the cancelled run: the partial answer is replayed, the protocol stays valid.
    h.server.check_replay(false); // the partial answer was never served complete
    let out2 = agent
        .run(
            RunStart {
                prompt: "go on".into(),
                continue_run: Some(out.run_id.clone()),
                ..RunStart::default()
            },
            CancellationToken::new(),
            sink(),
        )
        .await
        .unwrap();
    assert_eq!(out2.status, RunStatus::Completed, "{out2:?}");
    assert_eq!(out2.run_id, out.run_id);
    let reqs = h.server.requests();
    let body = &reqs.last().unwrap().raw_body;
    assert!(body.contains(&partial) && body.contains("go on"), "{body}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_stream_anthropic() {
    stop_mid_stream(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_stream_chat() {
    stop_mid_stream(ProviderKind::OpenAiChat).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_stream_responses() {
    stop_mid_stream(ProviderKind::OpenAiResponses).await;
}

async fn stop_mid_tool(kind: ProviderKind, marker: &str) {
    let h = harness(kind, None).await;
    let command = format!("sleep {marker}");
    h.push(Turn::text("Waiting.").call("call_sleep", "execute", json!({"command": command})));
    let events = sink();
    let agent = Arc::new(h.agent(Arc::new(ApproveAll), fast_options()));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel, events) = (agent.clone(), cancel.clone(), events.clone());
        tokio::spawn(async move { agent.run(start("wait"), cancel, events).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&command).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the command never started: {:?}",
            events.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&command).is_empty() {
        assert!(
            Instant::now() < deadline,
            "a child is left: {:?}",
            processes_with(&command)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(events.events().iter().any(|e| matches!(e,
        RunEvent::ToolResult { tool_call_id, status: CallStatus::Cancelled, .. } if tool_call_id.ends_with(":call_sleep"))));
    // The cancelled call is answered in storage: the run can continue with a valid protocol.
    h.push(Turn::text("Stopped as asked."));
    let out2 = agent
        .run(
            RunStart {
                prompt: "why did it stop?".into(),
                continue_run: Some(out.run_id.clone()),
                ..RunStart::default()
            },
            CancellationToken::new(),
            sink(),
        )
        .await
        .unwrap();
    assert_eq!(out2.status, RunStatus::Completed, "{out2:?}");
    assert!(h.server.requests()[1].raw_body.contains("Cancelled"));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_tool_anthropic() {
    stop_mid_tool(ProviderKind::Anthropic, "30.417").await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_tool_chat() {
    stop_mid_tool(ProviderKind::OpenAiChat, "30.523").await;
}

/// Stop while a confirmation is pending: the dialog is answered as rejected, nothing is written,
/// and the run ends `cancelled` with the call answered in storage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_a_confirmation_is_pending() {
    let h = harness(ProviderKind::Anthropic, None).await;
    h.push(Turn::text("Writing.").call(
        "call_pending",
        "write_file",
        json!({"path": "pending.txt", "content": "no"}),
    ));
    let broker = aibuddy::confirm::PendingBroker::new();
    let events = sink();
    let agent = Arc::new(h.agent(Arc::new(broker.clone()), fast_options()));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel, events) = (agent.clone(), cancel.clone(), events.clone());
        tokio::spawn(async move { agent.run(start("write it"), cancel, events).await })
    };
    tokio::time::timeout(Duration::from_secs(30), broker.wait_pending())
        .await
        .expect("a confirmation is asked");
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(broker.pending().is_empty());
    assert!(!h.root.join("pending.txt").exists());
    let result = events.events().into_iter().find_map(|e| match e {
        RunEvent::ToolResult {
            tool_call_id,
            status,
            ..
        } if tool_call_id.ends_with(":call_pending") => Some(status),
        _ => None,
    });
    assert!(
        matches!(result, Some(CallStatus::Rejected | CallStatus::Cancelled)),
        "{result:?}"
    );
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert!(conv.dangling_calls().is_empty());
    h.server.assert_clean();
}

/// The desktop answers as soon as it sees `confirm_request`: the event is emitted only once the
/// broker holds the request, so an answer given inside the event handler itself is accepted (no
/// wait, no retry), and the approved write happens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_given_on_the_confirm_event_is_accepted() {
    use aibuddy::agent::RunEventSink;
    use aibuddy::confirm::{Decision, PendingBroker};
    use std::sync::Mutex;

    /// Answers every confirm request from inside `emit`, recording whether it was accepted.
    struct AnswersAtOnce {
        broker: PendingBroker,
        accepted: Mutex<Vec<bool>>,
    }
    impl RunEventSink for AnswersAtOnce {
        fn emit(&self, event: RunEvent) {
            if let RunEvent::ConfirmRequest {
                tool_call_id,
                request,
            } = event
            {
                let ok = self.broker.answer(
                    &tool_call_id,
                    Decision::Approved {
                        digest: request.digest,
                    },
                );
                self.accepted.lock().unwrap().push(ok);
            }
        }
    }

    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAiResponses] {
        let h = harness(kind, None).await;
        h.push(Turn::text("Writing.").call(
            "call_now",
            "write_file",
            json!({"path": "now.txt", "content": "at once"}),
        ));
        h.push(Turn::text("Written."));
        let broker = PendingBroker::new();
        let sink = Arc::new(AnswersAtOnce {
            broker: broker.clone(),
            accepted: Mutex::new(Vec::new()),
        });
        let agent = h.agent(Arc::new(broker), fast_options());
        let run = agent.run(start("write it"), CancellationToken::new(), sink.clone());
        // An answer that was refused would leave the run waiting: bounded generously.
        let out = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the run waits for an answer it refused"))
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{kind:?} {out:?}");
        assert_eq!(*sink.accepted.lock().unwrap(), vec![true], "{kind:?}");
        assert_eq!(
            std::fs::read_to_string(h.root.join("now.txt")).unwrap(),
            "at once"
        );
        h.server.assert_clean();
    }
}

/// A call with no usable name (empty, blank, control characters only) does not fail the run: it
/// gets an error result the model can read, under its own id, like an unknown name, and the next
/// request answers it (the fake server checks the pairing in each format).
async fn a_call_without_a_name_is_answered_and_the_run_goes_on(kind: ProviderKind) {
    let nameless = ["", "  \t", "\u{1b}\u{7}"];
    let h = harness(kind, None).await;
    let mut turn = Turn::text("Calling.");
    for (i, name) in nameless.iter().enumerate() {
        turn = turn.call(&format!("call_nn{i}"), name, json!({}));
    }
    h.push(turn.call("call_nr", "read_file", json!({"path": "notes.txt"})));
    h.push(Turn::text("Done."));
    let (out, ev) = h.run_prompt("go").await;
    assert_eq!(out.status, RunStatus::Completed, "{kind:?} {out:?}");
    assert_eq!(out.steps, 2, "{kind:?}");
    for i in 0..nameless.len() {
        let id = format!(":call_nn{i}");
        let result = ev.iter().find_map(|e| match e {
            RunEvent::ToolResult {
                tool_call_id,
                status,
                stage,
                model,
                ..
            } if tool_call_id.ends_with(&id) => Some((*status, *stage, model.clone())),
            _ => None,
        });
        let (status, stage, model) =
            result.unwrap_or_else(|| panic!("{kind:?}: no result event for {id}: {ev:?}"));
        assert_eq!(
            (status, stage),
            (CallStatus::Error, Some(Stage::Discovery)),
            "{kind:?}"
        );
        assert!(model.contains("had no name"), "{kind:?}: {model}");
        assert!(model.contains("read_file"), "lists the tools: {model}");
        // Stored under its call id.
        let stored = h
            .store()
            .get_call(&format!("{}{id}", out.run_id))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{kind:?}: {id} not stored"));
        assert_eq!(
            stored.stage,
            Some(aibuddy::contract::Stage::Discovery),
            "{kind:?}"
        );
    }
    // The named call beside them ran, and the next request carries every answer.
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2, "{kind:?}");
    assert!(reqs[1].raw_body.contains("alpha-content"), "{kind:?}");
    assert_eq!(
        reqs[1].raw_body.matches("had no name").count(),
        nameless.len(),
        "{kind:?}: {}",
        reqs[1].raw_body
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_a_name_is_answered_anthropic() {
    a_call_without_a_name_is_answered_and_the_run_goes_on(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_a_name_is_answered_chat() {
    a_call_without_a_name_is_answered_and_the_run_goes_on(ProviderKind::OpenAiChat).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_a_name_is_answered_responses() {
    a_call_without_a_name_is_answered_and_the_run_goes_on(ProviderKind::OpenAiResponses).await;
}

/// A provider (or proxy) that streams a token every so often and never ends: the step's
/// wall-clock cap ends it (not retried), the run ends `error` at Execution with a reason, and the
/// text streamed so far is kept in the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_trickle_ends_at_the_step_time_limit_with_its_text_kept() {
    use aibuddy_provider::testing::Chunk;
    let h = harness(ProviderKind::Anthropic, None).await;
    let mut chunks = vec![
        Chunk::event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_t", "type": "message",
                "role": "assistant", "content": [], "model": "fake", "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        Chunk::event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    // Each token well within the idle timeout; together far past the step limit.
    for _ in 0..600 {
        chunks.push(Chunk::event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "tok "}}),
        ));
        chunks.push(Chunk::Sleep(Duration::from_millis(100)));
    }
    h.server.push(Reply::Stream {
        chunks,
        served: None,
    });
    let mut opts = fast_options();
    opts.step_timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let (out, events) = h.run_with(new_run("tell me"), opts).await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cap ended it: {out:?} {events:?}"
    );
    assert_eq!(out.status, RunStatus::Error, "{out:?}");
    assert_eq!(out.stage, Some(Stage::Execution), "{out:?}");
    let reason = out.error.clone().unwrap_or_default();
    assert!(reason.contains("step time limit"), "{reason}");
    assert_eq!(h.server.requests().len(), 1, "not retried");
    // What was streamed is kept: shown live, and stored as the model's (partial) answer.
    let streamed = text_of(&events);
    assert!(streamed.starts_with("tok tok "), "{streamed:?}");
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, vec!["user", "assistant"]);
    assert!(
        conv.messages[1].content.contains(streamed.trim_end()),
        "{}",
        conv.messages[1].content
    );
    let run = h.store().get_run(&out.run_id).await.unwrap().unwrap();
    assert_eq!(run.status, Some(RunStatus::Error));
    assert_eq!(run.stage, Some(aibuddy::contract::Stage::Execution));
    assert!(
        run.error_message
            .as_deref()
            .is_some_and(|m| m.contains("step time limit")),
        "{run:?}"
    );
    h.server.assert_clean();
}
