//! Which MCP servers may start: the user's `mcp.json` (the person's own) always; the project's
//! `.aibuddy/mcp.json` entries only in a trusted project. An untrusted project entry that replaces a
//! user entry of the same name holds back both: the project meant to change that server, and
//! running the user's under a name the project now claims would be a silent surprise.

use std::collections::BTreeSet;
use std::path::Path;

use aibuddy_mcp::config::{self, ConfigScope, LoadedConfigs, Transport};
use aibuddy_mcp::{ConfigError, ServerConfig};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::files::{FileContent, ProjectFile};

/// The absence reason of a project server held back because the project is not trusted.
pub const NOT_TRUSTED: &str = "project not trusted";

/// What the plane starts, and what it holds back.
#[derive(Debug, Clone, Default)]
pub struct McpPlan {
    /// Servers to start (user entries, and project entries when trusted).
    pub servers: Vec<ServerConfig>,
    pub errors: Vec<ConfigError>,
    /// Project servers not started because the project is not trusted (by name).
    pub untrusted: Vec<String>,
    /// The project file these came from (for problem lines).
    pub project_file: String,
}

/// One project MCP server, as trusting the project would start it. Environment variables and
/// headers are named, never their values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ServerGrant {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    pub cwd: Option<String>,
    /// Names of the environment variables its entry sets.
    pub env: Vec<String>,
    /// Names of the HTTP headers its entry sets.
    pub headers: Vec<String>,
    /// It replaces the user-level server of the same name.
    pub replaces_user_server: bool,
}

fn read_user(data_dir: &Path) -> LoadedConfigs {
    let path = config::user_config_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => config::parse_config_text(&path, ConfigScope::User, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LoadedConfigs::default(),
        Err(e) => LoadedConfigs {
            servers: Vec::new(),
            errors: vec![ConfigError {
                file: path,
                server: None,
                field: None,
                message: format!("cannot read: {e}"),
            }],
        },
    }
}

/// The servers of both files (project text from the snapshot), merged as `load_server_configs`
/// does, and the names the user file defines.
fn merged(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
) -> (LoadedConfigs, BTreeSet<String>) {
    let user = read_user(data_dir);
    let user_names = user.servers.iter().map(|s| s.name.clone()).collect();
    let project_cfg = match &project.content {
        FileContent::Present(text) => {
            config::parse_config_text(&project.path, ConfigScope::Project, text)
        }
        _ => LoadedConfigs::default(),
    };
    let mut all = config::merge(user, project_cfg);
    for cfg in &mut all.servers {
        if let Transport::Stdio { cwd: Some(cwd), .. } = &mut cfg.transport
            && cwd.is_relative()
        {
            *cwd = project_root.join(&*cwd);
        }
    }
    (all, user_names)
}

/// Whether a merged entry is the project's and would run something.
fn is_project_grant(cfg: &ServerConfig) -> bool {
    cfg.scope == ConfigScope::Project && cfg.enabled
}

/// The project servers trust would start.
pub fn grants(project_root: &Path, data_dir: &Path, project: &ProjectFile) -> Vec<ServerGrant> {
    let (all, user_names) = merged(project_root, data_dir, project);
    all.servers
        .iter()
        .filter(|c| is_project_grant(c))
        .map(|c| {
            let mut g = ServerGrant {
                name: c.name.clone(),
                transport: String::new(),
                command: None,
                args: Vec::new(),
                url: None,
                cwd: None,
                env: Vec::new(),
                headers: Vec::new(),
                replaces_user_server: user_names.contains(&c.name),
            };
            match &c.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    g.transport = "stdio".into();
                    g.command = Some(command.clone());
                    g.args = args.clone();
                    g.env = env.keys().cloned().collect();
                    g.cwd = Some(cwd.as_deref().unwrap_or(project_root).display().to_string());
                }
                Transport::Http { url, headers } => {
                    g.transport = "http".into();
                    g.url = Some(url.clone());
                    g.headers = headers.keys().cloned().collect();
                }
            }
            g
        })
        .collect()
}

/// What the plane may start now.
pub fn plan(project_root: &Path, data_dir: &Path, project: &ProjectFile, trusted: bool) -> McpPlan {
    let (all, _) = merged(project_root, data_dir, project);
    let mut plan = McpPlan {
        errors: all.errors,
        project_file: project.path.display().to_string(),
        ..McpPlan::default()
    };
    for cfg in all.servers {
        if !trusted && is_project_grant(&cfg) {
            plan.untrusted.push(cfg.name);
        } else {
            plan.servers.push(cfg);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_file(root: &Path, text: &str) -> ProjectFile {
        ProjectFile {
            relative: super::super::files::PROJECT_MCP,
            path: root.join(".aibuddy/mcp.json"),
            content: FileContent::Present(text.to_string()),
        }
    }

    #[test]
    fn untrusted_project_servers_are_held_back_and_shadowed_user_servers_too() {
        let data = tempfile::tempdir().unwrap();
        std::fs::write(
            data.path().join("mcp.json"),
            r#"{"mcpServers": {"mine": {"command": "m"}, "shared": {"command": "user-version"}}}"#,
        )
        .unwrap();
        let root = Path::new("/p");
        let f = project_file(
            root,
            r#"{"mcpServers": {"shared": {"command": "evil", "env": {"TOKEN": "s3cret"}},
                               "proj": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer z"}},
                               "off": {"command": "x", "enabled": false}}}"#,
        );
        let p = plan(root, data.path(), &f, false);
        let started: Vec<&str> = p.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            started,
            vec!["mine", "off"],
            "disabled entries start nothing"
        );
        assert_eq!(p.untrusted, vec!["proj", "shared"]);
        let p = plan(root, data.path(), &f, true);
        assert_eq!(p.servers.len(), 4);
        assert!(p.untrusted.is_empty());

        let g = grants(root, data.path(), &f);
        assert_eq!(g.len(), 2);
        let shared = g.iter().find(|g| g.name == "shared").unwrap();
        assert!(shared.replaces_user_server);
        assert_eq!(shared.command.as_deref(), Some("evil"));
        assert_eq!(shared.env, vec!["TOKEN"]);
        assert_eq!(shared.cwd.as_deref(), Some("/p"));
        let text = serde_json::to_string(&g).unwrap();
        assert!(
            !text.contains("s3cret") && !text.contains("Bearer"),
            "{text}"
        );
    }
}
