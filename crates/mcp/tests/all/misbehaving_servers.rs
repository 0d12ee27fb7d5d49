//! The client against the misbehaving fixture server (tests/fixtures/misbehaving_server.py):
//! crash, hang, garbage, bad schemas, pagination, old protocol, progress, cancellation,
//! list_changed, elicitation, sampling, argument checks.

use crate::common;

use std::time::{Duration, Instant};

use aibuddy_mcp::{ElicitationResponse, McpError, McpStage, ServerState, Timeouts};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(20);

fn no_cancel() -> CancellationToken {
    CancellationToken::new()
}

#[tokio::test]
async fn calls_work_and_old_protocol_servers_are_accepted() {
    init_tracing();
    let mut new = fixture("new", &[]);
    new.trust_annotations = true;
    let manager = start(vec![new, fixture("old", &["--protocol", "2024-11-05"])]);
    wait_connected(&manager, "new", UP).await;
    wait_connected(&manager, "old", UP).await;
    assert_eq!(
        status_of(&manager, "new").protocol_version.as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(
        status_of(&manager, "old").protocol_version.as_deref(),
        Some("2024-11-05")
    );
    assert_eq!(
        status_of(&manager, "old").server_info.as_deref(),
        Some("misbehaving-fixture 1.0.0")
    );
    for server in ["new", "old"] {
        let result = manager
            .call(
                &format!("mcp__{server}__add"),
                json!({"a": 2, "b": 40}),
                no_cancel(),
                None,
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "42");
        assert!(!result.is_error);
    }
    // "new" is trustAnnotations: its hints set the level.
    let entry = manager.entry("mcp__new__echo").unwrap();
    assert!(entry.risk.read_only);
    assert_eq!(entry.risk.level, aibuddy_mcp::McpRiskLevel::ReadOnly);
    let add = manager.entry("mcp__new__add").unwrap();
    assert_eq!(add.risk.level, aibuddy_mcp::McpRiskLevel::Write);
    // "old" is not: the same hints leave every tool high impact.
    for tool in ["echo", "add"] {
        let entry = manager.entry(&format!("mcp__old__{tool}")).unwrap();
        assert_eq!(entry.risk.level, aibuddy_mcp::McpRiskLevel::HighImpact);
        assert!(!entry.risk.annotations_trusted);
    }
    let crash = manager.entry("mcp__new__crash").unwrap();
    assert!(
        crash.risk.is_high_impact(),
        "no annotations means destructive"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_map_to_their_stages() {
    let manager = start(vec![fixture("fx", &[])]);
    wait_connected(&manager, "fx", UP).await;
    let err = manager
        .call("mcp__fx__nope", json!({}), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Discovery, "{err}");
    let err = manager
        .call(
            "mcp__fx__add",
            json!({"a": "two", "b": 1}),
            no_cancel(),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::InvalidArguments { .. }), "{err}");
    assert_eq!(err.stage(), McpStage::Parameters);
    assert!(err.to_string().contains("/a"), "{err}");
    let err = manager
        .call("mcp__fx__add", json!([1, 2]), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Parameters);
    manager.shutdown().await;
}

#[tokio::test]
async fn bad_schemas_are_left_out_with_reasons_and_siblings_stay() {
    let manager = start(vec![fixture("fx", &["--bad-schema"])]);
    wait_connected(&manager, "fx", UP).await;
    let names: Vec<String> = manager.catalog().into_iter().map(|e| e.name).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("bad_") || n == "no_type")
    );
    let status = status_of(&manager, "fx");
    assert_eq!(status.tool_count, 9);
    let mut rejected: Vec<(String, String)> = status
        .rejected_tools
        .iter()
        .map(|r| (r.tool.clone(), r.reason.clone()))
        .collect();
    rejected.sort();
    assert_eq!(rejected.len(), 3, "{rejected:?}");
    assert_eq!(rejected[0].0, "bad_keyword");
    assert!(rejected[0].1.contains("does not compile"));
    assert_eq!(rejected[1].0, "bad_type");
    assert_eq!(rejected[2].0, "no_type");
    manager.shutdown().await;
}

