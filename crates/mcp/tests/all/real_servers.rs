//! The client against the real MCP servers installed by scripts/install-mcp-servers.sh
//! (npm: server-everything, -filesystem, -memory, -github; PyPI: mcp-server-time, -git, -fetch).
//! Skipped with a loud notice when they are not installed.

use crate::common;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use aibuddy_mcp::{ElicitationResponse, McpError, McpManager, ServerConfig, ServerState};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(60);

fn everything_stdio(dir: &Path) -> ServerConfig {
    ServerConfig::stdio(
        "everything",
        node_bin(dir, "mcp-server-everything"),
        vec!["stdio".into()],
    )
}

fn all_servers(dir: &Path, work: &Path) -> Vec<ServerConfig> {
    let repo = work.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git_ok = std::process::Command::new("git")
        .arg("init")
        .arg("-q")
        .arg(&repo)
        .status()
        .map(|s| s.success());
    assert!(matches!(git_ok, Ok(true)), "git init failed");
    let mut memory = ServerConfig::stdio("memory", node_bin(dir, "mcp-server-memory"), vec![]);
    if let aibuddy_mcp::Transport::Stdio { env, .. } = &mut memory.transport {
        env.insert(
            "MEMORY_FILE_PATH".into(),
            work.join("memory.jsonl").to_string_lossy().into_owned(),
        );
    }
    vec![
        everything_stdio(dir),
        ServerConfig::stdio(
            "filesystem",
            node_bin(dir, "mcp-server-filesystem"),
            vec![work.to_string_lossy().into_owned()],
        ),
        memory,
        ServerConfig::stdio("github", node_bin(dir, "mcp-server-github"), vec![]),
        ServerConfig::stdio(
            "time",
            venv_bin(dir, "mcp-server-time"),
            vec!["--local-timezone".into(), "UTC".into()],
        ),
        ServerConfig::stdio(
            "git",
            venv_bin(dir, "mcp-server-git"),
            vec!["--repository".into(), repo.to_string_lossy().into_owned()],
        ),
        ServerConfig::stdio("fetch", venv_bin(dir, "mcp-server-fetch"), vec![]),
    ]
}

/// server-everything registers its capability-dependent tools after initialize and announces
/// them with list_changed; wait until that refresh landed.
async fn wait_everything_complete(manager: &McpManager) {
    let ok = manager
        .wait_for(UP, |all| {
            all.iter()
                .any(|s| s.server == "everything" && s.state == ServerState::Connected)
        })
        .await;
    assert!(ok, "{:?}", status_of(manager, "everything"));
    let ok = manager
        .wait_for(Duration::from_secs(10), |_| {
            manager
                .entry("mcp__everything__trigger-elicitation-request")
                .is_some()
        })
        .await;
    assert!(
        ok,
        "conditional tools never arrived: {:?}",
        status_of(manager, "everything")
    );
}

#[tokio::test]
async fn every_real_server_lists_its_tools() {
    init_tracing();
    let dir = installed_servers("every_real_server_lists_its_tools");
    let work = tempfile::tempdir().unwrap();
    let manager = start(all_servers(&dir, work.path()));
    assert!(manager.wait_until_settled(UP).await);
    wait_everything_complete(&manager).await;
    let mut counts = BTreeMap::new();
    for status in manager.status() {
        assert_eq!(status.state, ServerState::Connected, "{status:?}");
        assert!(status.tool_count > 0, "{status:?}");
        assert!(status.rejected_tools.is_empty(), "{status:?}");
        counts.insert(status.server.clone(), status.tool_count);
    }
    let total: usize = counts.values().sum();
    eprintln!("MCP tool counts per server: {counts:?}, total {total}");
    for status in manager.status() {
        eprintln!(
            "  {} speaks {:?} ({:?})",
            status.server, status.protocol_version, status.server_info
        );
    }
    // Pinned versions (scripts/install-mcp-servers.sh), with elicitation declared and no
    // sampling/roots: these are the counts the deferral gates see.
    let expected = BTreeMap::from([
        ("everything".to_owned(), 14),
        ("fetch".to_owned(), 1),
        ("filesystem".to_owned(), 14),
        ("git".to_owned(), 12),
        ("github".to_owned(), 26),
        ("memory".to_owned(), 9),
        ("time".to_owned(), 2),
    ]);
    assert_eq!(
        counts, expected,
        "tool counts changed: update after bumping a pinned server"
    );
    assert_eq!(total, 78);
    // server-github still answers initialize with 2024-11-05; the others with 2025-11-25.
    assert_eq!(
        status_of(&manager, "github").protocol_version.as_deref(),
        Some("2024-11-05")
    );
    assert_eq!(
        status_of(&manager, "time").protocol_version.as_deref(),
        Some("2025-11-25")
    );
    let github = manager
        .call(
            "mcp__github__search_repositories",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        github.stage(),
        aibuddy_mcp::McpStage::Parameters,
        "query is required: {github}"
    );
    assert_eq!(total, manager.catalog().len());
    assert!(
        counts["everything"] > 10,
        "server-everything alone exceeds the per-server gate"
    );
    assert!(total > 30, "the aggregate exceeds the 30-tool gate");
    for entry in manager.catalog() {
        assert!(
            aibuddy_mcp::names::is_valid_name(&entry.qualified_name),
            "{}",
            entry.qualified_name
        );
        assert_eq!(entry.input_schema["type"], "object");
    }
    // Annotations feed risk: the filesystem server marks read_text_file read-only.
    let read = manager
        .entry("mcp__filesystem__read_text_file")
        .expect("filesystem read tool");
    assert!(read.risk.read_only, "{:?}", read.risk);
    manager.shutdown().await;
}

