//! Conversation compaction against the fake provider over real HTTP, with real tools, a real MCP
//! server (the fixture `fx`, whose tools are deferred) and real SQLite, on the Anthropic (native
//! presentation) and Chat Completions (activeTools) routes. A tiny context window makes every
//! request pass the threshold; the pure cut decision picks when there is something to summarize.
//!
//! The fake server checks its protocol invariants on every request (pairs intact, no unknown
//! result ids, every `tool_reference` names a sent tool) and its replay check: a request that
//! starts with the summary must replay exactly the served turns after it, in order
//! (`summaries_start_with`; summary replies are `Turn::summary`, never replayed).

use crate::agent_common;

use std::sync::Arc;
use std::time::Duration;

use agent_common::*;
use aibuddy::agent::{AgentOptions, RunEvent, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{RecordedRequest, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

/// How the agent's summary message starts (`context::rebuild`).
const SUMMARY_MARKER: &str = "Summary of the earlier conversation";

/// Every request is over the threshold; two turns are kept verbatim.
fn compacting_options() -> AgentOptions {
    let mut o = fast_options();
    o.compaction.context_window = Some(1);
    o.compaction.keep_recent_turns = 2;
    o
}

/// The first message of a request that is not the system prompt, as JSON text.
fn first_message(req: &RecordedRequest) -> String {
    // Anthropic and Chat carry `messages`; Responses carries `input` items.
    let items = if req.body["messages"].is_array() {
        &req.body["messages"]
    } else {
        &req.body["input"]
    };
    items
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] != "system")
        .map(Value::to_string)
        .unwrap_or_default()
}