#[tokio::test]
async fn tools_list_follows_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let manager = start(vec![fixture(
        "paged",
        &[
            "--tools",
            "25",
            "--page-size",
            "4",
            "--record",
            rec.to_str().unwrap(),
        ],
    )]);
    wait_connected(&manager, "paged", UP).await;
    let catalog = manager.catalog();
    assert_eq!(catalog.len(), 9 + 25);
    assert!(
        catalog
            .iter()
            .any(|e| e.qualified_name == "mcp__paged__tool_024")
    );
    let cursors: Vec<Option<String>> = recorded(&rec)
        .iter()
        .filter(|m| m["method"] == "tools/list")
        .map(|m| m["params"]["cursor"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(cursors.len(), 9, "34 tools in pages of 4: {cursors:?}");
    assert_eq!(cursors[0], None);
    assert_eq!(cursors[1].as_deref(), Some("page-4"));
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crashing_server_loses_its_tools_with_a_reason_and_comes_back() {
    init_tracing();
    let manager = start(vec![fixture("fx", &[]), fixture("steady", &[])]);
    wait_connected(&manager, "fx", UP).await;
    wait_connected(&manager, "steady", UP).await;
    let mut changes = manager.subscribe();
    let err = manager
        .call("mcp__fx__crash", json!({}), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err}");
    assert!(matches!(err, McpError::ConnectionLost { .. }), "{err}");
    let reason = wait_failed(&manager, "fx", UP).await;
    assert!(reason.contains("exited"), "{reason}");
    assert!(
        reason.contains("crashing on purpose"),
        "stderr tail in the reason: {reason}"
    );
    assert!(changes.has_changed().unwrap());
    // Its tools are gone while it is down; the other server is untouched.
    assert!(
        manager.catalog().iter().all(|e| e.server != "fx")
            || status_of(&manager, "fx").state == ServerState::Connected
    );
    assert_eq!(status_of(&manager, "steady").state, ServerState::Connected);
    let ok = manager
        .call(
            "mcp__steady__echo",
            json!({"message": "still here"}),
            no_cancel(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(ok.text(), "echo: still here");
    // Reconnected with backoff.
    wait_connected(&manager, "fx", UP).await;
    let ok = manager
        .call(
            "mcp__fx__echo",
            json!({"message": "back"}),
            no_cancel(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(ok.text(), "echo: back");
    changes.borrow_and_update();
    manager.shutdown().await;
}

#[tokio::test]
async fn a_hanging_server_times_out_fails_and_reconnects() {
    let mut cfg = fixture("fx", &[]);
    cfg.timeouts = Timeouts {
        connect: Duration::from_secs(20),
        call: Duration::from_millis(800),
    };
    let manager = start(vec![cfg]);
    wait_connected(&manager, "fx", UP).await;
    let started = Instant::now();
    let err = manager
        .call("mcp__fx__hang", json!({}), no_cancel(), None)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    assert_eq!(err.stage(), McpStage::Execution);
    assert!(started.elapsed() < Duration::from_secs(5));
    let reason = wait_failed(&manager, "fx", UP).await;
    assert!(reason.contains("unresponsive"), "{reason}");
    assert!(reason.contains("no answer to ping"), "{reason}");
    assert!(
        manager.catalog().is_empty() || status_of(&manager, "fx").state == ServerState::Connected
    );
    wait_connected(&manager, "fx", UP).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_tool_on_a_responsive_server_times_out_without_a_reconnect() {
    let mut cfg = fixture("fx", &[]);
    cfg.timeouts.call = Duration::from_millis(500);
    let manager = start(vec![cfg]);
    wait_connected(&manager, "fx", UP).await;
    let err = manager
        .call(
            "mcp__fx__slow",
            json!({"steps": 10, "step_ms": 200}),
            no_cancel(),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    // The ping passes, so the server stays connected.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_breaks_the_connection_with_the_line_as_reason() {
    let manager = start(vec![fixture("fx", &[])]);
    wait_connected(&manager, "fx", UP).await;
    let err = manager
        .call("mcp__fx__garbage", json!({}), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err}");
    let reason = wait_failed(&manager, "fx", UP).await;
    assert!(reason.contains("non-JSON-RPC output"), "{reason}");
    assert!(reason.contains("this is not json-rpc"), "{reason}");
    wait_connected(&manager, "fx", UP).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn servers_that_fail_at_startup_are_reported_and_the_rest_goes_on() {
    let mut hang = fixture("hang", &["--hang-on-init"]);
    hang.timeouts.connect = Duration::from_millis(800);
    let manager = start(vec![
        fixture("refuses", &["--crash-on-start"]),
        fixture("garbage", &["--garbage-on-init"]),
        hang,
        ServerConfig::stdio("missing", "/nonexistent/mcp-server", vec![]),
        fixture("good", &[]),
    ]);
    wait_connected(&manager, "good", UP).await;
    let refuses = wait_failed(&manager, "refuses", UP).await;
    assert!(refuses.contains("refusing to start"), "{refuses}");
    let garbage = wait_failed(&manager, "garbage", UP).await;
    assert!(
        garbage.contains("Welcome to the garbage server"),
        "{garbage}"
    );
    let hang = wait_failed(&manager, "hang", UP).await;
    assert!(hang.contains("no answer to initialize"), "{hang}");
    let missing = wait_failed(&manager, "missing", UP).await;
    assert!(missing.contains("cannot start"), "{missing}");
    assert!(manager.catalog().iter().all(|e| e.server == "good"));
    assert_eq!(manager.catalog().len(), 9);
    let err = manager
        .call(
            "mcp__refuses__echo",
            json!({"message": "x"}),
            no_cancel(),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::ServerUnavailable { server, reason } if server == "refuses" && reason.contains("refusing to start")),
        "a tool of a server that is down names the server and its reason: {err}"
    );
    assert_eq!(err.stage(), McpStage::Execution);
    let err = manager
        .call("mcp__nobody__echo", json!({}), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Discovery, "{err}");
    manager.shutdown().await;
}

use aibuddy_mcp::ServerConfig;

#[tokio::test]
async fn reconnects_with_backoff_until_the_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("starts");
    let manager = start(vec![fixture(
        "flaky",
        &["--state", state.to_str().unwrap(), "--crash-first-n", "3"],
    )]);
    let mut seen_reconnecting = false;
    let mut seen_failed = false;
    let deadline = Instant::now() + UP;
    while Instant::now() < deadline {
        match status_of(&manager, "flaky").state {
            ServerState::Connected => break,
            ServerState::Reconnecting { attempt, .. } => {
                seen_reconnecting = true;
                assert!(attempt >= 1);
            }
            ServerState::Failed { retry_in_ms, .. } => {
                seen_failed = true;
                assert!(retry_in_ms.is_some());
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status_of(&manager, "flaky").state, ServerState::Connected);
    assert!(seen_failed && seen_reconnecting);
    assert_eq!(std::fs::read_to_string(&state).unwrap().trim(), "4");
    manager.shutdown().await;
}

#[tokio::test]
async fn progress_reaches_the_sink() {
    let manager = start(vec![fixture("fx", &[])]);
    wait_connected(&manager, "fx", UP).await;
    let (sink, seen) = collector();
    let result = manager
        .call(
            "mcp__fx__slow",
            json!({"steps": 3, "step_ms": 50}),
            no_cancel(),
            Some(sink),
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "slow done after 3 steps");
    let seen = seen.lock().unwrap().clone();
    let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(steps, vec![1.0, 2.0, 3.0]);
    assert_eq!(seen[0].total, Some(3.0));
    assert_eq!(seen[0].message.as_deref(), Some("step 1"));
    assert_eq!(seen[0].tool, "slow");
    manager.shutdown().await;
}

#[tokio::test]
async fn cancelling_sends_notifications_cancelled_and_drops_later_progress() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let manager = start(vec![fixture("fx", &["--record", rec.to_str().unwrap()])]);
    wait_connected(&manager, "fx", UP).await;
    let (sink, seen) = collector();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let watch = seen.clone();
    tokio::spawn(async move {
        while watch.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        canceller.cancel();
    });
    let started = Instant::now();
    let err = manager
        .call(
            "mcp__fx__slow",
            json!({"steps": 30, "step_ms": 100}),
            cancel,
            Some(sink),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Cancelled { .. }), "{err}");
    assert_eq!(err.stage(), McpStage::Execution);
    assert!(started.elapsed() < Duration::from_secs(2));
    let count_at_cancel = seen.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        seen.lock().unwrap().len(),
        count_at_cancel,
        "no progress after cancellation"
    );
    let messages = recorded(&rec);
    let call_id = messages
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "slow")
        .map(|m| m["id"].clone())
        .unwrap();
    let cancelled = messages
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("notifications/cancelled was sent");
    assert_eq!(cancelled["params"]["requestId"], call_id);
    assert!(
        messages.iter().any(|m| m["fixture"] == "slow_cancelled"),
        "the server saw it"
    );
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn list_changed_refreshes_the_catalog() {
    let manager = start(vec![fixture("fx", &[])]);
    wait_connected(&manager, "fx", UP).await;
    assert!(manager.entry("mcp__fx__fresh_tool").is_none());
    manager
        .call(
            "mcp__fx__add_tool",
            json!({"name": "fresh_tool"}),
            no_cancel(),
            None,
        )
        .await
        .unwrap();
    let ok = manager
        .wait_for(UP, |all| {
            all.iter()
                .any(|s| s.server == "fx" && s.tools_refreshed >= 1 && s.tool_count == 10)
        })
        .await;
    assert!(ok, "{:?}", status_of(&manager, "fx"));
    let result = manager
        .call("mcp__fx__fresh_tool", json!({}), no_cancel(), None)
        .await
        .unwrap();
    assert_eq!(result.text(), "called fresh_tool");
    manager.shutdown().await;
}

#[tokio::test]
async fn elicitation_goes_to_the_broker_with_defaults_applied() {
    let broker = FixedBroker::new(ElicitationResponse::Accept(serde_json::Map::from_iter([(
        "name".to_owned(),
        json!("Grace"),
    )])));
    let manager = start_with_broker(vec![fixture("fx", &[])], broker.clone());
    wait_connected(&manager, "fx", UP).await;
    let result = manager
        .call("mcp__fx__elicit", json!({}), no_cancel(), None)
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&result.text()).unwrap();
    assert_eq!(answer["action"], "accept");
    assert_eq!(answer["content"], json!({"name": "Grace", "age": 36}));
    let seen = broker.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].server, "fx");
    assert_eq!(seen[0].message, "Who are you?");
    assert_eq!(seen[0].defaults.get("age"), Some(&json!(36)));

    let decline = FixedBroker::new(ElicitationResponse::Decline);
    let manager2 = start_with_broker(vec![fixture("fx", &[])], decline);
    wait_connected(&manager2, "fx", UP).await;
    let result = manager2
        .call("mcp__fx__elicit", json!({}), no_cancel(), None)
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&result.text()).unwrap();
    assert_eq!(answer["action"], "decline");
    manager.shutdown().await;
    manager2.shutdown().await;
}

#[tokio::test]
async fn sampling_is_declined_with_a_clear_error() {
    let manager = start(vec![fixture("fx", &[])]);
    wait_connected(&manager, "fx", UP).await;
    let result = manager
        .call("mcp__fx__sample", json!({}), no_cancel(), None)
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&result.text()).unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("sampling/createMessage is declined"),
        "{answer}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn disabled_servers_are_never_started() {
    let mut cfg = fixture("off", &[]);
    cfg.enabled = false;
    let manager = start(vec![cfg]);
    assert!(manager.wait_until_settled(Duration::from_secs(1)).await);
    assert_eq!(status_of(&manager, "off").state, ServerState::Disabled);
    let err = manager
        .call("mcp__off__echo", json!({"message": "x"}), no_cancel(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Discovery);
    manager.shutdown().await;
}

#[tokio::test]
async fn project_config_files_drive_the_manager_and_bad_entries_do_not_stop_the_rest() {
    let project = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".aibuddy")).unwrap();
    let script = fixture_script();
    std::fs::write(
        project.path().join(".aibuddy/mcp.json"),
        json!({"mcpServers": {
            "fx": {"command": "python3", "args": [script], "timeouts": {"call": 5}},
            "broken": {"command": "python3", "args": "not-a-list"}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        user.path().join("mcp.json"),
        json!({"mcpServers": {
            "fx": {"command": "/nonexistent/overridden-by-project"},
            "old": {"command": "python3", "args": [fixture_script(), "--protocol", "2024-11-05"]}
        }})
        .to_string(),
    )
    .unwrap();
    let loaded = aibuddy_mcp::load_server_configs(project.path(), Some(user.path()));
    assert_eq!(loaded.errors.len(), 1);
    let error = loaded.errors[0].to_string();
    assert!(
        // The place is the `"args"` key of the one-line file: line 1, column 26.
        error.contains(".aibuddy/mcp.json:1:26: server \"broken\": field \"args\""),
        "{error}"
    );
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["fx", "old"]);
    assert_eq!(loaded.servers[0].timeouts.call, Duration::from_secs(5));
    let manager = start(loaded.servers);
    wait_connected(&manager, "fx", UP).await;
    wait_connected(&manager, "old", UP).await;
    assert_eq!(manager.catalog().len(), 18);
    manager.shutdown().await;
}
