//! The OAuth flows on rmcp's `auth` feature: discovery (protected-resource metadata from the
//! challenge or the well-known locations, authorization-server metadata with the OIDC and
//! 2025-03-26 fallbacks), client identity (pre-registered, client ID metadata document, dynamic
//! registration), authorization code with PKCE S256 and resource indicators through the
//! [`Loopback`] redirect, client credentials for machine servers, and bounded scope step-up.
//!
//! The browser part is the caller's [`OpenUrl`]: the CLI prints the URL, the desktop opens the
//! system browser, the conformance client fetches it. The redirect always comes back to the
//! loopback listener, which stays bound for the [`Authorizer`]'s life so a step-up reuses the
//! registered redirect URI.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, OAuthClientConfig,
};
use tokio::sync::OnceCell;

use super::discovery;
use super::error::OAuthError;
use super::identity::{ClientIdentity, Grant, Secret, client_credentials};
use super::loopback::Loopback;
use super::step_up::{StepUp, next_step};
use super::vault::VaultCredentialStore;

/// Makes the person (or a test) visit the authorization URL; returns once it was handed over.
pub type OpenUrl = Arc<dyn Fn(String) -> BoxFuture<'static, ()> + Send + Sync>;

pub use crate::bearer::AuthorizedClient;

/// Runs the OAuth flows for one server.
pub struct Authorizer {
    server_url: String,
    identity: ClientIdentity,
    store: VaultCredentialStore,
    open: Option<OpenUrl>,
    /// How long the person has to finish in the browser.
    pub wait: Duration,
    loopback: OnceCell<Loopback>,
    authorizations: u32,
}

impl Authorizer {
    /// `open`: `None` for a non-interactive connection (a needed login is reported, not run).
    pub fn new(
        server_url: impl Into<String>,
        identity: ClientIdentity,
        store: VaultCredentialStore,
        open: Option<OpenUrl>,
    ) -> Authorizer {
        Authorizer {
            server_url: server_url.into(),
            identity,
            store,
            open,
            wait: Duration::from_secs(300),
            loopback: OnceCell::new(),
            authorizations: 0,
        }
    }

    /// Authorizations (browser round trips or client-credential grants) made so far.
    pub fn authorizations(&self) -> u32 {
        self.authorizations
    }

