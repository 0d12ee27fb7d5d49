//! Where tokens live: a [`TokenVault`] keeps one opaque secret string per server (the OS
//! keyring in the app, see `aibuddy_provider::keys`; memory only in the conformance client).
//! [`VaultCredentialStore`] adapts it to rmcp's `CredentialStore`, and keeps beside rmcp's
//! credentials the client secret a dynamic registration issued (rmcp's `StoredCredentials` has
//! no field for it), so a confidential client can refresh after a restart. Tokens and secrets
//! never reach settings files, logs, events or SQLite: the vault is the only place they are
//! written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use super::identity::Secret;

/// A store of one secret per MCP server.
pub trait TokenVault: Send + Sync + std::fmt::Debug {
    fn load(&self, server: &str) -> Result<Option<String>, String>;
    fn save(&self, server: &str, secret: &str) -> Result<(), String>;
    fn delete(&self, server: &str) -> Result<(), String>;
}

/// A vault in memory (the conformance client; tests).
#[derive(Default)]
pub struct MemoryVault {
    secrets: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for MemoryVault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryVault([REDACTED])")
    }
}

impl TokenVault for MemoryVault {
    fn load(&self, server: &str) -> Result<Option<String>, String> {
        let map = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(map.get(server).cloned())
    }
    fn save(&self, server: &str, secret: &str) -> Result<(), String> {
        let mut map = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(server.to_owned(), secret.to_owned());
        Ok(())
    }
    fn delete(&self, server: &str) -> Result<(), String> {
        let mut map = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        map.remove(server);
        Ok(())
    }
}

/// One server's vault entry: rmcp's credentials, and the client secret a registration issued.
#[derive(Serialize, Deserialize)]
struct Entry {
    #[serde(flatten)]
    credentials: StoredCredentials,
    /// Issued with `credentials.client_id` by dynamic registration (RFC 7591 §3.2.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// Scopes a server asked for in a 403 `insufficient_scope` that the token lacks: the next
    /// login asks for the granted ones and these (step-up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    required_scopes: Vec<String>,
    /// The tokens come from a client-credentials grant (a machine client) and `client_secret`
    /// is that client's secret: a wider scope can be asked for without a person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    client_credentials: bool,
}

/// A server's stored credentials as a token request outside rmcp needs them.
pub(crate) struct Stored {
    pub credentials: StoredCredentials,
    pub client_secret: Option<Secret>,
    pub client_credentials: bool,
}

/// rmcp's credential store over one server's slot of a [`TokenVault`] (JSON of rmcp's
/// `StoredCredentials`: client id, token response, granted scopes; plus the registration-issued
/// client secret, when there is one).
#[derive(Clone)]
pub struct VaultCredentialStore {
    vault: Arc<dyn TokenVault>,
    server: String,
    /// A secret just issued by registration, written with the first credentials of its client.
    registered: Arc<Mutex<Option<(String, Secret)>>>,
    /// The `registered` secret is a machine client's (client-credentials grant).
    machine: Arc<Mutex<bool>>,
}

