//! What compatible servers send, through a whole run over real HTTP.
//!
//! Call ids: numbered per response (`"0"` in every step of one run, as some servers do), the same
//! id twice in one message, and ids with characters no stored id may hold. The run completes,
//! every call is stored and answered, and the model gets back the ids of the message it was
//! replayed. Keep-alives: a stream that sends nothing but pings is bounded and retried.

use crate::agent_common;

use std::time::Duration;

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStatus};
use aibuddy::contract::Stage;
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{Chunk, Reply, Turn};
use serde_json::{Value, json};

fn calls_reply(calls: &[(&str, &str)]) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        Chunk::data(
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string(),
        )
    };
    let mut chunks: Vec<Chunk> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, path))| {
            chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]}),
                Value::Null,
            )
        })
        .collect();
    chunks.push(chunk(json!({}), json!("tool_calls")));
    chunks.push(Chunk::data("[DONE]"));
    Reply::Stream {
        chunks,
        served: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_ids_reused_within_a_run_are_made_unique() {
    let kind = ProviderKind::OpenAiChat;
    let h = harness(kind, None).await;
    h.server.push(calls_reply(&[("0", "notes.txt")]));
    h.server
        .push(calls_reply(&[("0", "b.txt"), ("0", "notes.txt")]));
    h.server.push(calls_reply(&[("bad id/..", "b.txt")]));
    h.push(Turn::text("Done."));
    let (out, events) = h.run_prompt("read the files").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ok: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolResult {
                tool_call_id,
                status: CallStatus::Ok,
                ..
            } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let run = &out.run_id;
    assert_eq!(
        ok,
        vec![
            format!("{run}:0"),
            format!("{run}:0-2"),
            format!("{run}:0-3"),
            format!("{run}:bad_id___-2"),
        ]
    );
    // The last request replays every call with the id its result answers.
    let reqs = h.server.requests();
    let last = &reqs[reqs.len() - 1].body;
    let msgs = last["messages"].as_array().unwrap();
    let call_ids: Vec<&str> = msgs
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    let result_ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(call_ids, vec!["0", "0-2", "0-3", "bad_id___-2"]);
    assert_eq!(result_ids, call_ids);
    h.server.assert_clean();
}

/// A stream of nothing but pings re-arms the idle timer forever: the keep-alive bound ends the
/// attempt, it is retried, and the run completes with the retry's answer.
async fn pings_forever_are_bounded(kind: ProviderKind) {
    let h = harness(kind, None).await;
    let ping = match kind {
        ProviderKind::Anthropic => Chunk::event("ping", json!({"type": "ping"})),
        _ => Chunk::Comment("keep-alive".into()),
    };
    let mut chunks = vec![match kind {
        ProviderKind::Anthropic => Chunk::event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 1}}}),
        ),
        _ => Chunk::data(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}).to_string(),
        ),
    }];
    // Two minutes of pings, one every 20 ms.
    for _ in 0..6000 {
        chunks.push(ping.clone());
        chunks.push(Chunk::Sleep(Duration::from_millis(20)));
    }
    h.server.push(Reply::Stream {
        chunks,
        served: None,
    });
    h.push(Turn::text("Answered after the retry."));
    let mut opts = fast_options();
    opts.keepalive_timeout = Duration::from_millis(600);
    let run = h.run_with(new_run("hi"), opts);
    let (out, events) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("a stream of pings must not hold the run");
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Retry { reason, .. } if reason.contains("keep-alive"))),
        "{events:?}"
    );
    assert_eq!(text_of(&events), "Answered after the retry.");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_forever_are_bounded_anthropic() {
    pings_forever_are_bounded(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_forever_are_bounded_chat() {
    pings_forever_are_bounded(ProviderKind::OpenAiChat).await;
}

/// Tool-call arguments cut off mid-JSON (`finish_reason: "length"`, many small deltas): the call
/// is answered with a Parameters error, nothing runs, the run goes on to the model's next answer,
/// and the next request carries that error as the call's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_cut_mid_json_are_a_parameters_error_and_the_run_goes_on() {
    let kind = ProviderKind::OpenAiChat;
    let h = harness(kind, None).await;
    let args = "{\"path\": \"notes.txt\", \"offset\": 1";
    let mut chunks = vec![Chunk::data(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_cut", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}, "finish_reason": null}]}).to_string(),
    )];
    for piece in args.as_bytes().chunks(3) {
        let piece = String::from_utf8_lossy(piece).into_owned();
        chunks.push(Chunk::data(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, "finish_reason": null}]}).to_string(),
        ));
    }
    chunks.push(Chunk::data(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string(),
    ));
    chunks.push(Chunk::data("[DONE]"));
    h.server.push(Reply::Stream {
        chunks,
        served: None,
    });
    h.push(Turn::text("I will retry with complete arguments."));
    let (out, events) = h.run_prompt("read notes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let stored = format!("{}:call_cut", out.run_id);
    assert!(
        events.iter().any(|e| matches!(e,
            RunEvent::ToolResult { tool_call_id, status: CallStatus::Error, stage: Some(stage), .. }
                if *tool_call_id == stored && *stage == Stage::Parameters)),
        "{events:?}"
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    let tool_msg = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool_msg["tool_call_id"], "call_cut");
    assert!(
        !tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("alpha-content")
    );
    h.server.assert_clean();
}
