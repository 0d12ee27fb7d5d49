//! OAuth over the legacy HTTP+SSE transport: the in-repo legacy server
//! (`support/legacy_sse_server.rs`) as the protected resource, checking tokens at the OAuth
//! test server (`fixtures/oauth_server.py`, tokens living 2 s) through its `/introspect`.
//!
//! A `"type": "sse"` server answering 401 with `WWW-Authenticate` and no token in the vault is
//! `needs login` with no tools; `oauth::login` probes it (its `POST` is a 405, its `GET` the
//! challenge), discovers, registers, authorizes and keeps the token; after `reconnect` the GET
//! and every POST carry the bearer token, an expired token is refreshed (with the
//! registration's secret) before use, a token refused with 401 mid-session is refreshed and the
//! request retried once, and a tool needing more scope is a typed `insufficient_scope`
//! error with the connection kept (the strict authorization server refuses a wider scope on
//! refresh, so no person-less step-up).

mod common;
#[path = "support/legacy_sse_server.rs"]
mod legacy_server;
#[path = "support/oauth_fixture.rs"]
mod oauth_fixture;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_mcp::config::{ConfigScope, parse_config_text};
use aibuddy_mcp::oauth::{ClientIdentity, LoginOutcome, MemoryVault, TokenVault};
use aibuddy_mcp::status::NEEDS_LOGIN;
use aibuddy_mcp::{McpError, McpHandlers, McpManager, McpStage, ServerConfig, ServerState};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(30);

fn sse_entry(url: &str) -> ServerConfig {
    let loaded = parse_config_text(
        Path::new("/u/mcp.json"),
        ConfigScope::User,
        &json!({ "mcpServers": { "legacy": {"type": "sse", "url": url} } }).to_string(),
    );
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    loaded.servers.into_iter().next().unwrap()
}

async fn call(manager: &McpManager, tool: &str) -> Result<String, McpError> {
    manager
        .call(
            &format!("mcp__legacy__{tool}"),
            json!({"message": "with a token"}),
            CancellationToken::new(),
            None,
        )
        .await
        .map(|r| r.text())
}

