//! Hostile tool lists and hostile connections, against the misbehaving fixture
//! (tests/fixtures/misbehaving_server.py): pagination that never ends, 10,000 tools, tool names
//! with escape sequences or 300 characters, megabyte descriptions and schemas, schemas with `$ref`
//! loops and remote or file `$ref`s (never fetched), a megabyte JSON-RPC error message, and a
//! server that closes its stdout but keeps running.

use crate::common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use aibuddy_mcp::catalog::{MAX_DESCRIPTION_CHARS, MAX_TITLE_CHARS};
use aibuddy_mcp::listing::MAX_LISTED_TOOLS;
use aibuddy_mcp::{McpError, McpStage, ServerState, Timeouts};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(20);

/// The fixture's fixed tools (echo, add, crash, hang, garbage, slow, add_tool, elicit, sample).
const FIXED_TOOLS: usize = 9;

/// A fixture whose connect timeout is a minute: a listing that fails sooner failed for its own
/// reason, not because the timeout ran out.
fn slow_to_time_out(name: &str, extra: &[&str]) -> aibuddy_mcp::ServerConfig {
    let mut config = fixture(name, extra);
    config.timeouts = Timeouts {
        connect: Duration::from_secs(60),
        call: Duration::from_secs(60),
    };
    config
}

#[tokio::test]
async fn a_cursor_loop_fails_the_listing_at_once_naming_the_loop() {
    let started = Instant::now();
    let manager = start(vec![
        slow_to_time_out("loop", &["--cursor-loop"]),
        fixture("ok", &[]),
    ]);
    let reason = wait_failed(&manager, "loop", UP).await;
    assert!(
        reason.contains("names the cursor \"again\" again after 2 pages"),
        "{reason}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{reason}");
    wait_connected(&manager, "ok", UP).await;
    assert!(manager.catalog().iter().all(|e| e.server == "ok"));
    manager.shutdown().await;
}

#[tokio::test]
async fn endless_pages_stop_at_a_bound_with_a_reason() {
    let started = Instant::now();
    let manager = start(vec![slow_to_time_out("endless", &["--endless-pages"])]);
    let reason = wait_failed(&manager, "endless", Duration::from_secs(40)).await;
    assert!(
        reason.contains(&format!("more than {MAX_LISTED_TOOLS} tools")),
        "{reason}"
    );
    assert!(started.elapsed() < Duration::from_secs(40), "{reason}");
    assert!(manager.catalog().is_empty());
    manager.shutdown().await;
}