#[tokio::test]
async fn everything_over_stdio_call_progress_cancel_list_changed() {
    init_tracing();
    let dir = installed_servers("everything_over_stdio");
    let manager = start(vec![everything_stdio(&dir)]);
    wait_everything_complete(&manager).await;
    let status = status_of(&manager, "everything");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    // The capability-dependent tools (registered after initialize and announced with
    // list_changed) are in the catalog, whether the first listing or a refresh brought them.
    assert_eq!(status.tool_count, 14, "{status:?}");

    let echo = manager
        .call(
            "mcp__everything__echo",
            json!({"message": "hello"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(echo.text().contains("hello"), "{echo:?}");
    let sum = manager
        .call(
            "mcp__everything__get-sum",
            json!({"a": 19, "b": 23}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(sum.text().contains("42"), "{sum:?}");

    // Progress.
    let (sink, seen) = collector();
    let done = manager
        .call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            CancellationToken::new(),
            Some(sink),
        )
        .await
        .unwrap();
    assert!(done.text().contains("completed"), "{done:?}");
    let progress: Vec<(f64, Option<f64>)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|p| (p.progress, p.total))
        .collect();
    assert_eq!(
        progress,
        vec![
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );

    // Cancellation: stop after the first progress event; nothing arrives afterwards.
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
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 5, "steps": 10}),
            cancel,
            Some(sink),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Cancelled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let at_cancel = seen.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        seen.lock().unwrap().len(),
        at_cancel,
        "progress after cancel was dropped"
    );
    // The connection survives a cancellation.
    let again = manager
        .call(
            "mcp__everything__echo",
            json!({"message": "after cancel"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(again.text().contains("after cancel"));
    manager.shutdown().await;
}

#[tokio::test]
async fn everything_elicitation_reaches_the_broker() {
    let dir = installed_servers("everything_elicitation");
    let broker = FixedBroker::new(ElicitationResponse::Accept(serde_json::Map::new()));
    let manager = start_with_broker(vec![everything_stdio(&dir)], broker.clone());
    wait_everything_complete(&manager).await;
    let result = manager
        .call(
            "mcp__everything__trigger-elicitation-request",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let seen = broker.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].server, "everything");
    assert!(
        seen[0].schema["properties"].is_object(),
        "{:?}",
        seen[0].schema
    );
    manager.shutdown().await;
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Child(tokio::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

async fn spawn_http_everything(dir: &Path, port: u16) -> Child {
    let script =
        dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Child(child)
}

#[tokio::test]
async fn a_crashed_http_server_fails_and_is_reconnected_when_it_is_back() {
    init_tracing();
    let dir = installed_servers("a_crashed_http_server");
    let port = free_port();
    let mut server = spawn_http_everything(&dir, port).await;
    let manager = start(vec![ServerConfig::http(
        "remote",
        format!("http://127.0.0.1:{port}/mcp"),
    )]);
    wait_connected(&manager, "remote", UP).await;
    server.0.kill().await.unwrap();
    let err = manager
        .call(
            "mcp__remote__echo",
            json!({"message": "x"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), aibuddy_mcp::McpStage::Execution, "{err}");
    let reason = wait_failed(&manager, "remote", UP).await;
    assert!(!reason.is_empty());
    assert!(
        manager.catalog().is_empty()
            || status_of(&manager, "remote").state == ServerState::Connected
    );
    let _server = spawn_http_everything(&dir, port).await;
    wait_connected(&manager, "remote", UP).await;
    let ok = manager
        .call(
            "mcp__remote__echo",
            json!({"message": "back"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(ok.text().contains("back"));
    manager.shutdown().await;
}

#[tokio::test]
async fn everything_over_streamable_http() {
    init_tracing();
    let dir = installed_servers("everything_over_streamable_http");
    let port = free_port();
    let script =
        dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _child = Child(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut cfg = ServerConfig::http("remote", format!("http://127.0.0.1:{port}/mcp"));
    if let aibuddy_mcp::Transport::Http { headers, .. } = &mut cfg.transport {
        headers.insert("X-Test".into(), "aibuddy".into());
    }
    let manager = start(vec![cfg]);
    wait_connected(&manager, "remote", UP).await;
    assert_eq!(
        status_of(&manager, "remote").protocol_version.as_deref(),
        Some("2025-11-25")
    );
    assert!(manager.catalog().len() > 10);
    let sum = manager
        .call(
            "mcp__remote__get-sum",
            json!({"a": 1, "b": 2}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(sum.text().contains('3'), "{sum:?}");
    let (sink, seen) = collector();
    manager
        .call(
            "mcp__remote__trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
            CancellationToken::new(),
            Some(sink),
        )
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
    manager.shutdown().await;
}