#[tokio::test]
async fn an_sse_server_behind_oauth_needs_login_then_works_with_bearer_and_refresh() {
    let authz = oauth_fixture::start(&["--expires-in", "2"]);
    let server = legacy_server::start(legacy_server::Options {
        auth: Some(authz.base.clone()),
        ..Default::default()
    })
    .await;
    let vault = Arc::new(MemoryVault::default());
    let mut options = common::fast_options();
    options.token_vault = Some(vault.clone());
    let manager = McpManager::start(
        vec![sse_entry(&server.url())],
        McpHandlers::default(),
        options,
    );

    // No token: needs login, no tools, a call names the login command.
    let settled = manager
        .wait_for(UP, |all| all.iter().all(|s| s.state.needs_login()))
        .await;
    assert!(settled, "{:?}", manager.status());
    assert!(manager.catalog().is_empty());
    let status = common::status_of(&manager, "legacy");
    assert_eq!(status.state, ServerState::NeedsLogin);
    assert_eq!(server.stats().streams, 0);
    assert!(server.stats().unauthorized >= 1);
    let err = call(&manager, "echo").await.unwrap_err().to_string();
    assert!(
        err.contains(NEEDS_LOGIN) && err.contains("aibuddy mcp login legacy"),
        "{err}"
    );

    // Login: probe (POST 405, GET 401 with the challenge), discovery, registration, code, token.
    let identity = ClientIdentity {
        client_name: "aibuddy".into(),
        ..ClientIdentity::default()
    };
    let outcome = aibuddy_mcp::oauth::login(
        "legacy",
        &server.url(),
        identity,
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    let s = authz.stats().await;
    assert_eq!(
        (s["registrations"].as_u64(), s["code_exchanges"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );

    assert!(manager.reconnect("legacy"));
    common::wait_connected(&manager, "legacy", UP).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "with a token");
    let stats = server.stats();
    assert_eq!(stats.streams, 1, "{stats:?}");
    assert_eq!(
        stats.authorized_gets, 1,
        "the GET carried the token: {stats:?}"
    );
    assert_eq!(
        stats.authorized_posts,
        stats.post_targets.len(),
        "every POST carried the token: {stats:?}"
    );
    assert!(stats.authorized_posts >= 4, "{stats:?}");

    // The token expires; the next POST refreshes it first (Basic with the kept secret).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "with a token");
    let s = authz.stats().await;
    assert_eq!(s["refreshes_with_secret"], 1, "{s}");
    assert_eq!(s["refused_client_auth"], 0, "{s}");

    // A token the client believes fresh but the server calls expired (clock skew, revocation):
    // the 401 gets one refresh and one retry, and the call works.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut stored: serde_json::Value =
        serde_json::from_str(&vault.load("legacy").unwrap().unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    stored["token_received_at"] = json!(now);
    vault.save("legacy", &stored.to_string()).unwrap();
    let unauthorized = server.stats().unauthorized;
    assert_eq!(call(&manager, "echo").await.unwrap(), "with a token");
    assert_eq!(server.stats().unauthorized, unauthorized + 1);
    let s = authz.stats().await;
    assert_eq!(s["refreshes_with_secret"], 2, "{s}");

    // A tool needing more scope: typed error, the strict server refuses the wider refresh,
    // the connection stays.
    let err = call(&manager, "admin").await.unwrap_err();
    assert!(
        matches!(&err, McpError::InsufficientScope { scope: Some(s), .. } if s == "mcp:admin"),
        "{err:?}"
    );
    assert_eq!(err.stage(), McpStage::Authorization);
    assert!(
        err.to_string().contains("aibuddy mcp login legacy"),
        "{err}"
    );
    let s = authz.stats().await;
    assert_eq!(s["refused_scope_refreshes"], 1, "one person-less try: {s}");
    assert_eq!(
        server.stats().scope_refusals,
        1,
        "no retry after a refused step-up"
    );
    assert_eq!(call(&manager, "echo").await.unwrap(), "with a token");
    assert_eq!(
        common::status_of(&manager, "legacy").state,
        ServerState::Connected
    );
    assert_eq!(server.stats().streams, 1, "the session was kept");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_plain_url_entry_reaching_an_sse_server_behind_oauth_falls_back_and_logs_in() {
    let authz = oauth_fixture::start(&[]);
    let server = legacy_server::start(legacy_server::Options {
        auth: Some(authz.base.clone()),
        ..Default::default()
    })
    .await;
    let vault = Arc::new(MemoryVault::default());
    let mut options = common::fast_options();
    options.token_vault = Some(vault.clone());
    // No "type": streamable HTTP first (its POST is a 405), then the SSE GET (a 401).
    let loaded = parse_config_text(
        Path::new("/u/mcp.json"),
        ConfigScope::User,
        &json!({ "mcpServers": { "legacy": {"url": server.url()} } }).to_string(),
    );
    let cfg = loaded.servers.into_iter().next().unwrap();
    let manager = McpManager::start(vec![cfg], McpHandlers::default(), options);
    let settled = manager
        .wait_for(UP, |all| all.iter().all(|s| s.state.needs_login()))
        .await;
    assert!(settled, "{:?}", manager.status());
    let outcome = aibuddy_mcp::oauth::login(
        "legacy",
        &server.url(),
        ClientIdentity::default(),
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    assert!(manager.reconnect("legacy"));
    common::wait_connected(&manager, "legacy", UP).await;
    assert_eq!(call(&manager, "echo").await.unwrap(), "with a token");
    let stats = server.stats();
    assert_eq!((stats.streams, stats.authorized_gets), (1, 1), "{stats:?}");
    assert_eq!(
        stats.authorized_posts,
        stats.post_targets.len(),
        "{stats:?}"
    );
    manager.shutdown().await;
}
