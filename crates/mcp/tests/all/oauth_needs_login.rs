//! A streamable-HTTP server that answers 401 with a `WWW-Authenticate` challenge, and no token
//! in the vault: the manager reports it as needing login (reason `needs login`, no retry
//! planned), offers none of its tools, and does not hammer it with reconnects. A small real HTTP
//! server on 127.0.0.1 plays the server (every request counted).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aibuddy_mcp::oauth::MemoryVault;
use aibuddy_mcp::status::NEEDS_LOGIN;
use aibuddy_mcp::{McpHandlers, McpManager, ServerConfig, ServerState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every request 401 with a challenge naming its protected-resource metadata.
async fn unauthorized_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = stream.read(&mut buf).await;
                let body = r#"{"error":"invalid_token"}"#;
                let response = format!(
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\"\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/mcp"), hits)
}

#[tokio::test]
async fn a_server_answering_401_needs_login_and_is_not_retried() {
    let (url, hits) = unauthorized_server().await;
    let mut options = common::fast_options();
    options.token_vault = Some(Arc::new(MemoryVault::default()));
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", url)],
        McpHandlers::default(),
        options,
    );
    let settled = manager
        .wait_for(Duration::from_secs(20), |all| {
            all.iter().all(|s| s.state.needs_login())
        })
        .await;
    let status = manager.status();
    assert!(settled, "not reported as needing login: {status:?}");
    assert_eq!(status[0].state, ServerState::NeedsLogin);
    // A call to one of its tools says why, and what to do.
    let err = manager
        .call(
            "mcp__remote__anything",
            serde_json::json!({}),
            tokio_util::sync::CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(NEEDS_LOGIN) && err.contains("aibuddy mcp login remote"),
        "{err}"
    );
    assert!(manager.catalog().is_empty());
    // fast_options retries failures within tens of milliseconds: a needs-login server is not.
    let before = hits.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        before,
        "the server was retried"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn without_a_vault_a_401_still_reads_as_needs_login() {
    let (url, _) = unauthorized_server().await;
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", url)],
        McpHandlers::default(),
        common::fast_options(),
    );
    let settled = manager
        .wait_for(Duration::from_secs(20), |all| {
            all.iter().all(|s| s.state.needs_login())
        })
        .await;
    assert!(settled, "{:?}", manager.status());
    manager.shutdown().await;
}

#[tokio::test]
async fn reconnect_tries_a_needs_login_server_again_once() {
    let (url, hits) = unauthorized_server().await;
    let mut options = common::fast_options();
    options.token_vault = Some(Arc::new(MemoryVault::default()));
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", url)],
        McpHandlers::default(),
        options,
    );
    let needs_login = |all: &[aibuddy_mcp::ServerStatus]| all.iter().all(|s| s.state.needs_login());
    assert!(manager.wait_for(Duration::from_secs(20), needs_login).await);
    let before = hits.load(Ordering::SeqCst);
    assert!(!manager.reconnect("nope"), "an unknown server");
    assert!(manager.reconnect("remote"));
    // It connects again (the server is hit again) and, still without a token, needs login again.
    let mut waited = Duration::ZERO;
    while hits.load(Ordering::SeqCst) == before && waited < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    assert!(hits.load(Ordering::SeqCst) > before, "not tried again");
    assert!(manager.wait_for(Duration::from_secs(20), needs_login).await);
    let after = hits.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(hits.load(Ordering::SeqCst), after, "one wake, one attempt");
    manager.shutdown().await;
}
