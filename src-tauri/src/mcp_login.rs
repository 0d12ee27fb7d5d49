//! MCP OAuth login from the window (issue 14). `mcp_login` runs `aibuddy_mcp::oauth::login` for a
//! configured remote server: the system browser opens the authorization URL, the redirect comes
//! back to the loopback listener (RFC 8252) within [`LOGIN_TIMEOUT`], the token goes to the plane's
//! token vault (the OS keyring; never a file, SQLite or an event), then the server is reconnected
//! and [`SERVERS_CHANGED`] tells the catalog to refresh. `cancel_mcp_login` stops a login waiting
//! for the browser; `mcp_logout` forgets a token; `mcp_logins` names the servers holding one
//! (names only). Servers of a project `mcp.json` the person has not trusted are refused
//! (Authorization). The opener is swappable ([`McpLogins::set_opener`]) so a test can play the
//! browser; whatever opens, only an `https` URL (or `http` on a loopback host) is handed over,
//! since the authorization endpoint comes from the server's metadata.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aibuddy::contract::Stage;
use aibuddy::host::mcp_login::browser_url_allowed;
use aibuddy_mcp::Transport;
use aibuddy_mcp::oauth::{ClientIdentity, LoginOutcome, OpenUrl, TokenVault, VaultCredentialStore};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Runtime, State};
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// Emitted (no payload) after a login or logout changed a server's state.
pub const SERVERS_CHANGED: &str = "mcp-servers-changed";
/// How long a login waits for the browser to come back.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Hands an authorization URL to the browser.
pub type Opener = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// What a login did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum McpLoginOutcome {
    /// Authorized: the token is kept and the server reconnected.
    LoggedIn,
    /// The server answered without asking for authorization.
    NotNeeded,
}

/// A configured server holding a stored token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct McpTokenState {
    pub server: String,
    /// The server refused the token for lack of scope (403 `insufficient_scope`): logging in
    /// again asks for the granted scopes and the required ones (step-up).
    pub more_scope_needed: bool,
}

/// Managed state: the browser opener and the logins in progress (one per server).
pub struct McpLogins {
    opener: Mutex<Opener>,
    running: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next: AtomicU64,
}

impl Default for McpLogins {
    fn default() -> Self {
        McpLogins::new(Arc::new(|url: &str| {
            open::that_detached(url).map_err(|e| format!("the browser could not be opened: {e}"))
        }))
    }
}

impl McpLogins {
    pub fn new(opener: Opener) -> Self {
        McpLogins {
            opener: Mutex::new(opener),
            running: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        }
    }

    /// Replaces the browser opener (tests drive the flow with an HTTP client).
    pub fn set_opener(&self, opener: Opener) {
        *self.opener.lock().unwrap_or_else(PoisonError::into_inner) = opener;
    }

