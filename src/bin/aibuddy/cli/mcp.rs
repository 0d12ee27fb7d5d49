//! `aibuddy mcp login SERVER` (OAuth for a remote server: prints the authorization URL, waits on
//! the loopback redirect), `aibuddy mcp logout SERVER` (forgets its token) and `aibuddy mcp
//! status [--json]` (each server: connected, needs login, failed with reason, and how a server
//! with `"sandbox"` runs confined: `sandboxed: namespaces+landlock-v7+nonet, network: off`). Tokens live in
//! the OS keyring beside provider keys (`aibuddy_provider::keys`, service `aibuddy-mcp`), never
//! in settings files, logs, events or SQLite.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aibuddy::app::AppOptions;
use aibuddy::host::mcp_login::browser_url_allowed;
use aibuddy::plane::KeyringVault;
use aibuddy::plane::{MCP_CONNECT_WAIT_ENV, connect_wait};
use aibuddy_common::term;
use aibuddy_mcp::oauth::{ClientIdentity, LoginOutcome, OpenUrl, TokenVault};
use aibuddy_mcp::{McpHandlers, McpManager, McpOptions, ServerConfig, ServerState};
use clap::Subcommand;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::print_json;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Authorize aibuddy at a remote MCP server (OAuth): prints a URL to open, waits for the
    /// browser's redirect, keeps the token in the OS keyring.
    Login {
        /// The server's name in mcp.json.
        server: String,
    },
    /// Forget a server's token.
    Logout { server: String },
    /// Each server's state: connected, needs login, failed with its reason.
    Status {
        #[arg(long)]
        json: bool,
    },
}

/// One server in `mcp status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpServerLine {
    pub server: String,
    /// `connected`, `needs_login`, `failed`, `connecting`, `disabled`, `not_trusted`.
    pub state: &'static str,
    pub reason: Option<String>,
    pub tools: usize,
    /// Tools its `tools` allow/deny lists in `mcp.json` leave out, with the reason.
    pub left_out: Vec<LeftOutTool>,
    /// `"sandbox"` in its entry: how it runs confined (confinement, network, writable roots);
    /// `null`: it runs unconfined.
    pub sandbox: Option<aibuddy_mcp::SandboxStatus>,
}

/// A tool of a server that `mcp.json`'s allow/deny lists leave out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOutTool {
    pub tool: String,
    /// `denied by mcp.json` or `not in allow list`.
    pub reason: String,
}

pub async fn run(cmd: McpCommand, opts: AppOptions) -> ExitCode {
    let project = aibuddy::trust::load_project(&opts.project, &opts.data_dir);
    let sandbox_host = aibuddy::plane::mcp_sandbox_host(
        &opts.project,
        &opts.data_dir,
        &project.settings.settings.exec,
    );
    let plan = project.mcp;
    match cmd {
        McpCommand::Login { server } => {
            match aibuddy::host::mcp_login::login_url(&plan.servers, &plan.untrusted, &server) {
                Ok(url) => login(&server, &url).await,
                Err(e) => {
                    eprintln!("aibuddy: {} (stage {})", term::line(&e.message), e.stage);
                    ExitCode::from(2)
                }
            }
        }
        McpCommand::Logout { server } => {
            match aibuddy_mcp::oauth::logout(&server, &KeyringVault) {
                Ok(true) => eprintln!("logged out of {}", term::line(&server)),
                Ok(false) => eprintln!("no token was stored for {}", term::line(&server)),
                Err(e) => {
                    eprintln!("aibuddy: {}", term::line(&e.to_string()));
                    return ExitCode::from(1);
                }
            }
            ExitCode::SUCCESS
        }
        McpCommand::Status { json } => {
            let mut lines = status(plan.servers, sandbox_host).await;
            lines.extend(plan.untrusted.iter().map(|name| McpServerLine {
                server: name.clone(),
                state: "not_trusted",
                reason: Some("the project is not trusted (run `aibuddy trust`)".into()),
                tools: 0,
                left_out: Vec::new(),
                sandbox: None,
            }));
            if json {
                return print_json(&lines);
            }
            for l in &lines {
                let reason = l
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                outln!(
                    "{}  {} ({} tools){}",
                    term::line(&l.server),
                    l.state,
                    l.tools,
                    term::line(&reason)
                );
                if let Some(sandbox) = &l.sandbox {
                    outln!("  {}", term::line(&sandbox.describe()));
                }
                for t in &l.left_out {
                    outln!(
                        "  left out: {} ({})",
                        term::line(&t.tool),
                        term::line(&t.reason)
                    );
                }
            }
            ExitCode::SUCCESS
        }
    }
}

