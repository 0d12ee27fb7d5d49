//! Call ids as compatible servers send them, through a whole run over real HTTP: ids numbered
//! per response (`"0"` in every step of one run, as some servers do), the same id twice in one
//! message, and ids with characters no stored id may hold. The run completes, every call is
//! stored and answered, and the model gets back the ids of the message it was replayed.

mod agent_common;

use std::sync::Arc;

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{Chunk, Reply, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

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
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            RunStart {
                prompt: "read the files".into(),
                ..RunStart::default()
            },
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ok: Vec<String> = events
        .events()
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