async fn compaction_keeps_pairs_and_reactivates(kind: ProviderKind) {
    let h = harness(kind, Some(&["--tools", "5"])).await;
    h.server.summaries_start_with(SUMMARY_MARKER);
    h.wait_deferred("mcp__fx__echo").await;
    // 1: search (activates echo) 2: echo 3: read_file; then the 4th request is the summary of
    // the prompt and the search turn, and the 5th carries the summary and the two kept turns.
    h.push(Turn::text("Searching.").call(
        "call_s1",
        "tool_search",
        json!({"query": "select:mcp__fx__echo"}),
    ));
    h.push(Turn::text("Echoing.").call("call_e1", "mcp__fx__echo", json!({"message": "ping-42"})));
    h.push(Turn::text("Reading.").call("call_r1", "read_file", json!({"path": "notes.txt"})));
    h.push(Turn::summary(
        "SUMMARY-7f3: the person asked to echo; tool_search found mcp__fx__echo.",
    ));
    h.push(Turn::text("All done."));
    let events = sink();
    let out = h
        .agent(Arc::new(ApproveAll), compacting_options())
        .run(
            start("echo ping-42 then read notes"),
            CancellationToken::new(),
            events.clone(),
        )
        .await
        .unwrap();
    let ev = events.events();
    assert_eq!(out.status, RunStatus::Completed, "{out:?} {ev:?}");
    let reqs = h.server.requests();
    assert_eq!(
        reqs.len(),
        5,
        "{:#?}",
        reqs.iter().map(|r| &r.body).collect::<Vec<_>>()
    );

    // The summary request: no tools, the instruction, the covered turns as text.
    let summary_req = &reqs[3];
    assert!(
        summary_req.body["tools"]
            .as_array()
            .is_none_or(|t| t.is_empty()),
        "{}",
        summary_req.raw_body
    );
    assert!(summary_req.raw_body.contains("summarize the earlier part"));
    assert!(
        summary_req
            .raw_body
            .contains("echo ping-42 then read notes")
    );
    assert!(summary_req.raw_body.contains("Agent called tool_search"));
    assert!(!summary_req.raw_body.contains("Agent called read_file"));

    // The next request starts with the summary; the search pair is gone, the kept pairs intact.
    let next = &reqs[4];
    let first = first_message(next);
    assert!(
        first.contains("Summary of the earlier conversation") && first.contains("SUMMARY-7f3"),
        "{first}"
    );
    assert!(!next.raw_body.contains("call_s1"), "{}", next.raw_body);
    assert!(next.raw_body.contains("call_e1") && next.raw_body.contains("ping-42"));
    assert!(next.raw_body.contains("call_r1") && next.raw_body.contains("alpha-content"));
    // The deferred tool its retained call uses is reactivated: sent, and loaded (not deferred),
    // although the search that found it was summarized away.
    let tools = sent_tools(next);
    assert!(
        tools
            .iter()
            .any(|(n, deferred)| n == "mcp__fx__echo" && !deferred),
        "{tools:?}"
    );

    assert!(
        ev.iter().any(|e| matches!(
            e,
            RunEvent::Compaction {
                covers_from: 1,
                covers_to: 3
            }
        )),
        "{ev:?}"
    );
    // The summary's text never streams as assistant text.
    assert!(!text_of(&ev).contains("SUMMARY-7f3"));

    // The originals stay in storage beside the summary.
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert_eq!(conv.messages.len(), 8);
    assert!(conv.messages[1].content.contains("call_s1"));
    assert_eq!(conv.summaries.len(), 1);
    assert_eq!(
        (conv.summaries[0].covers_from, conv.summaries[0].covers_to),
        (1, 3)
    );
    assert!(conv.summaries[0].text.starts_with("SUMMARY-7f3"));
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_pairs_and_reactivates_anthropic() {
    compaction_keeps_pairs_and_reactivates(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_pairs_and_reactivates_chat() {
    compaction_keeps_pairs_and_reactivates(ProviderKind::OpenAiChat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_pairs_and_reactivates_responses() {
    compaction_keeps_pairs_and_reactivates(ProviderKind::OpenAiResponses).await;
}

/// Stop while the summary streams: the run ends `cancelled`, no summary is stored, and the
/// conversation is whole.
async fn stop_during_summarization(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.server.summaries_start_with(SUMMARY_MARKER);
    for (i, file) in ["notes.txt", "b.txt", "notes.txt"].iter().enumerate() {
        h.push(Turn::text("Reading.").call(
            &format!("call_r{i}"),
            "read_file",
            json!({"path": file}),
        ));
    }
    h.push(Turn::text("a summary that never ends").stalling());
    let events = sink();
    let agent = Arc::new(h.agent(Arc::new(ApproveAll), compacting_options()));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel, events) = (agent.clone(), cancel.clone(), events.clone());
        tokio::spawn(async move { agent.run(start("read three"), cancel, events).await })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while h.server.requests().len() < 4 {
        assert!(std::time::Instant::now() < deadline, "no summary request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the stalled stream start, then stop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the run ends promptly once stopped")
        .unwrap()
        .unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(reqs[3].raw_body.contains("summarize the earlier part"));
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert!(conv.summaries.is_empty());
    assert_eq!(conv.messages.len(), 7);
    assert_eq!(conv.run.status, Some(RunStatus::Cancelled));
    assert!(
        !events
            .events()
            .iter()
            .any(|e| matches!(e, RunEvent::Compaction { .. }))
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_summarization_anthropic() {
    stop_during_summarization(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_summarization_chat() {
    stop_during_summarization(ProviderKind::OpenAiChat).await;
}

/// A provider that trickles the compaction summary forever (a token every 100 ms, never
/// finished) no longer holds the run: the summary is bounded by the step time limit, the run ends
/// `error` at Execution saying so, and everything stored before (the prompt, three steps and their
/// results) is kept; no summary is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_summary_ends_the_run_at_the_step_time_limit() {
    use aibuddy::contract::Stage;
    use aibuddy_provider::testing::Reply;
    let h = harness(ProviderKind::Anthropic, None).await;
    h.server.summaries_start_with(SUMMARY_MARKER);
    for (i, file) in ["notes.txt", "b.txt", "notes.txt"].iter().enumerate() {
        h.push(Turn::text("Reading.").call(
            &format!("call_r{i}"),
            "read_file",
            json!({"path": file}),
        ));
    }
    h.server.push(Reply::anthropic_trickle(
        "tok ",
        600,
        Duration::from_millis(100),
    ));
    let mut options = compacting_options();
    options.step_timeout = Duration::from_millis(1500);
    let started = std::time::Instant::now();
    let (out, events) = tokio::time::timeout(
        Duration::from_secs(30),
        h.run_with(start("read three"), options),
    )
    .await
    .expect("the step time limit ends a trickling summary");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status, RunStatus::Error, "{out:?}");
    assert_eq!(out.stage, Some(Stage::Execution), "{out:?}");
    assert_eq!(
        out.error.as_deref(),
        Some(
            "conversation compaction failed: the summary passed the step time limit of 1.5 s \
             (step timeout); nothing was summarized"
        )
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 4, "no step sent after the failed summary");
    assert!(reqs[3].raw_body.contains("summarize the earlier part"));
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    assert!(conv.summaries.is_empty());
    let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        vec![
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(conv.run.status, Some(RunStatus::Error));
    assert_eq!(conv.run.stage, Some(aibuddy::contract::Stage::Execution));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RunEvent::Compaction { .. }))
    );
    h.server.assert_clean();
}

/// The precompaction `Summarizer` backed by the provider: one tool-less request with the summary
/// model, the summary returned when smaller, refused when not (the original then stays), and a
/// stalled summary stopped promptly by its token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_summarizer_summarizes_only_smaller_and_stops() {
    use aibuddy::agent::summarize::ProviderSummarizer;
    use aibuddy::results::{Summarizer, SummaryRequest};
    use aibuddy_provider::{ApiKey, HttpProvider};

    let h = harness(ProviderKind::Anthropic, None).await;
    let provider = Arc::new(HttpProvider::new(h.route(), ApiKey::new(KEY)).unwrap());
    let s = ProviderSummarizer::new(
        provider,
        Some("claude-haiku-4-5".into()),
        Duration::from_secs(60),
    );
    let input = json!({"command": "cargo test"});
    let big = "test result line\n".repeat(2000);
    let req = |text: &'static str| SummaryRequest {
        tool: "execute",
        input: &input,
        text,
        max_tokens: 1000,
    };
    let big: &'static str = Box::leak(big.into_boxed_str());

    h.push(Turn::text("SHORT: 2000 passing tests."));
    let out = s
        .summarize(&req(big), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out, "SHORT: 2000 passing tests.");
    let sent = &h.server.requests()[0];
    assert_eq!(sent.body["model"], "claude-haiku-4-5");
    assert_eq!(sent.body["max_tokens"], 1000);
    assert!(sent.body["tools"].as_array().is_none_or(|t| t.is_empty()));
    assert!(sent.raw_body.contains("shorten the output") && sent.raw_body.contains("cargo test"));

    h.push(Turn::text(
        "a summary longer than the tiny output it summarizes",
    ));
    let err = s
        .summarize(&req("tiny"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.0.contains("not smaller"), "{err}");

    h.push(Turn::text("never finished").stalling());
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let stopped = tokio::time::timeout(Duration::from_secs(20), s.summarize(&req(big), &cancel))
        .await
        .expect("a stopped summary returns promptly");
    assert!(stopped.unwrap_err().0.contains("stopped"));
    h.server.assert_clean();
}

/// The `call` path installs the provider-backed summarizer only when settings name a provider
/// that resolves and has what it needs (a keyed vendor without a key: none, `summarize` trims).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_path_installs_a_summarizer_only_with_a_usable_provider() {
    use aibuddy::agent::summarize::install_configured_summarizer;
    use aibuddy::app::{App, AppOptions};
    use aibuddy_provider::{BaseUrlOverrides, KeyStore};

    async fn app_with(settings: Value) -> (tempfile::TempDir, App) {
        let dir = tempfile::tempdir().unwrap();
        let (root, data) = (dir.path().join("p"), dir.path().join("d"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("settings.json"), settings.to_string()).unwrap();
        let app = App::open(AppOptions {
            project: root,
            data_dir: data,
        })
        .await
        .unwrap();
        (dir, app)
    }
    let env = BaseUrlOverrides::default();
    let no_keys = KeyStore::default();
    let (_d1, none) = app_with(json!({})).await;
    assert!(!install_configured_summarizer(&none, &env, &no_keys));
    let (_d2, keyless) =
        app_with(json!({"providers": {"anthropic": {"model": "claude-sonnet-4-6"}}})).await;
    assert!(!install_configured_summarizer(&keyless, &env, &no_keys));
    let (_d3, local) = app_with(json!({"providers": {"local": {
        "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "qwen3:8b"}}}))
    .await;
    assert!(install_configured_summarizer(&local, &env, &no_keys));
}
