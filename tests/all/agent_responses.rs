//! The run loop on the OpenAI Responses route beyond text and native search (`agent_loop.rs`):
//! one tool, parallel tools, a rejected confirm (the file unchanged on disk), 429 then success, a
//! stalled stream retried, stop mid-tool (no child left), the activeTools presentation forced on
//! Responses (`tool_search: "active_tools"`), and an interrupted run continued. Real HTTP, real
//! tools, files and SQLite; every test ends with the fake server's protocol check.

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::{ApproveAll, RejectAll};
use aibuddy::events::CallStatus;
use aibuddy_provider::testing::{RecordedRequest, Reply, Turn};
use aibuddy_provider::{Presentation, ProviderKind};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const KIND: ProviderKind = ProviderKind::OpenAiResponses;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

/// The `input` items of a recorded request with the given `type`.
fn items<'a>(req: &'a RecordedRequest, ty: &str) -> Vec<&'a Value> {
    req.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == ty)
        .collect()
}

/// `(call_id, output)` of every `function_call_output` item.
fn outputs(req: &RecordedRequest) -> Vec<(String, String)> {
    items(req, "function_call_output")
        .into_iter()
        .map(|i| {
            (
                i["call_id"].as_str().unwrap_or_default().to_string(),
                i["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tool_responses() {
    let h = harness(KIND, None).await;
    h.push(Turn::text("Reading it.").call("call_r1", "read_file", json!({"path": "notes.txt"})));
    h.push(Turn::text("It says alpha."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            start("what is in notes.txt?"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.steps, 2);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    // The assistant's items come back as received (the function_call with its call_id), then
    // exactly one output for it carrying the model projection.
    let calls = items(&reqs[1], "function_call");
    assert_eq!(calls.len(), 1, "{}", reqs[1].raw_body);
    assert_eq!(calls[0]["call_id"], "call_r1");
    let outs = outputs(&reqs[1]);
    assert_eq!(outs.len(), 1, "{outs:?}");
    assert_eq!(outs[0].0, "call_r1");
    assert!(outs[0].1.contains("alpha-content"), "{outs:?}");
    assert_eq!(text_of(&events.events()), "Reading it.It says alpha.");
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant"]);
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tools_responses() {
    let h = harness(KIND, None).await;
    h.push(
        Turn::text("Both.")
            .call("call_p1", "read_file", json!({"path": "notes.txt"}))
            .call("call_p2", "read_file", json!({"path": "b.txt"})),
    );
    h.push(Turn::text("alpha and beta."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("read both"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    let pos = |id: &str, result: bool| {
        ev.iter()
            .position(|e| match e {
                RunEvent::ToolCall { tool_call_id, .. } => {
                    !result && tool_call_id.ends_with(&format!(":{id}"))
                }
                RunEvent::ToolResult { tool_call_id, .. } => {
                    result && tool_call_id.ends_with(&format!(":{id}"))
                }
                _ => false,
            })
            .unwrap()
    };
    assert!(
        pos("call_p2", false) < pos("call_p1", true),
        "read-only calls of one turn start together: {ev:?}"
    );
    let outs = outputs(&h.server.requests()[1]);
    let ids: Vec<&str> = outs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        vec!["call_p1", "call_p2"],
        "one output each, in call order"
    );
    assert!(outs[0].1.contains("alpha-content") && outs[1].1.contains("beta-content"));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_rejected_responses() {
    let h = harness(KIND, None).await;
    h.push(Turn::text("Overwriting.").call(
        "call_w1",
        "write_file",
        json!({"path": "notes.txt", "content": "overwritten"}),
    ));
    h.push(Turn::text("The person said no."));
    let events = sink();
    let out = h
        .agent(Arc::new(RejectAll("not now".into())), fast_options())
        .run(
            start("overwrite notes.txt"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(h.root.join("notes.txt")).unwrap(),
        "alpha-content\n",
        "a rejected write leaves the file unchanged on disk"
    );
    assert!(events.events().iter().any(|e| matches!(e,
        RunEvent::ToolResult { tool_call_id, status: CallStatus::Rejected, .. } if tool_call_id.ends_with(":call_w1"))));
    let outs = outputs(&h.server.requests()[1]);
    assert_eq!(outs.len(), 1, "{outs:?}");
    assert_eq!(outs[0].0, "call_w1");
    assert!(outs[0].1.contains("did not approve"), "{outs:?}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_success_responses() {
    let h = harness(KIND, None).await;
    h.server.push(Reply::rate_limited(0));
    h.push(Turn::text("Made it."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("hi"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        events.events().iter().any(
            |e| matches!(e, RunEvent::Retry { attempt: 1, reason, .. } if reason.contains("429"))
        ),
        "{:?}",
        events.events()
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body, reqs[1].body,
        "the retry sends the same request"
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_is_retried_responses() {
    let h = harness(KIND, None).await;
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
    assert!(
        events.events().iter().any(
            |e| matches!(e, RunEvent::Retry { reason, .. } if reason.contains("idle timeout"))
        ),
        "{:?}",
        events.events()
    );
    assert_eq!(h.server.requests().len(), 2);
    let deadline = Instant::now() + Duration::from_secs(10);
    while h.server.disconnects() == 0 {
        assert!(
            Instant::now() < deadline,
            "the stalled stream was never closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert!(
        conv.messages
            .last()
            .unwrap()
            .content
            .contains("Second try worked.")
    );
    assert!(
        !conv
            .messages
            .iter()
            .any(|m| m.content.contains("never finished"))
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_tool_responses() {
    let h = harness(KIND, None).await;
    let command = "sleep 30.871";
    h.push(Turn::text("Waiting.").call("call_sleep", "execute", json!({"command": command})));
    let events = sink();
    let agent = Arc::new(h.agent(Arc::new(ApproveAll), fast_options()));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel, events) = (agent.clone(), cancel.clone(), events.clone());
        tokio::spawn(async move { agent.run(start("wait"), cancel, events).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(command).is_empty() {
        assert!(
            Instant::now() < deadline,
            "never started: {:?}",
            events.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(command).is_empty() {
        assert!(
            Instant::now() < deadline,
            "a child is left: {:?}",
            processes_with(command)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Continuing sends the cancelled call's output: the protocol stays valid.
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
    let outs = outputs(&h.server.requests()[1]);
    assert_eq!(outs.len(), 1, "{outs:?}");
    assert!(
        outs[0].0 == "call_sleep" && outs[0].1.contains("Cancelled"),
        "{outs:?}"
    );
    h.server.assert_clean();
}

/// `tool_search: "active_tools"` on Responses: no `tool_search` tool type and no `defer_loading`;
/// our `tool_search` is an ordinary function that activates the found tool for the next steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_tools_presentation_on_responses() {
    let h = harness(KIND, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__echo").await;
    h.push(Turn::text("Searching.").call(
        "call_s1",
        "tool_search",
        json!({"query": "select:mcp__fx__echo"}),
    ));
    h.push(Turn::text("Echoing.").call("call_e1", "mcp__fx__echo", json!({"message": "ping-77"})));
    h.push(Turn::text("Done."));
    let events = sink();
    let out = h
        .agent_presenting(
            Arc::new(ApproveAll),
            fast_options(),
            Presentation::ActiveTools,
        )
        .run(
            start("echo ping-77"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.status,
        RunStatus::Completed,
        "{out:?} {:?}",
        events.events()
    );
    let conv = h.store().get_run(&out.run_id).await.unwrap().unwrap();
    assert_eq!(conv.presentation.as_deref(), Some("active_tools"));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        let tools = r.body["tools"].as_array().unwrap();
        assert!(
            tools
                .iter()
                .all(|t| t["type"] == "function" && t.get("defer_loading").is_none()),
            "activeTools sends plain functions only: {}",
            r.body["tools"]
        );
        assert!(!r.raw_body.contains("tool_search_output"), "{}", r.raw_body);
    }
    let first = sent_tools(&reqs[0]);
    assert!(first.iter().any(|(n, _)| n == "tool_search"), "{first:?}");
    assert!(
        !first.iter().any(|(n, _)| n == "mcp__fx__echo"),
        "{first:?}"
    );
    let second = sent_tools(&reqs[1]);
    assert!(
        second.iter().any(|(n, _)| n == "mcp__fx__echo"),
        "{second:?}"
    );
    let outs = outputs(&reqs[1]);
    assert!(
        outs[0].0 == "call_s1" && outs[0].1.contains("mcp__fx__echo"),
        "{outs:?}"
    );
    assert!(
        outputs(&reqs[2])
            .iter()
            .any(|(id, o)| id == "call_e1" && o.contains("ping-77")),
        "{}",
        reqs[2].raw_body
    );
    h.server.assert_clean();
}

/// The loop is dropped mid-tool (as when the process dies), the project reopened: the run is
/// `interrupted`, and continuing it answers the dangling call in a valid Responses protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_then_continued_responses() {
    let mut h = harness(KIND, None).await;
    let command = "sleep 30.947";
    h.push(Turn::text("Waiting.").call("call_long", "execute", json!({"command": command})));
    let agent = h.agent(Arc::new(ApproveAll), fast_options());
    let task = tokio::spawn(async move {
        agent
            .run(start("wait a long time"), CancellationToken::new(), sink())
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(command).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    let run_id = h.store().list_runs(10, None).await.unwrap()[0]
        .run_id
        .clone();
    let opts = AppOptions {
        project: h.root.clone(),
        data_dir: h.data.clone(),
    };
    let old = std::mem::replace(&mut h.app, Arc::new(App::open(opts.clone()).await.unwrap()));
    drop(old);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let app = App::open(opts.clone()).await.unwrap();
        let store = app.persistence.as_ref().unwrap().store.clone();
        let status = store.get_run(&run_id).await.unwrap().unwrap().status;
        if status == Some(RunStatus::Interrupted) {
            h.app = Arc::new(app);
            break;
        }
        assert!(Instant::now() < deadline, "never interrupted: {status:?}");
        drop(app);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    h.push(Turn::text("It was interrupted; not rerunning it."));
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            RunStart {
                continue_run: Some(run_id.clone()),
                ..RunStart::default()
            },
            CancellationToken::new(),
            sink(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    let outs = outputs(&reqs[1]);
    assert_eq!(outs.len(), 1, "{}", reqs[1].raw_body);
    assert!(
        outs[0].0 == "call_long" && outs[0].1.contains("nterrupted"),
        "{outs:?}"
    );
    assert!(
        h.store()
            .conversation(&run_id)
            .await
            .unwrap()
            .dangling_calls()
            .is_empty()
    );
    h.server.assert_clean();
}