    fn opener(&self) -> Opener {
        self.opener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Registers a login of `server`; a login already waiting for it is cancelled.
    fn start(&self, server: &str) -> (u64, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, old)) = running.insert(server.to_owned(), (id, token.clone())) {
            old.cancel();
        }
        (id, token)
    }

    /// Forgets login `id` of `server` (a newer login of the same server stays).
    fn finish(&self, server: &str, id: u64) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running
            .get(server)
            .is_some_and(|(current, _)| *current == id)
        {
            running.remove(server);
        }
    }

    /// Cancels the login of `server` in progress; false when there was none.
    pub fn cancel(&self, server: &str) -> bool {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        match running.get(server) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

fn authz(message: impl Into<String>) -> CommandError {
    CommandError {
        code: ErrorCode::Tool,
        stage: Some(Stage::Authorization),
        message: message.into(),
    }
}

fn vault(state: &ShellState) -> Result<Arc<dyn TokenVault>, CommandError> {
    state
        .plane
        .mcp_token_vault
        .clone()
        .ok_or_else(|| CommandError {
            code: ErrorCode::Internal,
            stage: Some(Stage::Execution),
            message: "no token store is configured for MCP logins".into(),
        })
}

/// Runs the login of `server` (see the module text).
pub async fn login<R: Runtime>(
    app: &AppHandle<R>,
    state: &ShellState,
    logins: &McpLogins,
    server: &str,
) -> Result<McpLoginOutcome, CommandError> {
    let core = state.app()?;
    let url = {
        // The plan holds server configs that are not `Sync`: not kept across an await.
        let plan = aibuddy::trust::load_project(&core.project_root, &core.data_dir).mcp;
        aibuddy::host::mcp_login::login_url(&plan.servers, &plan.untrusted, server)
            .map_err(|e| CommandError::from_host(ErrorCode::Tool, e))?
    };
    let vault = vault(state)?;
    let (id, cancel) = logins.start(server);
    // A URL the browser must not get, or a browser that cannot start, ends the login at once.
    let refused: Arc<Mutex<Option<String>>> = Arc::default();
    let (opener, why, stop_now) = (logins.opener(), refused.clone(), cancel.clone());
    let open: OpenUrl = Arc::new(move |url: String| {
        let (opener, why, stop_now) = (opener.clone(), why.clone(), stop_now.clone());
        Box::pin(async move {
            if let Err(e) = browser_url_allowed(&url).and_then(|()| opener(&url)) {
                tracing::warn!("MCP login: {e}");
                *why.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                stop_now.cancel();
            }
        })
    });
    let identity = ClientIdentity {
        client_name: "aibuddy".into(),
        ..ClientIdentity::default()
    };
    // rmcp's authorization future is not `Send` (it holds a form serializer across an await), so
    // the flow runs on a blocking thread of the runtime, driven there to its end, cancellation
    // or timeout; the listener and every request end with it.
    let (name, stop) = (server.to_owned(), cancel.clone());
    let handle = tokio::runtime::Handle::current();
    let joined = tokio::task::spawn_blocking(move || {
        handle.block_on(async move {
            let flow = aibuddy_mcp::oauth::login(&name, &url, identity, vault, open);
            tokio::select! {
                r = tokio::time::timeout(LOGIN_TIMEOUT, flow) => Some(r),
                _ = stop.cancelled() => None,
            }
        })
    })
    .await;
    logins.finish(server, id);
    let result = match joined {
        Ok(Some(result)) => result,
        Ok(None) => {
            let why = refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            return Err(authz(match why {
                Some(why) => format!("the login to `{server}` stopped: {why}"),
                None => format!("the login to `{server}` was cancelled"),
            }));
        }
        Err(e) => {
            return Err(CommandError {
                code: ErrorCode::Internal,
                stage: Some(Stage::Execution),
                message: format!("the login task failed: {e}"),
            });
        }
    };
    let outcome = match result {
        Err(_) => {
            return Err(authz(format!(
                "no answer from the browser within {}s",
                LOGIN_TIMEOUT.as_secs()
            )));
        }
        Ok(Err(e)) => {
            return Err(CommandError {
                code: ErrorCode::Tool,
                stage: Some(e.stage()),
                message: format!("login to `{server}` failed: {e}"),
            });
        }
        Ok(Ok(LoginOutcome::LoggedIn)) => McpLoginOutcome::LoggedIn,
        Ok(Ok(_)) => McpLoginOutcome::NotNeeded,
    };
    if let Some(manager) = core.capabilities.mcp.as_ref() {
        // A connected server (a step-up) keeps its old token until it connects again.
        let connected = manager
            .status()
            .iter()
            .any(|s| s.server == server && s.state == aibuddy_mcp::ServerState::Connected);
        if connected {
            if let Err(e) = manager.restart(server).await {
                tracing::warn!(server = ?server, "MCP server restart after login: {e}");
            }
        } else {
            manager.reconnect(server);
        }
    }
    tracing::info!(server = ?server, "MCP login finished");
    let _ = app.emit(SERVERS_CHANGED, ());
    Ok(outcome)
}

/// Logs in to MCP server `server` (system browser, loopback redirect), then reconnects it.
#[tauri::command]
pub async fn mcp_login<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    logins: State<'_, McpLogins>,
    server: String,
) -> Result<McpLoginOutcome, CommandError> {
    login(&app, &state, &logins, &server).await
}

/// Stops the login of `server` waiting for the browser; false when none was in progress.
#[tauri::command]
pub async fn cancel_mcp_login(
    logins: State<'_, McpLogins>,
    server: String,
) -> Result<bool, CommandError> {
    Ok(logins.cancel(&server))
}

/// Forgets server `server`'s token and reconnects it (it then needs login); false when no token
/// was stored.
#[tauri::command]
pub async fn mcp_logout<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    server: String,
) -> Result<bool, CommandError> {
    let vault = vault(&state)?;
    let had = aibuddy_mcp::oauth::logout(&server, vault.as_ref()).map_err(|e| CommandError {
        code: ErrorCode::Tool,
        stage: Some(e.stage()),
        message: e.to_string(),
    })?;
    if let Ok(core) = state.app()
        && let Some(manager) = core.capabilities.mcp.as_ref()
    {
        // A live connection keeps its token until it is made again.
        let _ = manager.restart(&server).await;
    }
    let _ = app.emit(SERVERS_CHANGED, ());
    Ok(had)
}

/// The configured servers holding a stored token (never the token), and whether each was
/// refused for lack of scope since.
#[tauri::command]
pub async fn mcp_logins(state: State<'_, ShellState>) -> Result<Vec<McpTokenState>, CommandError> {
    let vault = vault(&state)?;
    let core = state.app()?;
    let plan = aibuddy::trust::load_project(&core.project_root, &core.data_dir).mcp;
    Ok(plan
        .servers
        .iter()
        .filter(|s| matches!(s.transport, Transport::Http { .. } | Transport::Sse { .. }))
        .filter(|s| vault.load(&s.name).ok().flatten().is_some())
        .map(|s| McpTokenState {
            server: s.name.clone(),
            more_scope_needed: VaultCredentialStore::new(vault.clone(), &s.name)
                .step_up_scopes()
                .ok()
                .flatten()
                .is_some(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_login_of_a_server_cancels_the_waiting_one() {
        let logins = McpLogins::new(Arc::new(|_: &str| Ok(())));
        let (first_id, first) = logins.start("s");
        let (second_id, second) = logins.start("s");
        assert!(first.is_cancelled());
        assert!(!second.is_cancelled());
        // The first login ending does not forget the second.
        logins.finish("s", first_id);
        assert!(logins.cancel("s"));
        assert!(second.is_cancelled());
        logins.finish("s", second_id);
        assert!(!logins.cancel("s"));
    }
}
