//! The run loop against the fake provider over real HTTP, with real tools, files and SQLite:
//! text only, one tool, parallel read-only tools, a rejected confirm, and a deferred tool found
//! with `tool_search` then called (native on Anthropic and Responses, activeTools on Chat).
//! Every test ends with the fake server's protocol check (`assert_clean`).

use crate::agent_common;

use std::sync::Arc;

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::confirm::{ApproveAll, RejectAll};
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

async fn text_only(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("Hello from the model").with_pings());
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("say hello"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.steps, 1);
    assert!(out.usage.output_tokens > 0, "{out:?}");
    let ev = events.events();
    assert!(matches!(&ev[0], RunEvent::RunStarted { provider, .. } if provider == "fake"));
    assert_eq!(text_of(&ev), "Hello from the model");
    assert!(matches!(
        ev.last(),
        Some(RunEvent::RunFinished {
            status: RunStatus::Completed,
            ..
        })
    ));
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.run.status, Some(RunStatus::Completed));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        !reqs[0].raw_body.contains(KEY),
        "the key never reaches a body"
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_only_anthropic() {
    text_only(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_only_chat() {
    text_only(ProviderKind::OpenAiChat).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_only_responses() {
    text_only(ProviderKind::OpenAiResponses).await;
}

async fn one_tool(kind: ProviderKind) {
    let h = harness(kind, None).await;
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
    let ev = events.events();
    assert!(
        ev.iter()
            .any(|e| matches!(e, RunEvent::ToolCall { tool, .. } if tool == "read_file"))
    );
    assert!(ev.iter().any(|e| matches!(e, RunEvent::ToolResult { status: CallStatus::Ok, model, .. } if model.contains("alpha-content"))));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    // The second request carries the model projection of the result, nothing client-only.
    assert!(
        reqs[1].raw_body.contains("alpha-content"),
        "{}",
        reqs[1].raw_body
    );
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant"]);
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tool_anthropic() {
    one_tool(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tool_chat() {
    one_tool(ProviderKind::OpenAiChat).await;
}

async fn parallel_read_only(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(
        Turn::text("Both.")
            .call("call_p1", "read_file", json!({"path": "notes.txt"}))
            .call("call_p2", "read_file", json!({"path": "b.txt"})),
    );
    h.push(Turn::text("alpha and beta."));
    let events = sink();
    let out = h
        .agent(Arc::new(RejectAll("no".into())), fast_options())
        .run(start("read both"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    let pos = |f: &dyn Fn(&RunEvent) -> bool| ev.iter().position(f).unwrap();
    let second_call = pos(
        &|e| matches!(e, RunEvent::ToolCall { tool_call_id, .. } if tool_call_id.ends_with(":call_p2")),
    );
    let first_result = pos(&|e| matches!(e, RunEvent::ToolResult { .. }));
    assert!(
        second_call < first_result,
        "read-only calls of one turn start together: {ev:?}"
    );
    // Results keep call order, both ok (read-only: no confirmation, so RejectAll changed nothing).
    let results: Vec<(&str, CallStatus)> = ev
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolResult {
                tool_call_id,
                status,
                ..
            } => Some((tool_call_id.as_str(), *status)),
            _ => None,
        })
        .collect();
    // Stored (and reported) under run-scoped ids.
    let scoped = |id: &str| format!("{}:{id}", out.run_id);
    let (p1, p2) = (scoped("call_p1"), scoped("call_p2"));
    assert_eq!(
        results,
        vec![(p1.as_str(), CallStatus::Ok), (p2.as_str(), CallStatus::Ok)]
    );
    let body = &h.server.requests()[1].raw_body;
    assert!(body.contains("alpha-content") && body.contains("beta-content"));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_read_only_anthropic() {
    parallel_read_only(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_read_only_chat() {
    parallel_read_only(ProviderKind::OpenAiChat).await;
}

async fn confirm_rejected(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("Writing.").call(
        "call_w1",
        "write_file",
        json!({"path": "out.txt", "content": "should not exist"}),
    ));
    h.push(Turn::text("The person said no."));
    let events = sink();
    let out = h
        .agent(Arc::new(RejectAll("not now".into())), fast_options())
        .run(
            start("write out.txt"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        !h.root.join("out.txt").exists(),
        "a rejected write has no effect on disk"
    );
    let ev = events.events();
    assert!(ev.iter().any(
        |e| matches!(e, RunEvent::ConfirmRequest { tool_call_id, .. } if tool_call_id.ends_with(":call_w1"))
    ));
    assert!(ev.iter().any(|e| matches!(
        e,
        RunEvent::ToolResult {
            status: CallStatus::Rejected,
            ..
        }
    )));
    let body = &h.server.requests()[1].raw_body;
    assert!(body.contains("did not approve"), "{body}");
    assert!(
        body.contains("rejected"),
        "the decision is normalized into user text: {body}"
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_rejected_anthropic() {
    confirm_rejected(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_rejected_chat() {
    confirm_rejected(ProviderKind::OpenAiChat).await;
}

/// The fixture server with 5 extra tools exceeds the defer gate: its tools are deferred.
async fn deferred_tool_search(kind: ProviderKind) {
    let h = harness(kind, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__echo").await;
    let search = json!({"query": "select:mcp__fx__echo"});
    let turn = if kind == ProviderKind::OpenAiResponses {
        Turn::default().search_call("call_s1", search)
    } else {
        Turn::text("Searching.").call("call_s1", "tool_search", search)
    };
    h.push(turn);
    h.push(Turn::text("Echoing.").call("call_e1", "mcp__fx__echo", json!({"message": "ping-42"})));
    h.push(Turn::text("Done."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            start("echo ping-42"),
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
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    let first = sent_tools(&reqs[0]);
    let echo_first = first.iter().find(|(n, _)| n == "mcp__fx__echo");
    let second = sent_tools(&reqs[1]);
    if kind == ProviderKind::OpenAiChat {
        // activeTools: absent until tool_search activated it, then sent in full.
        assert!(echo_first.is_none(), "{first:?}");
        assert!(
            second.iter().any(|(n, d)| n == "mcp__fx__echo" && !d),
            "{second:?}"
        );
    } else {
        // native: the same stable array, the deferred tool flagged, our tool_search not deferred.
        assert_eq!(
            echo_first,
            Some(&("mcp__fx__echo".to_string(), true)),
            "{first:?}"
        );
        // Our tool_search is a client tool, never deferred (Responses sends it as its
        // `tool_search` tool type with `execution: "client"`).
        let ours = reqs[0].body["tools"].as_array().unwrap().iter().any(|t| {
            (t["name"] == "tool_search" || t["type"] == "tool_search")
                && t.get("defer_loading").is_none()
        });
        assert!(ours, "{}", reqs[0].body["tools"]);
        assert_eq!(first, second, "the native tools array stays stable");
        let refs = if kind == ProviderKind::Anthropic {
            "tool_reference"
        } else {
            "tool_search_output"
        };
        assert!(reqs[1].raw_body.contains(refs), "{}", reqs[1].raw_body);
    }
    assert!(
        events.events().iter().any(|e| matches!(e,
        RunEvent::ToolResult { tool_call_id, status: CallStatus::Ok, model, .. }
            if tool_call_id.ends_with(":call_e1") && model.contains("ping-42"))),
        "{:?}",
        events.events()
    );
    assert!(reqs[2].raw_body.contains("ping-42"));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tool_search_native_anthropic() {
    deferred_tool_search(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tool_search_native_responses() {
    deferred_tool_search(ProviderKind::OpenAiResponses).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tool_search_active_tools_chat() {
    deferred_tool_search(ProviderKind::OpenAiChat).await;
}

/// The system prompt of a run: where the agent works (the project root), the runtime instructions
/// of the active configs with the skills listing (names and purposes only), and nothing secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_names_the_root_and_lists_the_skills() {
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
        ProviderKind::OpenAiChat,
    ] {
        let h = harness(kind, None).await;
        h.push(Turn::text("Hi."));
        let out = h
            .agent(Arc::new(ApproveAll), fast_options())
            .run(start("hello"), CancellationToken::new(), sink())
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        let req = &h.server.requests()[0];
        let system = match kind {
            ProviderKind::Anthropic => req.body["system"].to_string(),
            ProviderKind::OpenAiResponses => req.body["instructions"].to_string(),
            ProviderKind::OpenAiChat => req.body["messages"][0].to_string(),
        };
        let root = serde_json::to_string(&h.root.display().to_string()).unwrap();
        assert!(
            system.contains(root.trim_matches('"')),
            "{kind:?}: {system}"
        );
        assert!(
            system.contains("Available skills") && system.contains("- investigate-failing-build: "),
            "{kind:?}: {system}"
        );
        // Names and purposes only: no skill body, no key.
        assert!(!system.contains(KEY), "{kind:?}");
        assert!(!req.raw_body.contains(KEY), "{kind:?}");
        h.server.assert_clean();
    }
}
