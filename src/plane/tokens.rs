//! [`KeyringVault`]: MCP OAuth credentials kept in the OS keyring (the same store as provider keys),
//! one secret per server under the service `aibuddy-mcp`. Never in settings files, logs, events or
//! SQLite. The hosts (CLI, desktop) choose it through [`super::PlaneOptions::mcp_token_vault`].

use aibuddy_mcp::oauth::TokenVault;
use aibuddy_provider::keys::{MCP_TOKEN_SERVICE, secret_delete, secret_get, secret_set};

/// MCP OAuth credentials in the OS keyring.
#[derive(Debug, Default)]
pub struct KeyringVault;

impl TokenVault for KeyringVault {
    fn load(&self, server: &str) -> Result<Option<String>, String> {
        secret_get(MCP_TOKEN_SERVICE, server).map_err(|e| e.to_string())
    }
    fn save(&self, server: &str, secret: &str) -> Result<(), String> {
        secret_set(MCP_TOKEN_SERVICE, server, secret).map_err(|e| e.to_string())
    }
    fn delete(&self, server: &str) -> Result<(), String> {
        secret_delete(MCP_TOKEN_SERVICE, server)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
