//! No MCP start-up race: a run's first request does not wait for an MCP server that is still
//! starting; `tool_search` waits for it (bounded by `tool_search.connect_wait_ms`), finds its tool,
//! and the tool is called in the same run, on the native (Anthropic) and activeTools (Chat)
//! presentations; a server that stays unavailable is named in the search result. Real MCP servers
//! (the repo's fixture server, made slow by a `sleep` before `exec`), real HTTP to the fake
//! provider, real SQLite.

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::events::CallStatus;
use aibuddy::plane::PlaneOptions;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A project whose person-level `mcp.json` runs the fixture server twice: `fast` at once and
/// `slow` after `slow_secs` seconds (a shell sleeps, then execs the same server). Both list enough
/// tools to be deferred. Opened the way a run opens it: without waiting for MCP servers.
async fn late_harness(kind: ProviderKind, slow_secs: &str, settings: Option<Value>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let fixture = fixture_server().to_string_lossy().into_owned();
    let slow = format!("sleep {slow_secs}; exec python3 '{fixture}' --tools 12");
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {
            "fast": {"command": "python3", "args": [fixture, "--tools", "12"]},
            "slow": {"command": "sh", "args": ["-c", slow]}
        }})
        .to_string(),
    )
    .unwrap();
    if let Some(s) = settings {
        std::fs::write(data.join("settings.json"), s.to_string()).unwrap();
    }
    let opts = AppOptions {
        project: root.clone(),
        data_dir: data.clone(),
    };
    let app = App::open_with(opts, PlaneOptions::for_runs())
        .await
        .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.expect_key(KEY);
    let h = Harness {
        root: app.project_root.clone(),
        dir,
        data,
        app: Arc::new(app),
        server,
        kind,
    };
    // `tool_search` exists once something is deferred: the fast server's tools.
    h.wait_deferred("mcp__fast__echo").await;
    h
}

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

