//! Refresh with a registration-issued client secret, against a real OAuth-protected MCP server
//! (`fixtures/oauth_server.py` on 127.0.0.1: dynamic registration issues a secret for
//! `client_secret_basic`, tokens live 2 s). `oauth::login` registers, authorizes (the "browser"
//! follows the authorization URL to the loopback listener) and exchanges the code; the vault entry
//! holds the secret beside the tokens. Then a fresh `McpManager` over the same vault contents (what
//! a new process builds: nothing but the vault carried over) finds the token expired, refreshes
//! it with Basic client authentication, connects, and calls the tool. And step-up: a tool the
//! token lacks scope for gets a typed `insufficient_scope` error (connection kept), the vault
//! records the required scope, and the next login asks for it; the tool then works.

use crate::common;
use crate::oauth_fixture;

use std::sync::Arc;
use std::time::Duration;

use aibuddy_mcp::oauth::{ClientIdentity, LoginOutcome, MemoryVault, TokenVault};
use aibuddy_mcp::{McpError, McpHandlers, McpManager, ServerConfig, ServerState};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_registered_secret_refreshes_an_expired_token_after_a_restart() {
    let server = oauth_fixture::start(&["--expires-in", "2"]);
    let url = server.mcp_url();
    let vault = Arc::new(MemoryVault::default());
    let identity = ClientIdentity {
        client_name: "aibuddy".into(),
        ..ClientIdentity::default()
    };
    let outcome = aibuddy_mcp::oauth::login(
        "remote",
        &url,
        identity,
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    let entry: Value = serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap();
    assert_eq!(entry["client_id"], "client-1");
    assert!(
        entry["client_secret"]
            .as_str()
            .is_some_and(|s| s.starts_with("reg-secret-")),
        "the registration's secret is kept beside the tokens: {}",
        entry["client_id"]
    );
    let s = server.stats().await;
    assert_eq!(
        (s["registrations"].as_u64(), s["code_exchanges"].as_u64()),
        (Some(1), Some(1))
    );

    // "Restart": only the vault's contents carry over, into a new vault.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let carried = Arc::new(MemoryVault::default());
    carried
        .save("remote", &vault.load("remote").unwrap().unwrap())
        .unwrap();
    let mut options = common::fast_options();
    options.token_vault = Some(carried.clone());
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", url)],
        McpHandlers::default(),
        options,
    );
    common::wait_connected(&manager, "remote", Duration::from_secs(30)).await;
    assert_eq!(
        common::status_of(&manager, "remote").state,
        ServerState::Connected
    );
    let result = manager
        .call(
            "mcp__remote__whoami",
            serde_json::json!({}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(
        format!("{result:?}").contains("an authorized caller"),
        "{result:?}"
    );
    manager.shutdown().await;

    let s = server.stats().await;
    assert_eq!(s["refreshes_with_secret"], 1, "{s}");
    assert_eq!(s["refused_client_auth"], 0, "{s}");
    assert_eq!(s["registrations"], 1, "no second registration: {s}");
    // The refreshed token replaced the old one; the secret stayed.
    let entry: Value = serde_json::from_str(&carried.load("remote").unwrap().unwrap()).unwrap();
    assert!(entry["client_secret"].is_string());
}

#[tokio::test]
async fn a_public_client_stores_no_secret() {
    let server = oauth_fixture::start(&["--public"]);
    let url = server.mcp_url();
    let vault = Arc::new(MemoryVault::default());
    let outcome = aibuddy_mcp::oauth::login(
        "remote",
        &url,
        ClientIdentity::default(),
        vault.clone(),
        oauth_fixture::browser(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, LoginOutcome::LoggedIn);
    let entry: Value = serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap();
    assert!(
        entry.get("client_secret").is_none(),
        "{}",
        entry["client_id"]
    );
    assert!(entry["token_response"]["access_token"].is_string());
}

async fn call(manager: &McpManager, tool: &str) -> Result<String, McpError> {
    manager
        .call(tool, serde_json::json!({}), CancellationToken::new(), None)
        .await
        .map(|r| format!("{r:?}"))
}

#[tokio::test]
async fn an_insufficient_scope_answer_makes_the_next_login_step_up() {
    let server = oauth_fixture::start(&[]);
    let url = server.mcp_url();
    let vault = Arc::new(MemoryVault::default());
    let login = || {
        aibuddy_mcp::oauth::login(
            "remote",
            &url,
            ClientIdentity::default(),
            vault.clone(),
            oauth_fixture::browser(),
        )
    };
    assert_eq!(login().await.unwrap(), LoginOutcome::LoggedIn);
    let mut options = common::fast_options();
    options.token_vault = Some(vault.clone());
    let manager = McpManager::start(
        vec![ServerConfig::http("remote", url.clone())],
        McpHandlers::default(),
        options,
    );
    common::wait_connected(&manager, "remote", Duration::from_secs(30)).await;
    let err = call(&manager, "mcp__remote__admin").await.unwrap_err();
    assert!(
        matches!(&err, McpError::InsufficientScope { scope: Some(s), .. } if s == "mcp:admin"),
        "{err}"
    );
    assert!(
        err.to_string().contains("aibuddy mcp login remote"),
        "{err}"
    );
    // The connection stays: the other tool answers.
    assert!(call(&manager, "mcp__remote__whoami").await.is_ok());
    let entry: Value = serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap();
    assert_eq!(entry["required_scopes"], serde_json::json!(["mcp:admin"]));

    assert_eq!(login().await.unwrap(), LoginOutcome::LoggedIn);
    let s = server.stats().await;
    let asked = s["requested_scopes"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{s}");
    assert!(
        asked[1]
            .as_str()
            .unwrap()
            .split(' ')
            .any(|x| x == "mcp:admin"),
        "the step-up login asked for {}",
        asked[1]
    );
    manager.restart("remote").await.unwrap();
    common::wait_connected(&manager, "remote", Duration::from_secs(30)).await;
    let answer = call(&manager, "mcp__remote__admin").await.unwrap();
    assert!(answer.contains("an authorized caller"), "{answer}");
    let entry: Value = serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap();
    assert!(entry.get("required_scopes").is_none(), "granted now");
    manager.shutdown().await;
}