/// Runs the OAuth flow of remote server `server` at `url`: the authorization URL is printed for
/// the person to open (only one the browser may get: [`browser_url_allowed`]; any other ends the
/// login at once), the redirect is awaited on the loopback listener.
async fn login(server: &str, url: &str) -> ExitCode {
    let refused: Arc<Mutex<Option<String>>> = Arc::default();
    let stop = CancellationToken::new();
    let (name, why, stop_now) = (server.to_owned(), refused.clone(), stop.clone());
    let open: OpenUrl = Arc::new(move |url: String| {
        let (name, why, stop_now) = (name.clone(), why.clone(), stop_now.clone());
        Box::pin(async move {
            match browser_url_allowed(&url) {
                Ok(()) => eprintln!(
                    "To authorize aibuddy at {}, open this URL in your browser:\n\n  {}\n\nWaiting for the browser to come back…",
                    term::line(&name),
                    term::line(&url)
                ),
                Err(e) => {
                    *why.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    stop_now.cancel();
                }
            }
        })
    });
    let identity = ClientIdentity {
        client_name: "aibuddy".into(),
        ..ClientIdentity::default()
    };
    let vault: Arc<dyn TokenVault> = Arc::new(KeyringVault);
    let flow = aibuddy_mcp::oauth::login(server, url, identity, vault, open);
    let result = tokio::select! {
        r = flow => r,
        _ = stop.cancelled() => {
            let why = refused.lock().unwrap_or_else(PoisonError::into_inner).take();
            eprintln!(
                "aibuddy: the login to {} stopped: {} (stage Authorization)",
                term::line(server),
                term::line(why.as_deref().unwrap_or("cancelled"))
            );
            return ExitCode::from(1);
        }
    };
    match result {
        Ok(LoginOutcome::LoggedIn) => {
            eprintln!("logged in to {}", term::line(server));
            ExitCode::SUCCESS
        }
        Ok(LoginOutcome::NotNeeded) => {
            eprintln!("{} needs no login", term::line(server));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "aibuddy: login to {} failed ({}): {}",
                term::line(server),
                e.stage(),
                term::line(&e.to_string())
            );
            ExitCode::from(1)
        }
    }
}

/// Connects every server once (with stored tokens) and reports where each stands.
async fn status(
    servers: Vec<ServerConfig>,
    sandbox_host: aibuddy_mcp::SandboxHost,
) -> Vec<McpServerLine> {
    let manager = McpManager::start(
        servers,
        McpHandlers::default(),
        McpOptions {
            token_vault: Some(Arc::new(KeyringVault)),
            sandbox_host,
            ..McpOptions::default()
        },
    );
    let wait = connect_wait(std::env::var(MCP_CONNECT_WAIT_ENV).ok().as_deref());
    manager
        .wait_until_settled(wait.max(Duration::from_secs(1)))
        .await;
    let lines = manager
        .status()
        .into_iter()
        .map(|s| {
            let (state, reason) = match &s.state {
                ServerState::Connected => ("connected", None),
                ServerState::NeedsLogin => ("needs_login", None),
                ServerState::Failed { reason, .. } => ("failed", Some(reason.clone())),
                ServerState::Reconnecting { last_reason, .. } => {
                    ("failed", Some(last_reason.clone()))
                }
                ServerState::Connecting => ("connecting", None),
                ServerState::Disabled => ("disabled", None),
            };
            McpServerLine {
                server: s.server,
                state,
                reason,
                tools: s.tool_count,
                sandbox: s.sandbox,
                left_out: s
                    .filtered_tools
                    .into_iter()
                    .map(|f| LeftOutTool {
                        tool: f.tool,
                        reason: f.reason,
                    })
                    .collect(),
            }
        })
        .collect();
    manager.shutdown().await;
    lines
}
