//! The catalog's servers and skills, beside `list_tools`: each configured MCP server with its
//! connection state (connecting, connected with its tool count, failed with the error, needs
//! login, held back because the project is not trusted, refused configuration, and how a server
//! with `"sandbox"` runs confined), the skills with
//! the problems that left some out, and the person's "reconnect" (`McpManager::restart`).
//! Every string here may come from a server or a project file: the UI inserts it as text.

use aibuddy::app::App;
use aibuddy_mcp::ServerState;
use serde::Serialize;
use tauri::State;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// Where one configured MCP server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum ServerView {
    Connecting,
    Connected,
    /// A reconnect attempt (`attempt` from 1) after `reason`.
    Reconnecting {
        attempt: u32,
        reason: String,
    },
    /// Lost or never reached; `retry_in_ms` when another attempt is planned.
    Failed {
        reason: String,
        retry_in_ms: Option<u64>,
    },
    /// A remote server answered 401 and has no usable token: the person logs in.
    NeedsLogin,
    /// `"enabled": false` (or `"disabled": true`) in its configuration.
    Disabled,
    /// A project server not started because the project is not trusted.
    Untrusted,
    /// Its configuration entry was refused (`reason` names file, line and field).
    BadConfig {
        reason: String,
    },
}

/// One MCP server of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct CatalogServer {
    pub name: String,
    pub state: ServerView,
    /// Its tools in the catalog now.
    pub tool_count: u32,
    /// `serverInfo` from `initialize`, once connected.
    pub server_info: Option<String>,
    /// Tools it listed that were left out, each with the reason.
    pub rejected_tools: Vec<RejectedToolView>,
    /// `"sandbox"` in its entry: how it runs confined; `null`: it runs unconfined.
    pub sandbox: Option<SandboxView>,
}

/// How a server with `"sandbox"` runs confined (`aibuddy_mcp::SandboxStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SandboxView {
    /// The confinement its process got (`namespaces+landlock-v7+nonet`); `null` until it started
    /// once (one that cannot be confined never starts: its state says why).
    pub confinement: Option<String>,
    /// Where it may connect: `off`, `default registries`, `allow: a, b; deny: c`.
    pub network: String,
    /// Its writable roots besides its private temp dir.
    pub writable_roots: Vec<String>,
    /// Destinations (`host:port`) it tried that its proxy refused, the first 20, oldest first
    /// (chosen by the server: shown as text, never markup).
    pub refused_hosts: Vec<String>,
    /// How many more refused destinations there were.
    pub refused_more: u32,
}

