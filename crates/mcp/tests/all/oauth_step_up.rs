//! Scope step-up without a person, against the real OAuth test server
//! (`fixtures/oauth_server.py`, streamable HTTP): a call refused with 403
//! `insufficient_scope` makes one refresh-token request asking for the granted scopes and the
//! required one, and is retried once when the authorization server grants it. A strict server
//! (RFC 6749 §6: no wider scope on refresh) refuses, and the call keeps today's typed error
//! (the person logs in again). A server whose challenge names a scope that does not help is
//! tried once and retried once: never a loop (`auth/scope-retry-limit`). A machine client
//! (client-credentials grant, its secret kept in the vault) gets the wider scope by a new
//! client-credentials grant instead.

use crate::common;
use crate::oauth_fixture;

use std::sync::Arc;
use std::time::Duration;

use aibuddy_mcp::oauth::{ClientIdentity, Grant, LoginOutcome, MemoryVault, Secret, TokenVault};
use aibuddy_mcp::{McpError, McpHandlers, McpManager, McpStage, ServerConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(30);

/// Logs in (the authorization asks for no scope), then starts a manager over the vault.
async fn logged_in(server: &oauth_fixture::OAuthServer) -> (McpManager, Arc<MemoryVault>) {
    let vault = Arc::new(MemoryVault::default());
    let outcome = aibuddy_mcp::oauth::login(
        "remote",
        &server.mcp_url(),
        ClientIdentity::default(),
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    let mut options = common::fast_options();
    options.token_vault = Some(vault.clone());
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", server.mcp_url())],
        McpHandlers::default(),
        options,
    );
    common::wait_connected(&manager, "remote", UP).await;
    (manager, vault)
}

async fn call(manager: &McpManager, tool: &str) -> Result<String, McpError> {
    manager
        .call(
            &format!("mcp__remote__{tool}"),
            json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .map(|r| r.text())
}

fn entry(vault: &MemoryVault) -> Value {
    serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap()
}

#[tokio::test]
async fn a_wider_scope_granted_on_refresh_retries_the_call_once() {
    let server = oauth_fixture::start(&["--grant-on-refresh"]);
    let (manager, vault) = logged_in(&server).await;
    let before = entry(&vault)["token_response"]["access_token"].clone();
    let answer = call(&manager, "admin").await.unwrap();
    assert_eq!(answer, "an authorized caller");
    let s = server.stats().await;
    assert_eq!(s["scope_refusals"], 1, "{s}");
    assert_eq!(s["refreshes"], 1, "{s}");
    assert_eq!(s["refresh_scopes"], json!(["mcp:admin"]), "{s}");
    assert_eq!(
        s["refreshes_with_secret"], 1,
        "Basic with the kept secret: {s}"
    );
    assert_eq!(s["authorizations"], 1, "no person involved: {s}");
    assert_eq!(s["tool_calls"], 1, "{s}");
    let stored = entry(&vault);
    assert_ne!(stored["token_response"]["access_token"], before);
    assert_eq!(stored["granted_scopes"], json!(["mcp:admin"]));
    assert!(stored["client_secret"].is_string(), "the secret stays");
    assert!(
        stored.get("required_scopes").is_none(),
        "granted now: {}",
        stored["granted_scopes"]
    );
    // The new token serves later calls without another step-up.
    assert_eq!(
        call(&manager, "admin").await.unwrap(),
        "an authorized caller"
    );
    let s = server.stats().await;
    assert_eq!(
        (s["scope_refusals"].as_u64(), s["refreshes"].as_u64()),
        (Some(1), Some(1))
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_strict_server_refuses_the_wider_refresh_and_the_error_stays() {
    let server = oauth_fixture::start(&[]);
    let (manager, vault) = logged_in(&server).await;
    let before = entry(&vault)["token_response"]["access_token"].clone();
    let err = call(&manager, "admin").await.unwrap_err();
    assert!(
        matches!(&err, McpError::InsufficientScope { scope: Some(s), .. } if s == "mcp:admin"),
        "{err:?}"
    );
    assert_eq!(err.stage(), McpStage::Authorization);
    assert!(
        err.to_string().contains("aibuddy mcp login remote"),
        "{err}"
    );
    let s = server.stats().await;
    assert_eq!(s["refused_scope_refreshes"], 1, "{s}");
    assert_eq!(s["refreshes"], 0, "{s}");
    assert_eq!(s["scope_refusals"], 1, "not retried: {s}");
    // The old token is kept (a refused scope does not spend the refresh token), the scope is
    // recorded for the next login, and the connection stays.
    let stored = entry(&vault);
    assert_eq!(stored["token_response"]["access_token"], before);
    assert_eq!(stored["required_scopes"], json!(["mcp:admin"]));
    assert_eq!(
        call(&manager, "whoami").await.unwrap(),
        "an authorized caller"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_challenge_that_does_not_help_is_stepped_up_once_and_retried_once() {
    // The 403 names mcp:admin, the tool checks mcp:root: granting mcp:admin cannot help.
    let server = oauth_fixture::start(&["--grant-on-refresh", "--admin-needs", "mcp:root"]);
    let (manager, _vault) = logged_in(&server).await;
    let err = call(&manager, "admin").await.unwrap_err();
    assert!(
        matches!(&err, McpError::InsufficientScope { scope: Some(s), .. } if s == "mcp:admin"),
        "{err:?}"
    );
    let s = server.stats().await;
    assert_eq!(s["refreshes"], 1, "one step-up: {s}");
    assert_eq!(s["scope_refusals"], 2, "the call and one retry: {s}");
    // Granted already: the next call is refused without asking for the same scope again.
    let err = call(&manager, "admin").await.unwrap_err();
    assert!(matches!(err, McpError::InsufficientScope { .. }), "{err:?}");
    let s = server.stats().await;
    assert_eq!(s["refreshes"], 1, "{s}");
    assert_eq!(s["scope_refusals"], 3, "{s}");
    assert_eq!(
        call(&manager, "whoami").await.unwrap(),
        "an authorized caller"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_machine_client_gets_the_wider_scope_by_client_credentials() {
    // Strict on refresh: only the client-credentials grant can widen the scope.
    let server = oauth_fixture::start(&["--machine", "bot:bot-secret-1234"]);
    let vault = Arc::new(MemoryVault::default());
    let machine = ClientIdentity {
        client_id: Some("bot".into()),
        client_secret: Some(Secret::new("bot-secret-1234")),
        grant: Grant::ClientCredentials,
        ..ClientIdentity::default()
    };
    let outcome = aibuddy_mcp::oauth::login(
        "remote",
        &server.mcp_url(),
        machine,
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    let stored = entry(&vault);
    assert_eq!(stored["client_credentials"], true);
    assert_eq!(stored["client_secret"], "bot-secret-1234");
    let mut options = common::fast_options();
    options.token_vault = Some(vault.clone());
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", server.mcp_url())],
        McpHandlers::default(),
        options,
    );
    common::wait_connected(&manager, "remote", UP).await;
    assert_eq!(
        call(&manager, "admin").await.unwrap(),
        "an authorized caller"
    );
    let s = server.stats().await;
    assert_eq!(s["client_credentials_grants"], 2, "{s}");
    assert_eq!(s["machine_scopes"], json!(["", "mcp:admin"]), "{s}");
    assert_eq!(s["refreshes"], 0, "{s}");
    assert_eq!(s["refused_scope_refreshes"], 0, "{s}");
    assert_eq!(s["authorizations"], 0, "no browser: {s}");
    assert_eq!(s["scope_refusals"], 1, "{s}");
    let stored = entry(&vault);
    assert_eq!(stored["granted_scopes"], json!(["mcp:admin"]));
    assert_eq!(
        stored["client_credentials"], true,
        "kept for the next step-up"
    );
    assert!(stored.get("required_scopes").is_none());
    manager.shutdown().await;
}
