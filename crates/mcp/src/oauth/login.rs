//! `aibuddy mcp login|logout SERVER`: probe the server for its challenge, run the authorization
//! (the browser part is the caller's [`OpenUrl`], the redirect comes back to the loopback
//! listener), keep the token in the [`TokenVault`]. The next connection uses it. After a 403
//! `insufficient_scope` (recorded in the vault by the call that got it), the login asks for the
//! granted scopes and the required ones (step-up).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::challenge::find_challenge;
use super::error::OAuthError;
use super::flow::{Authorizer, OpenUrl};
use super::identity::ClientIdentity;
use super::vault::{TokenVault, VaultCredentialStore};
use crate::sse::SseOptions;

/// How long the probe's `initialize` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a login did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    /// Authorized; the token is in the vault.
    LoggedIn,
    /// The server answered `initialize` without asking for authorization.
    NotNeeded,
}

/// What the server says to a request without a token: `Ok(Some(header))` for a 401/403
/// challenge, `Ok(None)` when it accepted the request. A streamable-HTTP `initialize` first;
/// when that fails without a challenge, a legacy SSE GET at the same URL (a 2024-11-05 server
/// behind OAuth challenges the GET; one that opens its stream needs no login).
pub async fn probe(url: &str) -> Result<Option<String>, OAuthError> {
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    match tokio::time::timeout(PROBE_TIMEOUT, ().serve(transport)).await {
        Err(_) => Err(OAuthError::Authorization(format!(
            "no answer to initialize within {}s",
            PROBE_TIMEOUT.as_secs()
        ))),
        Ok(Ok(service)) => {
            let _ = service.cancel().await;
            Ok(None)
        }
        Ok(Err(e)) => match find_challenge(&e) {
            Some(challenge) => Ok(Some(challenge.header().to_owned())),
            None => {
                let options = SseOptions::new(PROBE_TIMEOUT);
                match crate::sse::connect(url, &BTreeMap::new(), options).await {
                    Ok(_) => Ok(None),
                    Err(sse) => match find_challenge(&sse) {
                        Some(challenge) => Ok(Some(challenge.header().to_owned())),
                        None => Err(OAuthError::Authorization(format!(
                            "the server could not be reached: {e}"
                        ))),
                    },
                }
            }
        },
    }
}

/// Logs in to server `name` at `url`.
pub async fn login(
    name: &str,
    url: &str,
    identity: ClientIdentity,
    vault: Arc<dyn TokenVault>,
    open: OpenUrl,
) -> Result<LoginOutcome, OAuthError> {
    let Some(challenge) = probe(url).await? else {
        return Ok(LoginOutcome::NotNeeded);
    };
    let store = VaultCredentialStore::new(vault, name);
    let mut identity = identity;
    if identity.scopes.is_empty()
        && let Ok(Some(scopes)) = store.step_up_scopes()
    {
        // Step-up: the server refused the token for lack of scope; ask for granted ∪ required.
        identity.scopes = scopes;
    }
    let mut authorizer = Authorizer::new(url, identity, store, Some(open));
    authorizer.authorize(Some(&challenge)).await?;
    Ok(LoginOutcome::LoggedIn)
}

/// Forgets server `name`'s token; `Ok(false)` when there was none.
pub fn logout(name: &str, vault: &dyn TokenVault) -> Result<bool, OAuthError> {
    let had = vault.load(name).map_err(OAuthError::Store)?.is_some();
    vault.delete(name).map_err(OAuthError::Store)?;
    Ok(had)
}