/// The sandbox of one server for the UI (pure).
pub fn sandbox_view(status: Option<aibuddy_mcp::SandboxStatus>) -> Option<SandboxView> {
    status.map(|s| SandboxView {
        confinement: s.confinement,
        network: s.network,
        writable_roots: s.writable_roots,
        refused_hosts: s.refused_hosts,
        refused_more: u32::try_from(s.refused_more).unwrap_or(u32::MAX),
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RejectedToolView {
    pub tool: String,
    pub reason: String,
}

/// One skill of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct CatalogSkill {
    pub name: String,
    pub description: String,
    /// `bundled`, `user` or `project`.
    pub root: String,
}

/// Skills, and the problems that left some out (`file:line: message`, as `tools check` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct CatalogSkills {
    pub skills: Vec<CatalogSkill>,
    pub problems: Vec<String>,
}

/// The state of one server for the UI (pure).
pub fn server_view(state: &ServerState) -> ServerView {
    match state {
        ServerState::NeedsLogin => ServerView::NeedsLogin,
        ServerState::Connecting => ServerView::Connecting,
        ServerState::Connected => ServerView::Connected,
        ServerState::Disabled => ServerView::Disabled,
        ServerState::Reconnecting {
            attempt,
            last_reason,
        } => ServerView::Reconnecting {
            attempt: *attempt,
            reason: last_reason.clone(),
        },
        ServerState::Failed {
            reason,
            retry_in_ms,
        } => ServerView::Failed {
            reason: reason.clone(),
            retry_in_ms: *retry_in_ms,
        },
    }
}

/// Every configured server: the running ones, then those refused or held back, by name.
pub fn servers(app: &App) -> Vec<CatalogServer> {
    let plane = &app.capabilities;
    let mut out: Vec<CatalogServer> = plane
        .mcp
        .as_ref()
        .map(|m| m.status())
        .unwrap_or_default()
        .into_iter()
        .map(|s| CatalogServer {
            state: server_view(&s.state),
            tool_count: u32::try_from(s.tool_count).unwrap_or(u32::MAX),
            server_info: s.server_info,
            sandbox: sandbox_view(s.sandbox),
            rejected_tools: s
                .rejected_tools
                .into_iter()
                .map(|r| RejectedToolView {
                    tool: r.tool,
                    reason: r.reason,
                })
                .collect(),
            name: s.server,
        })
        .collect();
    let held = |name: &str, state: ServerView| CatalogServer {
        name: name.to_string(),
        state,
        tool_count: 0,
        server_info: None,
        rejected_tools: Vec::new(),
        sandbox: None,
    };
    for e in &plane.mcp_config_errors {
        if let Some(name) = &e.server
            && !out.iter().any(|s| &s.name == name)
        {
            let reason = e.to_string();
            out.push(held(name, ServerView::BadConfig { reason }));
        }
    }
    for name in &plane.mcp_untrusted {
        if !out.iter().any(|s| &s.name == name) {
            out.push(held(name, ServerView::Untrusted));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The skills catalog as loaded now.
pub fn skills(app: &App) -> CatalogSkills {
    let catalog = app.capabilities.skills.catalog();
    CatalogSkills {
        skills: catalog
            .skills
            .values()
            .map(|s| CatalogSkill {
                name: s.name.clone(),
                description: s.description.clone(),
                root: format!("{:?}", s.root).to_lowercase(),
            })
            .collect(),
        problems: catalog.problems.iter().map(ToString::to_string).collect(),
    }
}

/// Reconnects server `name` (closes its connection, starts it again). Refused for an unknown,
/// disabled or held-back server; a project server whose files changed since trust stays down
/// (the manager's spawn gate).
pub async fn reconnect(app: &App, name: &str) -> Result<(), CommandError> {
    let Some(manager) = app.capabilities.mcp.as_ref() else {
        return Err(CommandError {
            code: ErrorCode::Project,
            stage: Some(aibuddy::contract::Stage::Discovery),
            message: format!("no MCP server `{name}` is running in this project"),
        });
    };
    manager.restart(name).await.map_err(|e| CommandError {
        code: ErrorCode::Project,
        stage: Some(e.stage()),
        message: e.to_string(),
    })?;
    tracing::info!(server = ?name, "MCP server reconnect requested");
    Ok(())
}

/// Every configured MCP server with its state.
#[tauri::command]
pub async fn list_servers(
    state: State<'_, ShellState>,
) -> Result<Vec<CatalogServer>, CommandError> {
    Ok(servers(&*state.app()?))
}

/// The skills catalog and its problems.
#[tauri::command]
pub async fn list_skills(state: State<'_, ShellState>) -> Result<CatalogSkills, CommandError> {
    Ok(skills(&*state.app()?))
}

/// Reconnects MCP server `name` now; true once its new connection attempt has started.
#[tauri::command]
pub async fn reconnect_server(
    state: State<'_, ShellState>,
    name: String,
) -> Result<bool, CommandError> {
    reconnect(&*state.app()?, &name).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_to_views() {
        assert_eq!(
            server_view(&ServerState::NeedsLogin),
            ServerView::NeedsLogin
        );
        let failed = ServerState::Failed {
            reason: "exit 1".into(),
            retry_in_ms: Some(100),
        };
        assert_eq!(
            server_view(&failed),
            ServerView::Failed {
                reason: "exit 1".into(),
                retry_in_ms: Some(100)
            }
        );
        assert_eq!(server_view(&ServerState::Connected), ServerView::Connected);
    }
}
