//! Authorization-server metadata resolution: rmcp's discovery, and when rmcp refuses the
//! document for an issuer mismatch, one more look at the named issuer's well-known URLs under the
//! narrow rule of [`super::issuer::relaxed_issuer`] (same origin, ancestor path, endpoints on
//! that origin). Anything else rmcp refused stays refused.

use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};
use url::Url;

use super::error::OAuthError;
use super::issuer::{Endpoints, relaxed_issuer, well_known_urls};

/// How long one metadata request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest metadata document read.
const MAX_METADATA_BYTES: usize = 256 * 1024;

/// The metadata for the server `manager` was made for; `challenge` is a 401's
/// `WWW-Authenticate` value, when there was one. The scopes and resource rmcp read from the
/// protected-resource metadata stay recorded in `manager` either way.
pub(crate) async fn resolve(
    manager: &AuthorizationManager,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) => match second_look(&expected_issuer).await {
            Some(metadata) => {
                tracing::info!(
                    named = %expected_issuer,
                    claimed = %received_issuer,
                    "authorization server metadata names an ancestor issuer on the same origin; accepted"
                );
                Ok(metadata)
            }
            None => Err(OAuthError::Discovery(
                AuthError::AuthorizationServerMismatch {
                    expected_issuer,
                    received_issuer,
                },
            )),
        },
        Err(e) => Err(OAuthError::Discovery(e)),
    }
}

/// The first metadata document served at the named issuer's well-known URLs, when the relaxed
/// rule accepts it (the first document found decides, as in rmcp's own discovery).
async fn second_look(named: &str) -> Option<AuthorizationMetadata> {
    let issuer = Url::parse(named).ok()?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .build()
        .ok()?;
    for url in well_known_urls(&issuer) {
        let Some(metadata) = fetch(&client, &url).await else {
            continue;
        };
        let endpoints = Endpoints {
            authorization: &metadata.authorization_endpoint,
            token: &metadata.token_endpoint,
            registration: metadata.registration_endpoint.as_deref(),
        };
        return match relaxed_issuer(named, &url, metadata.issuer.as_deref(), &endpoints) {
            Ok(()) => Some(metadata),
            Err(refusal) => {
                tracing::warn!(named, at = %url, "authorization server metadata refused: {refusal}");
                None
            }
        };
    }
    None
}

/// One well-known URL's document, when it answers 200 with metadata.
async fn fetch(client: &reqwest::Client, url: &Url) -> Option<AuthorizationMetadata> {
    let response = client.get(url.clone()).send().await.ok()?;
    if response.status() != reqwest::StatusCode::OK {
        return None;
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_METADATA_BYTES as u64)
    {
        return None;
    }
    let body = response.bytes().await.ok()?;
    if body.len() > MAX_METADATA_BYTES {
        return None;
    }
    serde_json::from_slice(&body).ok()
}
