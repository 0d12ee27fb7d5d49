//! Where tokens live: a [`TokenVault`] keeps one opaque secret string per server (the OS
//! keyring in the app, see `aibuddy_provider::keys`; memory only in the conformance client).
//! [`VaultCredentialStore`] adapts it to rmcp's `CredentialStore`. Tokens never reach settings
//! files, logs, events or SQLite: the vault is the only place they are written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

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

/// rmcp's credential store over one server's slot of a [`TokenVault`] (JSON of rmcp's
/// `StoredCredentials`: client id, token response, granted scopes).
#[derive(Clone)]
pub struct VaultCredentialStore {
    vault: Arc<dyn TokenVault>,
    server: String,
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
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for VaultCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(text) = self
            .vault
            .load(&self.server)
            .map_err(AuthError::CredentialStoreError)?
        else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(stored) => Ok(Some(stored)),
            Err(_) => {
                // Unreadable (older format, damaged): treated as absent, never quoted.
                tracing::warn!(server = %self.server, "stored MCP credentials unreadable; login needed");
                Ok(None)
            }
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_string(&credentials)
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
}
