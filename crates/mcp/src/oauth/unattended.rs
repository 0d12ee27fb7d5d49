//! Scope step-up without a person: after a 403 `insufficient_scope` on a live connection, one
//! grant asking for the granted scopes and the required ones: a client-credentials grant when
//! the server's tokens come from one and its machine client's secret is stored (the
//! client's entitlement decides), else a refresh-token request. Some
//! authorization servers grant a wider scope on refresh (the person's consent or the client's
//! entitlement covers it); a strict RFC 6749 §6 server refuses with `invalid_scope`, and then
//! the person has to log in again (the caller keeps its `insufficient_scope` error).
//!
//! rmcp's own refresh only ever asks for scopes of the original grant, so this request is made
//! here, with the same client authentication (the registration-issued secret by HTTP Basic,
//! else a public client's `client_id`) and resource indicator (RFC 8707). Tokens go to the
//! vault only; nothing here logs or formats a token, a secret or the server's error text
//! beyond its OAuth error code.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::transport::auth::{AuthError, CredentialStore, OAuthTokenResponse, StoredCredentials};
use serde_json::Value;

use super::error::OAuthError;
use super::flow::Authorizer;
use super::identity::{ClientIdentity, Secret};
use super::vault::VaultCredentialStore;

/// How long the token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest token response read.
const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// Granted ∪ required, order kept, no duplicates; `None` when nothing is added (asking again
/// for what was granted cannot help). Pure.
pub fn wider_scopes(granted: &[String], required: &str) -> Option<Vec<String>> {
    let mut scopes = granted.to_vec();
    for scope in required.split_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    (scopes.len() > granted.len()).then_some(scopes)
}

/// Whether every scope in `required` is in `granted`. Pure.
pub fn covers(granted: &[String], required: &str) -> bool {
    required
        .split_whitespace()
        .all(|r| granted.iter().any(|g| g == r))
}

/// One grant asking for the stored scopes plus `required` (space-separated) for the server at
/// `server_url`, whose credentials `store` holds: a client-credentials grant for a machine
/// client whose secret is stored, else a refresh. On success the new token is in the vault (a
/// live connection's client reads it from there on its next request) and the granted scopes are
/// returned; they cover `required`, else this is an error (the new token is kept all the same).
pub async fn widen_scope(
    server_url: &str,
    store: &VaultCredentialStore,
    required: &str,
) -> Result<Vec<String>, OAuthError> {
    let stored = store
        .stored()
        .map_err(OAuthError::Store)?
        .ok_or_else(|| OAuthError::Authorization("no stored credentials".into()))?;
    let Some(scopes) = wider_scopes(&stored.credentials.granted_scopes, required) else {
        return Err(OAuthError::Authorization(
            "the required scope was granted already; a new grant cannot add it".into(),
        ));
    };
    let machine = stored.client_credentials && stored.client_secret.is_some();
    let granted = grant(
        server_url,
        store,
        stored.credentials,
        stored.client_secret,
        scopes,
        machine,
    )
    .await?;
    if !covers(&granted, required) {
        return Err(OAuthError::Authorization(
            "the authorization server did not grant the required scope".into(),
        ));
    }
    Ok(granted)
}

/// One token request for `scopes`: client credentials (`machine`) or a refresh; the granted
/// scopes. rmcp's own exchanges are not used: its refresh never asks beyond the original grant,
/// and its client-credentials future is not `Send` (a call must be).
async fn grant(
    server_url: &str,
    store: &VaultCredentialStore,
    credentials: StoredCredentials,
    secret: Option<Secret>,
    scopes: Vec<String>,
    machine: bool,
) -> Result<Vec<String>, OAuthError> {
    let token = serde_json::to_value(&credentials.token_response)
        .map_err(|e| OAuthError::Store(e.to_string()))?;
    let refresh_token = token
        .get("refresh_token")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut params: Vec<(&str, String)> = if machine {
        vec![("grant_type", "client_credentials".into())]
    } else {
        let Some(refresh_token) = refresh_token.clone() else {
            return Err(OAuthError::Authorization(
                "the stored token has no refresh token".into(),
            ));
        };
        vec![
            ("grant_type", "refresh_token".into()),
            ("refresh_token", refresh_token),
        ]
    };
    params.push(("scope", scopes.join(" ")));
    params.push(("resource", server_url.to_owned()));
    if secret.is_none() {
        params.push(("client_id", credentials.client_id.clone()));
    }
    let authorizer = Authorizer::new(server_url, ClientIdentity::default(), store.clone(), None);
    let token_endpoint = authorizer.token_endpoint().await?;
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &params {
            form.append_pair(k, v);
        }
        form.finish()
    };
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TOKEN_TIMEOUT)
        .build()
        .map_err(|e| OAuthError::Token(AuthError::HttpError(e)))?;
    let mut request = client
        .post(token_endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(body);
    if let Some(secret) = &secret {
        // RFC 6749 §2.3.1: both parts form-encoded, then Basic.
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        request = request.basic_auth(enc(&credentials.client_id), Some(enc(secret.expose())));
    }
    let response = request.send().await.map_err(|e| {
        refused(format!(
            "the token endpoint could not be reached ({})",
            e.without_url()
        ))
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| {
        refused(format!(
            "the token response could not be read ({})",
            e.without_url()
        ))
    })?;
    if body.len() > MAX_TOKEN_RESPONSE_BYTES {
        return Err(refused("the token response is too large".into()));
    }
    let mut json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !status.is_success() {
        let code = json
            .get("error")
            .and_then(Value::as_str)
            .map(|c| {
                aibuddy_common::term::line(&c.chars().take(64).collect::<String>()).into_owned()
            })
            .unwrap_or_else(|| "no error code".into());
        return Err(refused(format!("HTTP {} ({code})", status.as_u16())));
    }
    // RFC 6749 §6: a new refresh token is optional; keep the old one when none comes.
    if let (Some(object), Some(old), false) = (json.as_object_mut(), refresh_token, machine)
        && !object.contains_key("refresh_token")
    {
        object.insert("refresh_token".into(), Value::String(old));
    }
    let granted: Vec<String> = match json.get("scope").and_then(Value::as_str) {
        Some(s) => s.split_whitespace().map(str::to_owned).collect(),
        // RFC 6749 §5.1: an omitted scope is the one requested.
        None => scopes,
    };
    let token: OAuthTokenResponse = serde_json::from_value(json)
        .map_err(|_| refused("the token response is not an OAuth token response".into()))?;
    let received_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .ok();
    let issuer = credentials.issuer.clone();
    let stored = StoredCredentials::new(
        credentials.client_id,
        Some(token),
        granted.clone(),
        received_at,
    )
    .with_issuer(issuer);
    store.save(stored).await.map_err(OAuthError::Token)?;
    Ok(granted)
}

fn refused(reason: String) -> OAuthError {
    OAuthError::Token(AuthError::TokenRefreshFailed(reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_wider_scope_adds_what_is_missing_or_nothing() {
        assert_eq!(
            wider_scopes(&v(&["mcp:read"]), "mcp:admin mcp:read"),
            Some(v(&["mcp:read", "mcp:admin"]))
        );
        assert_eq!(wider_scopes(&v(&["a", "b"]), "b a"), None);
        assert_eq!(wider_scopes(&[], "a"), Some(v(&["a"])));
        assert_eq!(wider_scopes(&v(&["a"]), "  "), None);
    }

    #[test]
    fn coverage_needs_every_required_scope() {
        assert!(covers(&v(&["a", "b"]), "b a"));
        assert!(!covers(&v(&["a"]), "a b"));
        assert!(covers(&v(&["a"]), ""));
    }
}
