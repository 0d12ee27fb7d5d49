//! A remote server that accepts the connection but refuses a tool call with 403
//! `insufficient_scope` (the token lacks a scope that tool needs): the call fails at stage
//! Authorization with an error naming the missing scope and the login to run, and the server
//! stays connected for its other tools. A small real HTTP server on 127.0.0.1 speaks just enough
//! streamable HTTP (JSON responses) to play it.

use crate::common;

use std::time::Duration;

use aibuddy_common::Stage;
use aibuddy_mcp::{McpError, ServerConfig, ServerState};
use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

async fn answer(stream: tokio::net::TcpStream) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = message.get("id").cloned();
        let (status, extra, body) = if !request_line.starts_with("POST") {
            ("405 Method Not Allowed", String::new(), String::new())
        } else {
            match message["method"].as_str() {
                Some("initialize") => ("200 OK", String::new(), json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scoped", "version": "1"}}}).to_string()),
                Some("tools/list") => ("200 OK", String::new(), json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                    {"name": "read", "inputSchema": {"type": "object"}},
                    {"name": "write", "inputSchema": {"type": "object"}}]}}).to_string()),
                Some("tools/call") if message["params"]["name"] == "write" => (
                    "403 Forbidden",
                    "WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"files:write\"\r\n".to_string(),
                    String::new(),
                ),
                Some("tools/call") => ("200 OK", String::new(), json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "read ok"}]}}).to_string()),
                Some("ping") => ("200 OK", String::new(), json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string()),
                _ => ("202 Accepted", String::new(), String::new()),
            }
        };
        let response = format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if reader
            .get_mut()
            .write_all(response.as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

async fn scoped_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream));
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

#[tokio::test]
async fn a_403_insufficient_scope_names_the_scope_and_keeps_the_connection() {
    let url = scoped_server().await;
    let manager = start(vec![ServerConfig::http("remote", url)]);
    wait_connected(&manager, "remote", Duration::from_secs(20)).await;
    let err = manager
        .call(
            "mcp__remote__write",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::InsufficientScope { .. }), "{err:?}");
    assert_eq!(err.stage(), Stage::Authorization);
    let text = err.to_string();
    assert!(text.contains("files:write"), "{text}");
    assert!(text.contains("aibuddy mcp login remote"), "{text}");
    let ok = manager
        .call(
            "mcp__remote__read",
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(ok.text(), "read ok");
    assert_eq!(status_of(&manager, "remote").state, ServerState::Connected);
    manager.shutdown().await;
}
