//! MCP chaos: real stdio servers (the fixture with `--chaos`) that crash mid-call, hang past the
//! timeout, return 100 MB, send invalid JSON, flood notifications and progress, and change their
//! tool list mid-run. Each call gets a stage-attributed error or a bounded result, a healthy
//! sibling server keeps answering during the chaos, and the bad server is reconnected with backoff.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aibuddy_mcp::{McpError, McpManager, McpStage, ServerConfig, ServerState, Timeouts};
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(30);

fn chaos_server(call_timeout: Duration) -> ServerConfig {
    let mut cfg = fixture("bad", &["--chaos"]);
    cfg.timeouts = Timeouts {
        call: call_timeout,
        ..Timeouts::default()
    };
    cfg
}

/// A chaos server `bad` and a healthy sibling `good`, both connected.
async fn pair(call_timeout: Duration) -> McpManager {
    init_tracing();
    let manager = start(vec![chaos_server(call_timeout), fixture("good", &[])]);
    wait_connected(&manager, "bad", UP).await;
    wait_connected(&manager, "good", UP).await;
    manager
}

async fn call(manager: &McpManager, name: &str, args: Value) -> Result<String, McpError> {
    manager
        .call(name, args, CancellationToken::new(), None)
        .await
        .map(|r| r.text())
}

/// The sibling answers, several times in a row.
async fn sibling_answers(manager: &McpManager, tag: &str) {
    for i in 0..3 {
        let text = call(
            manager,
            "mcp__good__echo",
            json!({"message": format!("{tag} {i}")}),
        )
        .await
        .unwrap_or_else(|e| panic!("sibling failed during {tag}: {e}"));
        assert_eq!(text, format!("echo: {tag} {i}"));
    }
}

/// Runs `bad` (a call on the chaos server) while the sibling is called repeatedly.
async fn during<T>(
    manager: &McpManager,
    tag: &str,
    bad: impl std::future::Future<Output = T>,
) -> T {
    let (result, ()) = tokio::join!(bad, async {
        // Let the bad call start first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        sibling_answers(manager, tag).await;
    });
    result
}