    async fn manager(&self) -> Result<AuthorizationManager, OAuthError> {
        let url = url::Url::parse(&self.server_url).map_err(|e| OAuthError::Discovery(e.into()))?;
        // A server on this machine or the LAN publishes its metadata on private addresses.
        let local = url.host_str().is_some_and(|h| {
            h == "localhost"
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback() || is_private(ip))
        });
        let mut manager = if local {
            AuthorizationManager::new_allowing_private_addresses(url).await
        } else {
            AuthorizationManager::new(url).await
        }
        .map_err(OAuthError::Discovery)?;
        manager.set_credential_store(self.store.clone());
        Ok(manager)
    }

    /// A client from stored credentials, when there are some (refreshed on use by rmcp; a
    /// confidential client registered dynamically refreshes with its kept secret).
    pub async fn from_store(&self) -> Result<Option<AuthorizedClient>, OAuthError> {
        use rmcp::transport::auth::CredentialStore;
        match self.store.load().await {
            Ok(Some(stored)) if stored.token_response.is_some() => {}
            Ok(_) => return Ok(None),
            Err(e) => {
                tracing::debug!("stored MCP credentials not readable: {e}");
                return Ok(None);
            }
        }
        let mut manager = self.manager().await?;
        match discovery::resolve(&manager, None).await {
            Ok(metadata) => manager.set_metadata(metadata),
            Err(e) => {
                tracing::debug!("authorization metadata for stored MCP credentials: {e}");
                return Ok(None);
            }
        }
        match manager.initialize_from_store().await {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                tracing::debug!("stored MCP credentials not usable: {e}");
                return Ok(None);
            }
        }
        if let Ok(Some((client_id, secret))) = self.store.client_secret() {
            let config = OAuthClientConfig::new(client_id, self.server_url.clone())
                .with_client_secret(secret.expose());
            manager
                .configure_client(config)
                .map_err(OAuthError::Registration)?;
        }
        Ok(Some(AuthClient::new(reqwest::Client::new(), manager)))
    }

    /// The authorization server's token endpoint (discovery from the well-known locations).
    pub(crate) async fn token_endpoint(&self) -> Result<String, OAuthError> {
        let manager = self.manager().await?;
        let metadata = discovery::resolve(&manager, None).await?;
        Ok(metadata.token_endpoint)
    }

    /// Full authorization after a 401 (`challenge` is its `WWW-Authenticate` value).
    pub async fn authorize(
        &mut self,
        challenge: Option<&str>,
    ) -> Result<AuthorizedClient, OAuthError> {
        let mut manager = self.manager().await?;
        let metadata = discovery::resolve(&manager, challenge).await?;
        let registers = self.registers_dynamically(&metadata);
        manager.set_metadata(metadata);
        self.authorizations += 1;
        match self.identity.grant {
            Grant::ClientCredentials => {
                let config = client_credentials(&self.identity, &self.server_url)
                    .map_err(|e| OAuthError::Authorization(e.to_string()))?;
                // A secret-holding machine client is kept with its tokens, so a wider scope
                // can be granted later without a person (`unattended`).
                if let (Some(client_id), Some(secret), None) = (
                    &self.identity.client_id,
                    &self.identity.client_secret,
                    &self.identity.private_key_pem,
                ) {
                    self.store
                        .client_credentials_secret(client_id, secret.clone());
                }
                manager
                    .validate_client_credentials_metadata(&config)
                    .map_err(OAuthError::Registration)?;
                manager
                    .configure_client_credentials(&config)
                    .map_err(OAuthError::Registration)?;
                manager
                    .exchange_client_credentials(&config)
                    .await
                    .map_err(OAuthError::Token)?;
            }
            Grant::AuthorizationCode => {
                let redirect_uri = self.loopback().await?.redirect_uri();
                let mut request = self.request(redirect_uri.clone());
                if registers {
                    request = self.register(&mut manager, request, &redirect_uri).await?;
                }
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, e)| OAuthError::Registration(e))?;
                let callback = self.browse(session.get_authorization_url()).await?;
                session
                    .handle_callback_url(&callback)
                    .await
                    .map_err(OAuthError::Token)?;
                manager = session.auth_manager;
            }
        }
        Ok(AuthClient::new(reqwest::Client::new(), manager))
    }

    /// Step-up after a 403 `insufficient_scope` naming `scope`: one more browser round trip
    /// for granted ∪ required, within [`super::step_up::MAX_AUTHORIZATIONS`].
    pub async fn step_up(
        &mut self,
        client: &AuthorizedClient,
        scope: Option<&str>,
    ) -> Result<(), OAuthError> {
        let manager = client.auth_manager.lock().await;
        let granted = manager.get_current_scopes().await;
        let scopes = match next_step(scope, &granted, self.authorizations) {
            StepUp::Authorize(scopes) => scopes,
            StepUp::GiveUp => {
                return Err(OAuthError::ScopeRetryLimit {
                    required: scope.unwrap_or_default().chars().take(200).collect(),
                    attempts: self.authorizations,
                });
            }
        };
        if self.identity.grant == Grant::ClientCredentials {
            return Err(OAuthError::Authorization(
                "a machine client cannot step up its scope".into(),
            ));
        }
        self.authorizations += 1;
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let url = manager
            .get_authorization_url(&refs)
            .await
            .map_err(OAuthError::Registration)?;
        let callback = self.browse(&url).await?;
        let callback = AuthorizationCallback::from_redirect_url(&callback)
            .map_err(|e| OAuthError::Authorization(e.to_string()))?;
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(OAuthError::Token)?;
        Ok(())
    }

    /// Whether rmcp would register this client dynamically (no pre-registered client, no usable
    /// client ID metadata document, a registration endpoint): then [`Self::register`] does it,
    /// the same way, so the secret a confidential registration issues can be kept.
    fn registers_dynamically(&self, metadata: &AuthorizationMetadata) -> bool {
        let cimd = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
            && self.identity.client_metadata_url.is_some();
        self.identity.client_id.is_none() && !cimd && metadata.registration_endpoint.is_some()
    }

    /// Dynamic registration (RFC 7591) with the scopes rmcp would choose; the issued secret, if
    /// any, goes to the vault with the tokens. The request then names the registered client.
    async fn register(
        &self,
        manager: &mut AuthorizationManager,
        request: AuthorizationRequest,
        redirect_uri: &str,
    ) -> Result<AuthorizationRequest, OAuthError> {
        let scopes = if self.identity.scopes.is_empty() {
            manager.select_initial_scopes(&[]).await
        } else {
            self.identity.scopes.clone()
        };
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let name = if self.identity.client_name.is_empty() {
            "aibuddy"
        } else {
            &self.identity.client_name
        };
        let config = manager
            .register_client(name, redirect_uri, &refs)
            .await
            .map_err(OAuthError::Registration)?;
        let mut request = request.with_preregistered_client(config.client_id.clone());
        if let Some(secret) = config.client_secret {
            self.store
                .registered_secret(&config.client_id, Secret::new(secret.clone()));
            request = request.with_client_secret(secret);
        }
        Ok(request)
    }

    fn request(&self, redirect_uri: String) -> AuthorizationRequest {
        let id = &self.identity;
        let mut request = AuthorizationRequest::new(redirect_uri)
            .with_client_name(if id.client_name.is_empty() {
                "aibuddy"
            } else {
                &id.client_name
            })
            .with_initial_scope_selection();
        if !id.scopes.is_empty() {
            request = request.with_scopes(id.scopes.clone());
        }
        if let Some(client_id) = &id.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &id.client_secret {
                request = request.with_client_secret(secret.expose().to_owned());
            }
        }
        if let Some(url) = &id.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        request
    }

    async fn loopback(&self) -> Result<&Loopback, OAuthError> {
        self.loopback.get_or_try_init(Loopback::bind).await
    }

    /// Hands the URL to the browser part and waits for the redirect.
    async fn browse(&self, url: &str) -> Result<String, OAuthError> {
        let Some(open) = &self.open else {
            return Err(OAuthError::Authorization("login needed".into()));
        };
        let loopback = self.loopback().await?;
        let opening = tokio::spawn(open(url.to_owned()));
        let result = tokio::time::timeout(self.wait, loopback.wait()).await;
        opening.abort();
        match result {
            Ok(callback) => callback,
            Err(_) => Err(OAuthError::Authorization(format!(
                "no redirect within {}s",
                self.wait.as_secs()
            ))),
        }
    }
}

fn is_private(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_private() || v4.is_link_local(),
        std::net::IpAddr::V6(v6) => v6.is_unique_local(),
    }
}