impl std::fmt::Debug for VaultCredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultCredentialStore")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl VaultCredentialStore {
    pub fn new(vault: Arc<dyn TokenVault>, server: impl Into<String>) -> Self {
        VaultCredentialStore {
            vault,
            server: server.into(),
            registered: Arc::new(Mutex::new(None)),
            machine: Arc::new(Mutex::new(false)),
        }
    }

    /// Remembers the secret a registration issued for `client_id`: it is written beside that
    /// client's credentials when rmcp saves them (after the token exchange), never before, so a
    /// login that fails leaves the previous entry as it was.
    pub fn registered_secret(&self, client_id: &str, secret: Secret) {
        let mut registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *registered = Some((client_id.to_owned(), secret));
    }

    /// Remembers a machine client's secret (client-credentials grant): written with its tokens
    /// like a registration-issued secret, and marked so a wider scope can later be granted
    /// without a person (`super::unattended`).
    pub fn client_credentials_secret(&self, client_id: &str, secret: Secret) {
        self.registered_secret(client_id, secret);
        *self.machine.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// The stored client id and the client secret registration issued for it, when there is one.
    pub fn client_secret(&self) -> Result<Option<(String, Secret)>, String> {
        Ok(self.entry()?.and_then(|entry| {
            entry
                .client_secret
                .map(|secret| (entry.credentials.client_id, Secret::new(secret)))
        }))
    }

    /// Records that the server refused the stored token for lack of `scope` (space-separated),
    /// so the next login steps up. Nothing is recorded without stored credentials.
    pub fn record_required_scope(&self, scope: &str) -> Result<(), String> {
        let Some(mut entry) = self.entry()? else {
            return Ok(());
        };
        for s in scope.split_whitespace() {
            if !entry.required_scopes.iter().any(|r| r == s) {
                entry.required_scopes.push(s.to_owned());
            }
        }
        let text = serde_json::to_string(&entry).map_err(|e| e.to_string())?;
        self.vault.save(&self.server, &text)
    }

    /// The scopes a step-up login asks for, when a server required more than was granted:
    /// granted ∪ required (order kept, no duplicates). `None` when nothing more was required.
    pub fn step_up_scopes(&self) -> Result<Option<Vec<String>>, String> {
        let Some(entry) = self.entry()? else {
            return Ok(None);
        };
        if entry.required_scopes.is_empty() {
            return Ok(None);
        }
        let mut scopes = entry.credentials.granted_scopes;
        for s in entry.required_scopes {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        Ok(Some(scopes))
    }

    /// The stored credentials and the registration-issued client secret, for a token request
    /// made outside rmcp (the unattended step-up's refresh).
    pub(crate) fn stored(&self) -> Result<Option<Stored>, String> {
        Ok(self.entry()?.map(|entry| Stored {
            credentials: entry.credentials,
            client_secret: entry.client_secret.map(Secret::new),
            client_credentials: entry.client_credentials,
        }))
    }

    fn entry(&self) -> Result<Option<Entry>, String> {
        let Some(text) = self.vault.load(&self.server)? else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(entry) => Ok(Some(entry)),
            Err(_) => {
                // Unreadable (older format, damaged): treated as absent, never quoted.
                tracing::warn!(server = %self.server, "stored MCP credentials unreadable; login needed");
                Ok(None)
            }
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for VaultCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let entry = self.entry().map_err(AuthError::CredentialStoreError)?;
        Ok(entry.map(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let fresh = {
            let registered = self
                .registered
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            registered
                .as_ref()
                .filter(|(client, _)| *client == credentials.client_id)
                .map(|(_, secret)| secret.expose().to_owned())
        };
        let same_client = self
            .entry()
            .map_err(AuthError::CredentialStoreError)?
            .filter(|old| old.credentials.client_id == credentials.client_id);
        let (client_secret, client_credentials) = match fresh {
            Some(secret) => (
                Some(secret),
                *self.machine.lock().unwrap_or_else(PoisonError::into_inner),
            ),
            // Refreshes and step-ups keep the secret (and grant) of the same client.
            None => same_client
                .map(|old| (old.client_secret, old.client_credentials))
                .unwrap_or_default(),
        };
        // Still required: what the new credentials were not granted.
        let required_scopes = self
            .entry()
            .map_err(AuthError::CredentialStoreError)?
            .map(|old| old.required_scopes)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| !credentials.granted_scopes.contains(s))
            .collect();
        let entry = Entry {
            credentials,
            client_secret,
            required_scopes,
            client_credentials,
        };
        let text = serde_json::to_string(&entry)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.vault
            .save(&self.server, &text)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.vault
            .delete(&self.server)
            .map_err(AuthError::CredentialStoreError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn credentials_round_trip_per_server_and_debug_redacts() {
        let vault = Arc::new(MemoryVault::default());
        let a = VaultCredentialStore::new(vault.clone(), "a");
        let b = VaultCredentialStore::new(vault.clone(), "b");
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": "tok-secret", "token_type": "Bearer"}),
        )
        .unwrap();
        a.save(StoredCredentials::new(
            "client-1".into(),
            Some(token),
            vec![],
            None,
        ))
        .await
        .unwrap();
        let loaded = a.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        assert!(b.load().await.unwrap().is_none());
        assert!(!format!("{loaded:?}{a:?}{vault:?}").contains("tok-secret"));
        a.clear().await.unwrap();
        assert!(a.load().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn damaged_entries_read_as_absent() {
        let vault = Arc::new(MemoryVault::default());
        vault.save("a", "not json").unwrap();
        let a = VaultCredentialStore::new(vault, "a");
        assert!(a.load().await.unwrap().is_none());
    }

    fn token(value: &str) -> rmcp::transport::auth::OAuthTokenResponse {
        serde_json::from_value(serde_json::json!({"access_token": value, "token_type": "Bearer"}))
            .unwrap()
    }

    #[tokio::test]
    async fn a_registered_secret_is_kept_beside_its_clients_tokens_only() {
        let vault = Arc::new(MemoryVault::default());
        let store = VaultCredentialStore::new(vault.clone(), "a");
        store.registered_secret("client-1", Secret::new("reg-secret"));
        // Not written before the token exchange saves credentials.
        assert!(vault.load("a").unwrap().is_none());
        let first = StoredCredentials::new("client-1".into(), Some(token("t1")), vec![], None);
        store.save(first).await.unwrap();
        // A new process (new store over the same vault) finds it, and a refresh keeps it.
        let later = VaultCredentialStore::new(vault.clone(), "a");
        let (client, secret) = later.client_secret().unwrap().unwrap();
        assert_eq!(
            (client.as_str(), secret.expose()),
            ("client-1", "reg-secret")
        );
        let refreshed = StoredCredentials::new("client-1".into(), Some(token("t2")), vec![], None);
        later.save(refreshed).await.unwrap();
        assert_eq!(
            later.client_secret().unwrap().unwrap().1.expose(),
            "reg-secret"
        );
        let loaded = later.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        // Another client's credentials do not inherit it.
        let other = StoredCredentials::new("client-2".into(), Some(token("t3")), vec![], None);
        later.save(other).await.unwrap();
        assert!(later.client_secret().unwrap().is_none());
        assert!(!format!("{later:?}").contains("reg-secret"));
    }

    #[tokio::test]
    async fn a_machine_clients_secret_and_grant_are_kept_across_refreshes() {
        let vault = Arc::new(MemoryVault::default());
        let store = VaultCredentialStore::new(vault.clone(), "a");
        store.client_credentials_secret("bot", Secret::new("bot-secret"));
        let first = StoredCredentials::new("bot".into(), Some(token("t1")), vec![], None);
        store.save(first).await.unwrap();
        let later = VaultCredentialStore::new(vault.clone(), "a");
        let again = StoredCredentials::new("bot".into(), Some(token("t2")), vec![], None);
        later.save(again).await.unwrap();
        let stored = later.stored().unwrap().unwrap();
        assert!(stored.client_credentials);
        assert_eq!(stored.client_secret.unwrap().expose(), "bot-secret");
        // A registration-issued secret is not a machine client's.
        let person = VaultCredentialStore::new(vault.clone(), "b");
        person.registered_secret("c", Secret::new("reg"));
        let creds = StoredCredentials::new("c".into(), Some(token("t3")), vec![], None);
        person.save(creds).await.unwrap();
        assert!(!person.stored().unwrap().unwrap().client_credentials);
        let text = vault.load("b").unwrap().unwrap();
        assert!(!text.contains("client_credentials"), "{text}");
    }

    #[tokio::test]
    async fn entries_written_before_the_secret_field_still_load() {
        let vault = Arc::new(MemoryVault::default());
        let old = serde_json::json!({
            "client_id": "c", "token_response": {"access_token": "t", "token_type": "Bearer"}
        });
        vault.save("a", &old.to_string()).unwrap();
        let store = VaultCredentialStore::new(vault, "a");
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "c");
        assert!(store.client_secret().unwrap().is_none());
    }

    #[tokio::test]
    async fn a_required_scope_makes_the_next_login_ask_for_the_union() {
        let vault = Arc::new(MemoryVault::default());
        let store = VaultCredentialStore::new(vault.clone(), "a");
        // Nothing stored: nothing recorded.
        store.record_required_scope("mcp:admin").unwrap();
        assert!(vault.load("a").unwrap().is_none());
        let granted = vec!["mcp:read".to_owned()];
        let creds = StoredCredentials::new("c".into(), Some(token("t1")), granted, None);
        store.save(creds).await.unwrap();
        assert_eq!(store.step_up_scopes().unwrap(), None);
        store.record_required_scope("mcp:admin mcp:read").unwrap();
        store.record_required_scope("mcp:admin").unwrap();
        assert_eq!(
            store.step_up_scopes().unwrap(),
            Some(vec!["mcp:read".to_owned(), "mcp:admin".to_owned()])
        );
        // A login granting them clears the requirement.
        let all = vec!["mcp:read".to_owned(), "mcp:admin".to_owned()];
        let creds = StoredCredentials::new("c".into(), Some(token("t2")), all, None);
        store.save(creds).await.unwrap();
        assert_eq!(store.step_up_scopes().unwrap(), None);
    }
}
