//! The legacy HTTP+SSE transport (2024-11-05) against a real legacy server
//! (`@modelcontextprotocol/server-everything sse`, the SDK's `SSEServerTransport`): chosen by
//! `"type": "sse"`, and reached by fallback from a plain `url` entry whose streamable-HTTP POST
//! fails. And against the in-repo legacy server (`support/legacy_sse_server.rs`) for what
//! server-everything cannot show: an `endpoint` event naming another origin is refused before
//! anything is sent there; the endpoint's session id and query are kept on every POST; a
//! stream ending mid-call fails the call at once (no hang) with the reason; a server that never
//! names its endpoint times out with that reason; an oversized or non-JSON-RPC event breaks the
//! session without a panic, and the server is reconnected.

use crate::common;
use crate::legacy_server;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use aibuddy_mcp::config::{ConfigScope, Transport, parse_config_text};
use aibuddy_mcp::{McpError, McpHandlers, McpManager, McpOptions, ServerConfig};
use common::*;
use legacy_server::{Endpoint, Options};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(40);

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

async fn spawn_sse_everything(dir: &Path, port: u16) -> Child {
    let script =
        dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("sse")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything sse did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Child(child)
}

fn entry(text: serde_json::Value) -> ServerConfig {
    let loaded = parse_config_text(
        Path::new("/u/mcp.json"),
        ConfigScope::User,
        &json!({ "mcpServers": { "legacy": text } }).to_string(),
    );
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    loaded.servers.into_iter().next().unwrap()
}