/// Waits until `bad` has failed with a planned retry (the backoff) and is connected again, then
/// checks it answers.
async fn reconnected_with_backoff(manager: &McpManager) {
    let saw_backoff = AtomicBool::new(false);
    let ok = manager
        .wait_for(UP, |all| {
            let bad = all.iter().find(|s| s.server == "bad");
            if let Some(ServerState::Failed {
                retry_in_ms: Some(_),
                ..
            }) = bad.map(|s| &s.state)
            {
                saw_backoff.store(true, Ordering::SeqCst);
            }
            if matches!(
                bad.map(|s| &s.state),
                Some(ServerState::Reconnecting { .. })
            ) {
                saw_backoff.store(true, Ordering::SeqCst);
            }
            saw_backoff.load(Ordering::SeqCst)
                && bad.is_some_and(|s| s.state == ServerState::Connected)
        })
        .await;
    assert!(
        ok,
        "bad was not reconnected: {:?}",
        status_of(manager, "bad")
    );
    let text = call(manager, "mcp__bad__echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(text, "echo: back");
}

fn lost_reason(err: &McpError) -> &str {
    match err {
        McpError::ConnectionLost { reason, .. } => reason,
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_crashing_mid_call_is_an_execution_error_and_comes_back() {
    let manager = pair(Duration::from_secs(30)).await;
    let err = during(
        &manager,
        "crash",
        call(&manager, "mcp__bad__crash_mid", json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err:?}");
    let reason = lost_reason(&err);
    assert!(
        reason.contains("non-JSON-RPC") || reason.contains("exited"),
        "{reason}"
    );
    reconnected_with_backoff(&manager).await;
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hanging_past_the_timeout_times_out_and_is_replaced() {
    let manager = pair(Duration::from_secs(1)).await;
    let started = Instant::now();
    let err = during(
        &manager,
        "hang",
        call(&manager, "mcp__bad__hang", json!({})),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err:?}");
    assert_eq!(err.stage(), McpStage::Execution);
    assert!(started.elapsed() < Duration::from_secs(20));
    // The health check gets no answer either: the server is dropped and restarted.
    let reason = wait_failed(&manager, "bad", UP).await;
    assert!(reason.contains("unresponsive"), "{reason}");
    sibling_answers(&manager, "after hang").await;
    reconnected_with_backoff(&manager).await;
    manager.shutdown().await;
}

/// VmHWM (peak resident set) of this process in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_result_is_refused_without_being_held_and_the_server_comes_back() {
    let manager = pair(Duration::from_secs(60)).await;
    // Reset the peak to the current RSS (Linux >= 4.0), so the peak below is this call's.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = peak_rss_kib();
    let err = during(
        &manager,
        "big",
        call(&manager, "mcp__bad__big", json!({"mb": 100})),
    )
    .await
    .unwrap_err();
    let grown_mib = peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!("100 MB result: peak RSS grew by {grown_mib} MiB");
    assert_eq!(err.stage(), McpStage::Execution, "{err:?}");
    let reason = lost_reason(&err);
    assert!(reason.contains("larger than 16777216 bytes"), "{reason}");
    // Never held whole: the screen stops at the 16 MiB limit (other tests of this binary run
    // alongside, hence the margin; a held 100 MB message alone would exceed it).
    assert!(grown_mib < 80, "peak RSS grew by {grown_mib} MiB");
    reconnected_with_backoff(&manager).await;

    // A result under the limit still arrives whole (the core bounds what the model sees).
    let text = call(&manager, "mcp__bad__big", json!({"mb": 2}))
        .await
        .unwrap();
    assert_eq!(text.len(), 2 * 1024 * 1024);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_flood_without_newlines_is_not_buffered() {
    let manager = pair(Duration::from_secs(60)).await;
    let text = during(
        &manager,
        "stderr flood",
        call(&manager, "mcp__bad__stderr_flood", json!({"mb": 60})),
    )
    .await
    .unwrap();
    assert_eq!(text, "stderr flooded");
    // The 60 MB line was cut to 4 KiB as it was read; the server stays connected.
    assert_eq!(status_of(&manager, "bad").state, ServerState::Connected);
    let text = call(&manager, "mcp__bad__crash", json!({})).await;
    assert!(text.is_err());
    let reason = wait_failed(&manager, "bad", UP).await;
    assert!(reason.contains("crashing on purpose"), "{reason}");
    assert!(reason.len() < 2_000, "{} chars", reason.len());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_breaks_the_connection_with_an_escaped_quote_and_is_recovered() {
    let manager = pair(Duration::from_secs(3)).await;
    let err = during(
        &manager,
        "bad json",
        call(&manager, "mcp__bad__bad_json", json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err:?}");
    let reason = lost_reason(&err);
    assert!(reason.contains("non-JSON-RPC output"), "{reason}");
    assert!(reason.contains(r#"\"result\": {\"content\""#) || reason.contains("result"));
    reconnected_with_backoff(&manager).await;

    // Well-formed JSON-RPC of the wrong shape: an Execution error, never a panic or a hang
    // beyond the call timeout.
    let started = Instant::now();
    let err = call(&manager, "mcp__bad__bad_result", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Protocol { .. }), "{err:?}");
    assert_eq!(err.stage(), McpStage::Execution, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    sibling_answers(&manager, "after bad result").await;
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_and_progress_floods_are_thinned_and_the_call_completes() {
    let manager = pair(Duration::from_secs(120)).await;
    let count = 30_000;

    let (sink, seen) = collector();
    let started = Instant::now();
    let flood = manager.call(
        "mcp__bad__flood",
        json!({"count": count, "kind": "progress"}),
        CancellationToken::new(),
        Some(sink),
    );
    let result = during(&manager, "progress flood", flood).await.unwrap();
    assert_eq!(result.text(), format!("flooded {count} progress"));
    let delivered = seen.lock().unwrap().len() as u128;
    // A burst of 20, then at most one event per 50 ms (the default interval).
    let bound = started.elapsed().as_millis() / 50 + 20;
    eprintln!("progress flood: {count} sent, {delivered} delivered, bound {bound}");
    assert!(
        delivered >= 1 && delivered <= bound,
        "{delivered} > {bound}"
    );

    for kind in ["log", "stray_progress", "list_changed"] {
        let text = during(
            &manager,
            kind,
            call(
                &manager,
                "mcp__bad__flood",
                json!({"count": count, "kind": kind}),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{kind} flood: {e}"));
        assert_eq!(text, format!("flooded {count} {kind}"));
    }
    // 30,000 list_changed notifications coalesce into a few listings, and the catalog is whole.
    let ok = manager
        .wait_for(UP, |all| {
            all.iter()
                .any(|s| s.server == "bad" && s.tools_refreshed >= 1)
        })
        .await;
    assert!(ok);
    let refreshed = status_of(&manager, "bad").tools_refreshed;
    eprintln!("list_changed flood: {count} notifications, {refreshed} listings");
    assert!(refreshed < 1_000, "{refreshed} listings");
    assert_eq!(status_of(&manager, "bad").state, ServerState::Connected);
    assert!(manager.entry("mcp__bad__echo").is_some());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_changing_mid_run_is_followed_and_removed_tools_are_discovery_errors() {
    let manager = pair(Duration::from_secs(30)).await;
    let text = during(
        &manager,
        "swap",
        call(&manager, "mcp__bad__swap_tools", json!({"rounds": 10})),
    )
    .await
    .unwrap();
    assert!(text.ends_with("swap_9_0,swap_9_1,swap_9_2"), "{text}");
    let ok = manager
        .wait_for(UP, |_| manager.entry("mcp__bad__swap_9_2").is_some())
        .await;
    assert!(ok, "the last list was not fetched");
    assert!(manager.entry("mcp__bad__swap_0_0").is_none());
    let err = call(&manager, "mcp__bad__swap_0_0", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Discovery, "{err:?}");
    assert_eq!(
        call(&manager, "mcp__bad__swap_9_1", json!({}))
            .await
            .unwrap(),
        "called swap_9_1"
    );
    assert!(manager.entry("mcp__good__echo").is_some());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_one_server_never_removes_the_siblings_tools() {
    let manager = Arc::new(pair(Duration::from_secs(2)).await);
    let good_tools = status_of(&manager, "good").tool_count;
    for (tool, args) in [
        ("crash_mid", json!({})),
        ("bad_json", json!({})),
        ("big", json!({"mb": 20})),
    ] {
        wait_connected(&manager, "bad", UP).await;
        let err = call(&manager, &format!("mcp__bad__{tool}"), args)
            .await
            .unwrap_err();
        assert_eq!(err.stage(), McpStage::Execution, "{tool}: {err:?}");
        assert_eq!(status_of(&manager, "good").state, ServerState::Connected);
        assert_eq!(status_of(&manager, "good").tool_count, good_tools);
    }
    manager.shutdown().await;
}