fn search_model(events: &[RunEvent], id: &str) -> String {
    events
        .iter()
        .find_map(|e| match e {
            RunEvent::ToolResult {
                tool_call_id,
                status: CallStatus::Ok,
                model,
                ..
            } if tool_call_id.ends_with(&format!(":{id}")) => Some(model.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no ok result for {id}: {events:?}"))
}

async fn late_server_found_and_called(kind: ProviderKind) {
    let opened = Instant::now();
    let h = late_harness(kind, "6", None).await;
    let search = json!({"query": "select:mcp__slow__echo"});
    h.push(if kind == ProviderKind::OpenAiResponses {
        Turn::default().search_call("call_s1", search)
    } else {
        Turn::text("Searching.").call("call_s1", "tool_search", search)
    });
    h.push(Turn::text("Echoing.").call(
        "call_e1",
        "mcp__slow__echo",
        json!({"message": "late-77"}),
    ));
    h.push(Turn::text("Done."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            start("echo late-77"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    let events = events.events();
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {events:?}");

    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    // The first request went out while `slow` was still starting: none of its tools was listed.
    let first = sent_tools(&reqs[0]);
    assert!(
        first.iter().all(|(n, _)| !n.starts_with("mcp__slow__")),
        "{first:?}"
    );
    let ours = reqs[0].body["tools"].as_array().unwrap().iter().any(|t| {
        t["name"] == "tool_search"
            || t["type"] == "tool_search"
            || t["function"]["name"] == "tool_search"
    });
    assert!(ours, "{first:?}");
    assert!(
        opened.elapsed() < Duration::from_secs(60),
        "generous bound only: the run did not hang"
    );

    // tool_search waited for `slow`, then found and activated its tool.
    let found = search_model(&events, "call_s1");
    assert!(found.contains("mcp__slow__echo"), "{found}");
    assert!(!found.contains("not available"), "{found}");
    let second = sent_tools(&reqs[1]);
    if kind == ProviderKind::OpenAiChat {
        // activeTools: the activated tool is sent in full.
        assert!(
            second.iter().any(|(n, d)| n == "mcp__slow__echo" && !d),
            "{second:?}"
        );
    } else {
        // native: the late server's tools join the array deferred; the search answers with a
        // reference the fake provider checks against that array.
        assert!(
            second.iter().any(|(n, d)| n == "mcp__slow__echo" && *d),
            "{second:?}"
        );
        let refs = if kind == ProviderKind::Anthropic {
            "tool_reference"
        } else {
            "tool_search_output"
        };
        assert!(reqs[1].raw_body.contains(refs), "{}", reqs[1].raw_body);
    }
    // Called in the same run.
    let echoed = search_model(&events, "call_e1");
    assert!(echoed.contains("echo: late-77"), "{echoed}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_server_found_and_called_native_anthropic() {
    late_server_found_and_called(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_server_found_and_called_native_responses() {
    late_server_found_and_called(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_server_found_and_called_active_tools_chat() {
    late_server_found_and_called(ProviderKind::OpenAiChat).await;
}

/// A server that is still starting when the (shortened) wait ends is named in the result; the
/// search still answers from the servers that are up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_connecting_after_the_wait_is_named() {
    let settings = json!({"tool_search": {"connect_wait_ms": 300}});
    let h = late_harness(ProviderKind::OpenAiChat, "20", Some(settings)).await;
    h.push(Turn::text("Searching.").call(
        "call_s1",
        "tool_search",
        json!({"query": "select:mcp__fast__echo,mcp__slow__echo"}),
    ));
    h.push(Turn::text("Done."));
    let events = sink();
    let waited = Instant::now();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("search"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    let events = events.events();
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {events:?}");
    let text = search_model(&events, "call_s1");
    assert!(text.contains("mcp__fast__echo"), "{text}");
    assert!(
        text.contains("not available now") && text.contains("- slow: still connecting"),
        "{text}"
    );
    assert!(
        waited.elapsed() < Duration::from_secs(30),
        "the wait is bounded by the setting, not the server"
    );
    h.server.assert_clean();
}

/// Every text the model is given for the call `id` in a recorded request: the function output
/// (activeTools), the tool_result's text (Anthropic), or our note message after the
/// `tool_search_output` item (Responses, which has no text field).
fn said_about(kind: ProviderKind, body: &Value, id: &str) -> String {
    let mut out = String::new();
    let items = match kind {
        ProviderKind::OpenAiResponses => &body["input"],
        _ => &body["messages"],
    };
    for it in items.as_array().into_iter().flatten() {
        match kind {
            ProviderKind::OpenAiChat if it["tool_call_id"] == id => {
                out.push_str(it["content"].as_str().unwrap_or_default());
            }
            ProviderKind::Anthropic => {
                for b in it["content"].as_array().into_iter().flatten() {
                    if b["type"] != "tool_result" || b["tool_use_id"] != id {
                        continue;
                    }
                    match &b["content"] {
                        Value::String(s) => out.push_str(s),
                        Value::Array(parts) => parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .for_each(|t| out.push_str(t)),
                        _ => {}
                    }
                }
            }
            ProviderKind::OpenAiResponses if it["type"] == "message" && it["role"] == "user" => {
                for p in it["content"].as_array().into_iter().flatten() {
                    let t = p["text"].as_str().unwrap_or_default();
                    let head = format!("[aibuddy, about the result of tool_search call {id}]");
                    if let Some(rest) = t.strip_prefix(&head) {
                        out.push_str(rest);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A search that finds nothing while a server is still connecting, and one that finds a tool of
/// the server that is up: on all three routes the model is told what was not found and which
/// server could not be searched (native: beside the references, on Responses as our note after
/// the `tool_search_output`), and the fake provider accepts every request.
async fn unavailable_servers_are_told_on_every_route(kind: ProviderKind) {
    let settings = json!({"tool_search": {"connect_wait_ms": 300}});
    let h = late_harness(kind, "20", Some(settings)).await;
    let search = |id: &str, query: &str| {
        let input = json!({"query": query});
        if kind == ProviderKind::OpenAiResponses {
            Turn::default().search_call(id, input)
        } else {
            Turn::text("Searching.").call(id, "tool_search", input)
        }
    };
    h.push(search("call_s1", "select:mcp__fast__echo,mcp__slow__echo"));
    h.push(search("call_s2", "select:mcp__slow__echo"));
    h.push(Turn::text("Done."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(start("search"), CancellationToken::new(), events.clone())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    let (found, none) = (
        said_about(kind, &reqs[1].body, "call_s1"),
        said_about(kind, &reqs[2].body, "call_s2"),
    );
    for said in [&found, &none] {
        assert!(
            said.contains("not available now")
                && said.contains("slow")
                && said.contains("still connecting"),
            "{kind:?}: {said}\n{}",
            reqs[2].raw_body
        );
        assert!(said.contains("mcp__slow__echo"), "{kind:?}: {said}");
    }
    assert!(
        none.contains("No deferred tool matches"),
        "{kind:?}: {none}"
    );
    assert!(
        !found.contains("No deferred tool matches"),
        "{kind:?}: {found}"
    );
    // Native: the found tool still travels as a reference.
    match kind {
        ProviderKind::Anthropic => {
            let result = reqs[1].body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .find(|b| b["tool_use_id"] == "call_s1")
                .unwrap();
            let types: Vec<&str> = result["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["type"].as_str().unwrap())
                .collect();
            assert_eq!(types, ["tool_reference", "text"], "{result}");
            assert_eq!(result["content"][0]["tool_name"], "mcp__fast__echo");
        }
        ProviderKind::OpenAiResponses => {
            let outputs: Vec<&Value> = reqs[2].body["input"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "tool_search_output")
                .collect();
            assert_eq!(outputs.len(), 2);
            assert_eq!(outputs[0]["tools"][0]["name"], "mcp__fast__echo");
            assert_eq!(outputs[1]["tools"], json!([]));
        }
        ProviderKind::OpenAiChat => {}
    }
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_servers_are_told_native_anthropic() {
    unavailable_servers_are_told_on_every_route(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_servers_are_told_native_responses() {
    unavailable_servers_are_told_on_every_route(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_servers_are_told_active_tools_chat() {
    unavailable_servers_are_told_on_every_route(ProviderKind::OpenAiChat).await;
}

/// A run that never searches never builds the `tool_search` index (with the thesaurus, the
/// embedding table and the encoder, most of a run's memory), though `tool_search` is offered and
/// the request is rebuilt before every step; its first search builds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_never_searches_never_builds_the_index() {
    let h = late_harness(ProviderKind::Anthropic, "0", None).await;
    h.push(Turn::text("Listing.").call("call_l1", "ls", json!({"path": "."})));
    h.push(Turn::text("Listing again.").call("call_l2", "ls", json!({"path": "."})));
    h.push(Turn::text("Done."));
    let (out, events) = h.run_prompt("list the project").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {events:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        sent_tools(&reqs[2]).iter().any(|(n, _)| n == "tool_search"),
        "tool_search is offered"
    );
    let discovery = &h.app.capabilities.discovery;
    assert_eq!(discovery.index_builds(), 0, "no search, no index");

    h.push(Turn::text("Searching.").call(
        "call_s1",
        "tool_search",
        json!({"query": "select:mcp__fast__echo"}),
    ));
    h.push(Turn::text("Found."));
    let (out, events) = h.continue_run(&out.run_id, "find echo").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {events:?}");
    assert!(
        search_model(&events, "call_s1").contains("mcp__fast__echo"),
        "{events:?}"
    );
    assert_eq!(discovery.index_builds(), 1, "the first search built it");
    h.server.assert_clean();
}

/// A project whose only MCP server (9 tools, under the defer gates) is still starting when the
/// run begins: the first request offers `tool_search` for it (a pending server); the search waits,
/// the server joins with its tools active (not deferred), the result says so, and the tool is
/// called in the next step, where `tool_search` is gone (nothing deferred, nothing pending).
async fn few_tools_server_joins_active(kind: ProviderKind) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let fixture = fixture_server().to_string_lossy().into_owned();
    let slow = format!("sleep 3; exec python3 '{fixture}'");
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {"slow": {"command": "sh", "args": ["-c", slow]}}}).to_string(),
    )
    .unwrap();
    let app = App::open_with(
        AppOptions {
            project: root,
            data_dir: data.clone(),
        },
        PlaneOptions::for_runs(),
    )
    .await
    .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.expect_key(KEY);
    let h = Harness {
        root: app.project_root.clone(),
        dir,
        data,
        app: Arc::new(app),
        server,
        kind,
    };
    let search = json!({"query": "select:echo"});
    h.push(if kind == ProviderKind::OpenAiResponses {
        Turn::default().search_call("call_s1", search)
    } else {
        Turn::text("Searching.").call("call_s1", "tool_search", search)
    });
    h.push(Turn::text("Echoing.").call(
        "call_e1",
        "mcp__slow__echo",
        json!({"message": "joined-41"}),
    ));
    h.push(Turn::text("Done."));
    let (out, events) = h.run_prompt("echo joined-41").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {events:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    let first = sent_tools(&reqs[0]);
    assert!(
        first.iter().all(|(n, _)| !n.starts_with("mcp__")),
        "{first:?}"
    );
    let offered = |r: &aibuddy_provider::testing::RecordedRequest| {
        r.body["tools"].as_array().unwrap().iter().any(|t| {
            t["name"] == "tool_search"
                || t["type"] == "tool_search"
                || t["function"]["name"] == "tool_search"
        })
    };
    assert!(offered(&reqs[0]), "pending server: tool_search offered");
    let said = search_model(&events, "call_s1");
    assert!(
        said.contains("active (not deferred)") && said.contains("mcp__slow__echo"),
        "{said}"
    );
    assert!(!said.contains("No deferred tool is named"), "{said}");
    let second = sent_tools(&reqs[1]);
    assert!(
        second.iter().any(|(n, d)| n == "mcp__slow__echo" && !d),
        "joined as an active tool: {second:?}"
    );
    assert!(!offered(&reqs[1]), "nothing deferred or pending any more");
    let body = reqs[1].body.to_string();
    assert!(body.contains("call them directly"), "{body}");
    let echoed = events.iter().any(|e| {
        matches!(e, RunEvent::ToolResult { tool_call_id, status: CallStatus::Ok, model, .. }
            if tool_call_id.ends_with(":call_e1") && model.contains("joined-41"))
    });
    assert!(echoed, "{events:?}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn few_tools_server_joins_active_native_anthropic() {
    few_tools_server_joins_active(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn few_tools_server_joins_active_native_responses() {
    few_tools_server_joins_active(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn few_tools_server_joins_active_active_tools_chat() {
    few_tools_server_joins_active(ProviderKind::OpenAiChat).await;
}