async fn echo_works(manager: &aibuddy_mcp::McpManager) {
    let result = manager
        .call(
            "mcp__legacy__echo",
            json!({"message": "over sse"}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(result.text().contains("over sse"), "{}", result.text());
}

#[tokio::test]
async fn type_sse_speaks_the_legacy_transport() {
    let dir = installed_servers("type_sse_speaks_the_legacy_transport");
    let port = free_port();
    let _server = spawn_sse_everything(&dir, port).await;
    let cfg = entry(json!({"type": "sse", "url": format!("http://127.0.0.1:{port}/sse")}));
    assert!(matches!(cfg.transport, Transport::Sse { .. }));
    let manager = start(vec![cfg]);
    wait_connected(&manager, "legacy", UP).await;
    let status = status_of(&manager, "legacy");
    assert!(status.tool_count > 5, "{status:?}");
    echo_works(&manager).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn a_url_entry_falls_back_to_sse_when_the_streamable_post_fails() {
    let dir = installed_servers("a_url_entry_falls_back_to_sse");
    let port = free_port();
    let _server = spawn_sse_everything(&dir, port).await;
    let cfg = entry(json!({"url": format!("http://127.0.0.1:{port}/sse")}));
    assert!(matches!(cfg.transport, Transport::Http { .. }));
    let manager = start(vec![cfg]);
    wait_connected(&manager, "legacy", UP).await;
    echo_works(&manager).await;
    manager.shutdown().await;
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_never_contacted() {
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = elsewhere.local_addr().unwrap().port();
    let server = legacy_server::start(Options {
        endpoint: Endpoint::Literal(format!("http://127.0.0.1:{other}/message")),
        ..Options::default()
    })
    .await;
    let cfg = entry(json!({"type": "sse", "url": server.url(),
               "headers": {"Authorization": "Bearer not-for-others"}}));
    let manager = start(vec![cfg]);
    let reason = wait_failed(&manager, "legacy", UP).await;
    assert!(
        reason.starts_with("legacy SSE transport: the `endpoint` event points to another origin"),
        "{reason}"
    );
    let contacted = tokio::time::timeout(Duration::from_millis(300), elsewhere.accept()).await;
    assert!(contacted.is_err(), "the other origin was contacted");
    assert!(server.stats().post_targets.is_empty());
    manager.shutdown().await;
}

fn in_repo(url: &str) -> ServerConfig {
    entry(json!({"type": "sse", "url": url}))
}

async fn call(manager: &McpManager, tool: &str) -> Result<String, McpError> {
    manager
        .call(
            &format!("mcp__legacy__{tool}"),
            json!({"message": "hello"}),
            CancellationToken::new(),
            None,
        )
        .await
        .map(|r| r.text())
}

#[tokio::test]
async fn the_in_repo_server_keeps_the_session_id_and_query_of_its_endpoint() {
    let server = legacy_server::start(Options::default()).await;
    let manager = start(vec![in_repo(&server.url())]);
    wait_connected(&manager, "legacy", UP).await;
    let status = status_of(&manager, "legacy");
    assert_eq!(status.tool_count, 5, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2024-11-05"));
    assert_eq!(call(&manager, "echo").await.unwrap(), "hello");
    manager.shutdown().await;
    let stats = server.stats();
    assert_eq!(stats.streams, 1);
    let session = &stats.sessions[0];
    // initialize, initialized, tools/list, tools/call (at least): each to the endpoint as named.
    assert!(stats.post_targets.len() >= 4, "{stats:?}");
    for target in &stats.post_targets {
        assert_eq!(
            target,
            &format!("/messages?sessionId={session}&note=x%2Fy"),
            "{stats:?}"
        );
    }
}

#[tokio::test]
async fn a_stream_ending_mid_call_fails_the_call_at_once_and_the_server_comes_back() {
    let server = legacy_server::start(Options::default()).await;
    let manager = start(vec![in_repo(&server.url())]);
    wait_connected(&manager, "legacy", UP).await;
    let started = Instant::now();
    let err = call(&manager, "hangup").await.unwrap_err();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the call waited {took:?} (call timeout 120 s)"
    );
    assert!(
        matches!(&err, McpError::ConnectionLost { reason, .. } if reason == "the legacy SSE stream ended"),
        "{err:?}"
    );
    assert_eq!(err.stage(), aibuddy_mcp::McpStage::Execution);
    // Reconnected with a new session after the backoff.
    wait_connected_again(&manager, &server).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "hello");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_names_its_endpoint_times_out_with_that_reason() {
    let server = legacy_server::start(Options {
        endpoint: Endpoint::Never,
        ..Options::default()
    })
    .await;
    let cfg = entry(json!({"type": "sse", "url": server.url(), "timeouts": {"connect": 1}}));
    let manager = start(vec![cfg]);
    let started = Instant::now();
    let reason = wait_failed(&manager, "legacy", UP).await;
    assert_eq!(
        reason,
        "legacy SSE transport: no `endpoint` event within 1s",
        "after {:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(server.stats().post_targets.is_empty());
    manager.shutdown().await;
}

/// The limit the frame tests run with (the real default is 16 MiB).
const SMALL_LIMIT: usize = 64 * 1024;

fn small_limit_manager(url: &str) -> McpManager {
    let options = McpOptions {
        max_message_bytes: SMALL_LIMIT,
        ..fast_options()
    };
    McpManager::start(vec![in_repo(url)], McpHandlers::default(), options)
}

#[tokio::test]
async fn an_oversized_event_is_refused_while_read_and_the_server_comes_back() {
    let server = legacy_server::start(Options::default()).await;
    let manager = small_limit_manager(&server.url());
    wait_connected(&manager, "legacy", UP).await;
    let started = Instant::now();
    let err = call(&manager, "oversized").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(&err, McpError::ConnectionLost { reason, .. }
            if reason == "legacy SSE stream: an event exceeds the 65536-byte message limit; refused"),
        "{err:?}"
    );
    wait_connected_again(&manager, &server).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "hello");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_message_event_that_is_not_json_rpc_breaks_the_session_without_a_panic() {
    let server = legacy_server::start(Options::default()).await;
    let manager = small_limit_manager(&server.url());
    wait_connected(&manager, "legacy", UP).await;
    let err = call(&manager, "garbage").await.unwrap_err();
    assert!(
        matches!(&err, McpError::ConnectionLost { reason, .. }
            if reason.starts_with("a legacy SSE `message` event is not a JSON-RPC message (")),
        "{err:?}"
    );
    // The server's text is not quoted.
    assert!(!err.to_string().contains("truncated"), "{err}");
    wait_connected_again(&manager, &server).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "hello");
    manager.shutdown().await;
}

/// Waits for the second stream (the reconnect) and the server to be listed again.
async fn wait_connected_again(manager: &McpManager, server: &legacy_server::LegacySseServer) {
    let deadline = Instant::now() + UP;
    while server.stats().streams < 2 {
        assert!(Instant::now() < deadline, "{:?}", server.stats());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_connected(manager, "legacy", UP).await;
}
