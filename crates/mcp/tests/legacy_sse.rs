//! The legacy HTTP+SSE transport (2024-11-05) against a real legacy server
//! (`@modelcontextprotocol/server-everything sse`, the SDK's `SSEServerTransport`): chosen by
//! `"type": "sse"`, and reached by fallback from a plain `url` entry whose streamable-HTTP POST
//! fails. An `endpoint` event naming another origin is refused before anything is sent there.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use aibuddy_mcp::ServerConfig;
use aibuddy_mcp::config::{ConfigScope, Transport, parse_config_text};
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// A one-connection SSE server whose `endpoint` event names `endpoint`.
async fn sse_with_endpoint(endpoint: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let body = format!("event: endpoint\ndata: {endpoint}\n\n");
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(30)).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_never_contacted() {
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = elsewhere.local_addr().unwrap().port();
    let port = sse_with_endpoint(format!("http://127.0.0.1:{other}/message")).await;
    let cfg = entry(
        json!({"type": "sse", "url": format!("http://127.0.0.1:{port}/sse"),
                           "headers": {"Authorization": "Bearer not-for-others"}}),
    );
    let manager = start(vec![cfg]);
    let reason = wait_failed(&manager, "legacy", UP).await;
    assert!(reason.contains("another origin"), "{reason}");
    let contacted = tokio::time::timeout(Duration::from_millis(300), elsewhere.accept()).await;
    assert!(contacted.is_err(), "the other origin was contacted");
    manager.shutdown().await;
}
