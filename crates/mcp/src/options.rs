//! Manager-wide options, host handlers, and the result of a call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::elicitation::{DeclineElicitation, ElicitationBroker};
use crate::sandbox_host::SandboxHost;
use crate::status::Backoff;

/// Default time a health-check ping may take after a call timed out or failed in transport.
pub const DEFAULT_HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Default fewest time between two delivered progress events of one call once its burst of 20 is
/// used (at most 20 a second).
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Manager-wide options. Per-server timeouts live in [`crate::ServerConfig::timeouts`].
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// `clientInfo.name` sent in `initialize`.
    pub client_name: String,
    /// `clientInfo.version` sent in `initialize`.
    pub client_version: String,
    /// Reconnect schedule after a failure.
    pub backoff: Backoff,
    /// Working directory of stdio servers without their own `cwd`. The core gives each server its
    /// directory explicitly (a project server the project root, a user-level one an empty
    /// directory of the data dir, so that `python -m x` or `npx x` never resolves what a command
    /// planted in the project) and sets this to that empty directory; None: the client's own.
    pub default_cwd: Option<PathBuf>,
    /// How long a health-check ping may take before the server counts as hung.
    pub health_check_timeout: Duration,
    /// Longest message a stdio server may send (one JSON-RPC line, so one tool result). A longer
    /// one breaks the connection (the call fails at the Execution stage, the server is restarted
    /// with backoff) without being held whole in memory. Default
    /// [`crate::stdio::DEFAULT_MAX_MESSAGE_BYTES`] (16 MiB, rmcp's own limit).
    pub max_message_bytes: usize,
    /// After a burst of 20, the fewest time between two progress events delivered for one call;
    /// a flood of notifications is thinned to this rate. Zero: no limit.
    pub progress_interval: Duration,
    /// Asked right before every (re)start of a server; `Err(reason)` fails that attempt (retried
    /// with backoff) and starts nothing. The host checks there that what the person approved
    /// (a trusted project's files) is still what would run.
    pub before_spawn: Option<SpawnGate>,
    /// Where OAuth tokens of remote servers are kept (the OS keyring in the app). With it, a
    /// streamable-HTTP server without an `Authorization` header connects with its stored token;
    /// without a usable token, a server answering 401 is
    /// [`crate::status::ServerState::NeedsLogin`] and not retried until `aibuddy mcp login`.
    pub token_vault: Option<Arc<dyn crate::oauth::TokenVault>>,
    /// The host's part of the confinement of servers with `"sandbox"` (home, hidden data dirs,
    /// credential paths, the person's exec settings). Default: [`SandboxHost::from_process`];
    /// the core adds its data directories and settings.
    pub sandbox_host: SandboxHost,
}

/// The check behind [`SpawnGate`]: `Err(reason)` refuses to start that server now.
pub type SpawnCheck = dyn Fn(&crate::ServerConfig) -> Result<(), String> + Send + Sync;

/// See [`McpOptions::before_spawn`].
#[derive(Clone)]
pub struct SpawnGate(pub Arc<SpawnCheck>);

impl std::fmt::Debug for SpawnGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpawnGate(..)")
    }
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            client_name: "aibuddy".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            backoff: Backoff::default(),
            default_cwd: None,
            health_check_timeout: DEFAULT_HEALTH_CHECK_TIMEOUT,
            max_message_bytes: crate::stdio::DEFAULT_MAX_MESSAGE_BYTES,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            before_spawn: None,
            token_vault: None,
            sandbox_host: SandboxHost::from_process(),
        }
    }
}

/// Host services the servers may reach through the client.
#[derive(Clone)]
pub struct McpHandlers {
    /// Where elicitation requests go (the same broker that asks the person for confirmations).
    pub elicitation: Arc<dyn ElicitationBroker>,
}

impl Default for McpHandlers {
    fn default() -> Self {
        McpHandlers {
            elicitation: Arc::new(DeclineElicitation),
        }
    }
}

/// The result of a completed `tools/call`. `is_error` results are tool-level failures reported by
/// the server (the call itself worked); the content blocks are kept in their wire form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpCallResult {
    pub server: String,
    pub tool: String,
    /// Content blocks as JSON (`{"type":"text","text":...}`, images, resources, ...).
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl McpCallResult {
    /// The text blocks joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_results_join_text_blocks() {
        let result = McpCallResult {
            server: "s".into(),
            tool: "t".into(),
            content: vec![
                serde_json::json!({"type": "text", "text": "a"}),
                serde_json::json!({"type": "image", "data": "", "mimeType": "image/png"}),
                serde_json::json!({"type": "text", "text": "b"}),
            ],
            structured_content: None,
            is_error: false,
        };
        assert_eq!(result.text(), "a\nb");
    }
}