#[tokio::test]
async fn ten_thousand_tools_are_listed_and_one_more_is_refused() {
    let extra = (MAX_LISTED_TOOLS - FIXED_TOOLS).to_string();
    let over = (MAX_LISTED_TOOLS - FIXED_TOOLS + 1).to_string();
    let manager = start(vec![
        fixture("many", &["--tools", &extra, "--page-size", "1000"]),
        slow_to_time_out("toomany", &["--tools", &over]),
    ]);
    wait_connected(&manager, "many", Duration::from_secs(60)).await;
    assert_eq!(status_of(&manager, "many").tool_count, MAX_LISTED_TOOLS);
    let last = format!("mcp__many__tool_{}", MAX_LISTED_TOOLS - FIXED_TOOLS - 1);
    let result = manager
        .call(&last, json!({}), CancellationToken::new(), None)
        .await
        .unwrap();
    assert!(result.text().starts_with("called tool_"), "{result:?}");
    let reason = wait_failed(&manager, "toomany", Duration::from_secs(60)).await;
    assert!(
        reason.contains(&format!("more than {MAX_LISTED_TOOLS} tools")),
        "{reason}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn hostile_names_descriptions_and_schemas_are_bounded_or_left_out() {
    // Anything that fetched the remote `$ref` would connect here.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let ref_url = format!("http://{}/schema.json", listener.local_addr().unwrap());
    let manager = start(vec![fixture(
        "fx",
        &["--hostile-tools", "--ref-url", &ref_url],
    )]);
    wait_connected(&manager, "fx", UP).await;
    let catalog = manager.catalog();

    // The description and title are cut, with a note of their full length.
    let verbose = catalog.iter().find(|e| e.name == "verbose").unwrap();
    assert!(verbose.description.starts_with("Does a thing. blah"));
    assert!(
        verbose.description.chars().count() < MAX_DESCRIPTION_CHARS + 100,
        "{}",
        verbose.description.len()
    );
    assert!(
        verbose
            .description
            .ends_with("[... description cut at 2048 of 1000014 characters]"),
        "{}",
        &verbose.description[MAX_DESCRIPTION_CHARS..]
    );
    let title = verbose.title.as_deref().unwrap();
    assert!(title.chars().count() < MAX_TITLE_CHARS + 100, "{title}");

    let status = status_of(&manager, "fx");
    let reason_of = |tool: &str| {
        status
            .rejected_tools
            .iter()
            .find(|r| r.tool == tool)
            .map(|r| r.reason.clone())
            .unwrap_or_else(|| panic!("{tool} not rejected: {:?}", status.rejected_tools))
    };
    assert!(
        reason_of("esc\u{1b}[2K\rname").contains("control characters"),
        "{status:?}"
    );
    let long = format!("long_{}...", "n".repeat(123));
    assert_eq!(
        reason_of(&long),
        "tool name is 300 characters, more than 128"
    );
    assert!(
        reason_of("huge_schema").starts_with("input schema is "),
        "{status:?}"
    );
    assert!(
        reason_of("remote_ref").contains("does not compile"),
        "{status:?}"
    );
    assert!(
        reason_of("file_ref").contains("does not compile"),
        "{status:?}"
    );
    assert!(
        listener.accept().is_err(),
        "the remote $ref was fetched: a schema must never reach the network"
    );

    // The `$ref` loop is accepted or left out, but never hangs or crashes a call.
    if let Some(entry) = catalog.iter().find(|e| e.name == "ref_loop") {
        let err = manager
            .call(
                &entry.qualified_name,
                json!({"a": {"b": 1}}),
                CancellationToken::new(),
                None,
            )
            .await;
        match err {
            Ok(result) => assert_eq!(result.text(), "called ref_loop"),
            Err(e) => assert_eq!(e.stage(), McpStage::Parameters, "{e}"),
        }
    }
    // The well-behaved tools stay.
    let result = manager
        .call(
            "mcp__fx__echo",
            json!({"message": "hi"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "echo: hi");
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_closes_stdout_and_keeps_running_fails_the_call_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let manager = start(vec![slow_to_time_out(
        "mute",
        &["--close-stdout", "--record", rec.to_str().unwrap()],
    )]);
    wait_connected(&manager, "mute", UP).await;
    let started = Instant::now();
    let err = manager
        .call(
            "mcp__mute__echo",
            json!({"message": "x"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err}");
    assert!(matches!(err, McpError::ConnectionLost { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call waited {:?} (the call timeout is 60 s)",
        started.elapsed()
    );
    let reason = wait_failed(&manager, "mute", UP).await;
    assert!(!reason.is_empty());
    wait_connected(&manager, "mute", UP).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn a_megabyte_error_message_is_cut() {
    let manager = start(vec![fixture("fx", &["--hostile-tools"])]);
    wait_connected(&manager, "fx", UP).await;
    let err = manager
        .call(
            "mcp__fx__big_error",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Execution, "{err}");
    let McpError::Server { code, message, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, -32000);
    assert!(
        message.ends_with("[... message cut at 4096 of 1048576 characters]"),
        "{}",
        &message[message.len().saturating_sub(100)..]
    );
    assert!(err.to_string().len() < 5_000);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_tool_listed_later_never_takes_over_another_servers_name() {
    // `mcp__a__b__echo` is server `a__b`'s echo. Server `a` then registers `b__echo`, whose
    // qualified name is the same after sanitising and which sorts first.
    let manager = start(vec![fixture("a", &[]), fixture("a__b", &[])]);
    wait_connected(&manager, "a", UP).await;
    wait_connected(&manager, "a__b", UP).await;
    let owner = |manager: &aibuddy_mcp::McpManager| {
        manager
            .catalog()
            .into_iter()
            .find(|e| e.qualified_name == "mcp__a__b__echo")
            .map(|e| (e.server, e.name))
    };
    assert_eq!(owner(&manager), Some(("a__b".into(), "echo".into())));
    manager
        .call(
            "mcp__a__add_tool",
            json!({"name": "b__echo"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    let deadline = Instant::now() + UP;
    while !manager.catalog().iter().any(|e| e.name == "b__echo") {
        assert!(Instant::now() < deadline, "b__echo never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(owner(&manager), Some(("a__b".into(), "echo".into())));
    let newcomer = manager
        .catalog()
        .into_iter()
        .find(|e| e.name == "b__echo")
        .unwrap();
    assert_ne!(newcomer.qualified_name, "mcp__a__b__echo");
    let result = manager
        .call(
            "mcp__a__b__echo",
            json!({"message": "hi"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (result.server.as_str(), result.text().as_str()),
        ("a__b", "echo: hi")
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_left_out_tool_is_named_by_the_name_it_was_given() {
    // Server `a` registers `b__echo`, which collides with `a__b`'s echo and gets another name;
    // then its schema becomes unusable: it is left out, under the name it was given, not the
    // default one (`mcp__a__b__echo`, the name of `a__b`'s working echo).
    let manager = start(vec![fixture("a", &[]), fixture("a__b", &[])]);
    wait_connected(&manager, "a", UP).await;
    wait_connected(&manager, "a__b", UP).await;
    let add = |schema: Option<serde_json::Value>| {
        let mut args = json!({"name": "b__echo"});
        if let Some(schema) = schema {
            args["schema"] = schema;
        }
        manager.call("mcp__a__add_tool", args, CancellationToken::new(), None)
    };
    add(None).await.unwrap();
    let deadline = Instant::now() + UP;
    let given = loop {
        if let Some(e) = manager.catalog().into_iter().find(|e| e.name == "b__echo") {
            break e.qualified_name;
        }
        assert!(Instant::now() < deadline, "b__echo never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(given, "mcp__a__b__echo");
    assert_eq!(manager.qualified_name("a", "b__echo"), given);
    add(Some(json!({"type": "string"}))).await.unwrap();
    let left_out = |manager: &aibuddy_mcp::McpManager| {
        manager
            .status()
            .into_iter()
            .find(|s| s.server == "a")
            .is_some_and(|s| s.rejected_tools.iter().any(|r| r.tool == "b__echo"))
    };
    let deadline = Instant::now() + UP;
    while !left_out(&manager) {
        assert!(Instant::now() < deadline, "b__echo never left out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(manager.catalog().iter().all(|e| e.name != "b__echo"));
    assert_eq!(manager.qualified_name("a", "b__echo"), given);
    // Names never given: the default.
    assert_eq!(
        manager.qualified_name("a", "never.listed"),
        "mcp__a__never_listed"
    );
    assert_eq!(manager.qualified_name("a__b", "echo"), "mcp__a__b__echo");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_name_stays_with_its_server_while_the_server_is_down() {
    // `mcp__a__b__echo` is server `a__b`'s echo. `a__b` crashes and waits a long backoff (its
    // tools leave the catalog); meanwhile server `a` registers `b__echo`, whose qualified name
    // is the same after sanitising and which sorts first.
    let mut options = fast_options();
    options.backoff = aibuddy_mcp::Backoff {
        base: Duration::from_secs(120),
        max: Duration::from_secs(120),
    };
    let manager = aibuddy_mcp::McpManager::start(
        vec![fixture("a", &[]), fixture("a__b", &[])],
        aibuddy_mcp::McpHandlers::default(),
        options,
    );
    wait_connected(&manager, "a", UP).await;
    wait_connected(&manager, "a__b", UP).await;
    let owner = |manager: &aibuddy_mcp::McpManager, qualified: &str| {
        manager
            .catalog()
            .into_iter()
            .find(|e| e.qualified_name == qualified)
            .map(|e| (e.server, e.name))
    };
    assert_eq!(
        owner(&manager, "mcp__a__b__echo"),
        Some(("a__b".into(), "echo".into()))
    );
    let crashed = manager
        .call(
            "mcp__a__b__crash",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await;
    assert!(crashed.is_err(), "{crashed:?}");
    wait_failed(&manager, "a__b", UP).await;
    assert!(manager.catalog().iter().all(|e| e.server == "a"));

    manager
        .call(
            "mcp__a__add_tool",
            json!({"name": "b__echo"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    let deadline = Instant::now() + UP;
    let newcomer = loop {
        if let Some(e) = manager.catalog().into_iter().find(|e| e.name == "b__echo") {
            break e.qualified_name;
        }
        assert!(Instant::now() < deadline, "b__echo never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(newcomer, "mcp__a__b__echo");
    assert_eq!(owner(&manager, "mcp__a__b__echo"), None);
    // A call by the old name does not reach `a`: its owner is down.
    let err = manager
        .call(
            "mcp__a__b__echo",
            json!({"message": "hi"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpError::ServerUnavailable { ref server, .. } if server == "a__b"),
        "{err:?}"
    );

    // `a__b` comes back (woken before its backoff ends) and gets its old name back.
    assert!(manager.reconnect("a__b"));
    wait_connected(&manager, "a__b", UP).await;
    assert_eq!(
        owner(&manager, "mcp__a__b__echo"),
        Some(("a__b".into(), "echo".into()))
    );
    assert_eq!(
        owner(&manager, &newcomer),
        Some(("a".into(), "b__echo".into()))
    );
    let result = manager
        .call(
            "mcp__a__b__echo",
            json!({"message": "hi"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (result.server.as_str(), result.text().as_str()),
        ("a__b", "echo: hi")
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_call_by_name_while_servers_are_down_names_the_names_owner() {
    // Both `a` and `a__b` are down; `mcp__a__b__echo` starts like names of either, and belongs
    // to `a__b`.
    let mut options = fast_options();
    options.backoff = aibuddy_mcp::Backoff {
        base: Duration::from_secs(120),
        max: Duration::from_secs(120),
    };
    let manager = aibuddy_mcp::McpManager::start(
        vec![fixture("a", &[]), fixture("a__b", &[])],
        aibuddy_mcp::McpHandlers::default(),
        options,
    );
    for server in ["a", "a__b"] {
        wait_connected(&manager, server, UP).await;
    }
    for server in ["a", "a__b"] {
        let crashed = manager
            .call(
                &format!("mcp__{server}__crash"),
                json!({}),
                CancellationToken::new(),
                None,
            )
            .await;
        assert!(crashed.is_err(), "{crashed:?}");
        wait_failed(&manager, server, UP).await;
    }
    for (name, owner) in [("mcp__a__b__echo", "a__b"), ("mcp__a__echo", "a")] {
        let err = manager
            .call(name, json!({}), CancellationToken::new(), None)
            .await
            .unwrap_err();
        assert_eq!(err.stage(), McpStage::Execution, "{err:?}");
        assert!(
            matches!(err, McpError::ServerUnavailable { ref server, .. } if server == owner),
            "{name}: {err:?}"
        );
    }
    // A name never given out is still unknown.
    let err = manager
        .call("mcp__zz__echo", json!({}), CancellationToken::new(), None)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::UnknownTool { .. }), "{err:?}");
    manager.shutdown().await;
}

#[tokio::test]
async fn an_elicitation_with_no_call_in_flight_is_declined_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let broker = FixedBroker::new(aibuddy_mcp::ElicitationResponse::Accept(
        serde_json::Map::from_iter([("token".to_owned(), json!("sk-secret"))]),
    ));
    let manager = start_with_broker(
        vec![fixture(
            "idle",
            &["--elicit-when-idle", "--record", rec.to_str().unwrap()],
        )],
        broker.clone(),
    );
    wait_connected(&manager, "idle", UP).await;
    let deadline = Instant::now() + UP;
    let answer = loop {
        if let Some(a) = recorded(&rec)
            .into_iter()
            .find(|m| m["fixture"] == "idle_elicit_answer")
        {
            break a["answer"].clone();
        }
        assert!(Instant::now() < deadline, "the fixture got no answer");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(answer["result"]["action"], "decline", "{answer}");
    assert!(
        broker.seen.lock().unwrap().is_empty(),
        "the person was asked"
    );
    // During a call, the same server's request still reaches the person.
    let result = manager
        .call(
            "mcp__idle__elicit",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(result.text().contains("accept"), "{result:?}");
    assert_eq!(broker.seen.lock().unwrap().len(), 1);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_long_server_name_is_cut_in_the_status() {
    let manager = start(vec![fixture("fx", &["--long-server-info"])]);
    wait_connected(&manager, "fx", UP).await;
    let info = status_of(&manager, "fx").server_info.unwrap();
    assert!(info.starts_with("nnnn"), "{info}");
    assert!(
        info.ends_with("[... server name cut at 256 of 100006 characters]"),
        "{info}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn an_answer_with_the_wrong_id_is_ignored_and_the_call_times_out() {
    let mut config = fixture("fx", &["--hostile-tools"]);
    config.timeouts.call = Duration::from_secs(2);
    let manager = start(vec![config]);
    wait_connected(&manager, "fx", UP).await;
    let started = Instant::now();
    let err = manager
        .call(
            "mcp__fx__wrong_id",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err:?}");
    assert_eq!(err.stage(), McpStage::Execution);
    assert!(started.elapsed() < Duration::from_secs(15));
    // The server still answers pings: it stays connected and its tools work.
    let result = manager
        .call(
            "mcp__fx__echo",
            json!({"message": "still here"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "echo: still here");
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_megabyte_elicitation_message_is_cut_before_the_person_sees_it() {
    let broker = FixedBroker::new(aibuddy_mcp::ElicitationResponse::Decline);
    let manager = start_with_broker(vec![fixture("fx", &["--hostile-tools"])], broker.clone());
    wait_connected(&manager, "fx", UP).await;
    let result = manager
        .call(
            "mcp__fx__big_elicit",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(result.text().contains("decline"), "{result:?}");
    let seen = broker.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0]
            .message
            .ends_with("[... message cut at 4096 of 1048576 characters]"),
        "{}",
        seen[0].message.len()
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_sustained_list_changed_storm_costs_one_listing_per_interval() {
    let manager = start(vec![fixture("storm", &["--chaos"])]);
    wait_connected(&manager, "storm", UP).await;
    let started = Instant::now();
    // One notification every 2 ms for about 3 s (at least 1,500 notifications).
    let result = manager
        .call(
            "mcp__storm__flood",
            json!({"count": 1500, "kind": "list_changed_paced"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "flooded 1500 list_changed_paced");
    let storm = started.elapsed();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let refreshed = status_of(&manager, "storm").tools_refreshed;
    // One listing per 250 ms at most, plus the one after the storm.
    let bound = (storm.as_millis() / 250) as u32 + 3;
    assert!(
        (1..=bound).contains(&refreshed),
        "{refreshed} listings in {storm:?} (at most {bound})"
    );
    assert!(manager.entry("mcp__storm__echo").is_some());
    manager.shutdown().await;
}
