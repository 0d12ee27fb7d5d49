//! The auth scenarios (`auth/*`): the client connects without a token, and each 401 or 403
//! `insufficient_scope` the server answers is handed to the crate's [`Authorizer`], which runs
//! discovery, registration and the grant; the browser part fetches the authorization URL (the
//! harness's authorization endpoint redirects straight to the loopback listener). Then the
//! session is opened again with the token and the work resumes.

use std::sync::Arc;

use aibuddy_mcp::oauth::{
    AuthorizedClient, Authorizer, Challenge, ClientIdentity, Grant, MemoryVault, OpenUrl, Secret,
    VaultCredentialStore, find_challenge,
};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

/// The client ID metadata document URL the harness expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The identity the harness's context describes (`MCP_CONFORMANCE_CONTEXT`).
fn identity(scenario: &str) -> ClientIdentity {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    ClientIdentity {
        client_name: "aibuddy-conformance-client".into(),
        client_id: text("client_id"),
        client_secret: text("client_secret").map(Secret::new),
        client_metadata_url: Some(CLIENT_METADATA_URL.into()),
        private_key_pem: text("private_key_pem").map(Secret::new),
        signing_algorithm: text("signing_algorithm"),
        grant: if scenario.starts_with("auth/client-credentials") {
            Grant::ClientCredentials
        } else {
            Grant::AuthorizationCode
        },
        scopes: Vec::new(),
    }
}

/// The browser: follows the authorization URL and its redirect to the loopback listener.
fn browser() -> OpenUrl {
    Arc::new(|url: String| {
        Box::pin(async move {
            if let Err(e) = reqwest::get(&url).await {
                eprintln!("browser: {e}");
            }
        })
    })
}

/// One session: initialize, list tools, call each; a failure is returned whole (its source
/// chain carries the challenge).
async fn session(
    url: &str,
    client: Option<AuthorizedClient>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    let service = match client {
        Some(client) => ().serve(StreamableHttpClientTransport::with_client(client, config)).await?,
        None => {
            ().serve(StreamableHttpClientTransport::with_client(
                reqwest::Client::new(),
                config,
            ))
            .await?
        }
    };
    let work = async {
        let tools = service.list_all_tools().await?;
        for tool in tools {
            let args = crate::sample_arguments(&Value::Object((*tool.input_schema).clone()));
            let mut params = CallToolRequestParams::new(tool.name.clone());
            if let Value::Object(map) = args {
                params = params.with_arguments(map);
            }
            let result = service.call_tool(params).await?;
            println!("{}: {:?}", tool.name, result.content);
        }
        Ok::<(), rmcp::ServiceError>(())
    };
    let outcome = work.await;
    let _ = service.cancel().await;
    Ok(outcome?)
}

pub async fn run(url: String, scenario: &str) -> Result<(), String> {
    let vault = Arc::new(MemoryVault::default());
    let store = VaultCredentialStore::new(vault, "conformance");
    let mut authorizer = Authorizer::new(&url, identity(scenario), store, Some(browser()));
    let mut client: Option<AuthorizedClient> = None;
    loop {
        let error = match session(&url, client.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let challenge = find_challenge(error.as_ref());
        eprintln!("session ended: {error} (challenge: {challenge:?})");
        match (challenge, &client) {
            (Some(Challenge::Unauthorized { www_authenticate }), None) => {
                let authorized = authorizer
                    .authorize(Some(&www_authenticate))
                    .await
                    .map_err(|e| e.to_string())?;
                client = Some(authorized);
            }
            (Some(Challenge::InsufficientScope { scope, .. }), Some(current)) => authorizer
                .step_up(current, scope.as_deref())
                .await
                .map_err(|e| e.to_string())?,
            _ => return Err(error.to_string()),
        }
    }
}
