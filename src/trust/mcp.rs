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
use super::pins::{self, Pin};

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
    /// The trust digest the project servers in `servers` were approved at (None when none is a
    /// project server). Before (re)starting one mid-session, check it with
    /// `crate::trust::verify_unchanged`: a pinned file may have been rewritten since.
    pub approved_digest: Option<String>,
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
    /// The paths inside the project its command line names, with their kind and content: part of
    /// the trust digest (see [`super::pins`]).
    pub pins: Vec<Pin>,
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
                line: None,
                column: None,
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
        FileContent::Present(text) => without_unsafe_names(config::parse_config_text(
            &project.path,
            ConfigScope::Project,
            text,
        )),
        _ => LoadedConfigs::default(),
    };
    let mut all = config::merge(user, project_cfg);
    for e in &mut all.errors {
        escape_error(e);
    }
    for cfg in &mut all.servers {
        if let Transport::Stdio { cwd: Some(cwd), .. } = &mut cfg.transport
            && cwd.is_relative()
        {
            *cwd = project_root.join(&*cwd);
        }
    }
    (all, user_names)
}

/// Make a config error terminal-safe: server names, fields and messages quote the file (a URL, a
/// transport name), and the file may be a project's.
fn escape_error(e: &mut ConfigError) {
    use aibuddy_common::term::line;
    e.server = e.server.as_deref().map(|s| line(s).into_owned());
    e.field = e.field.as_deref().map(|s| line(s).into_owned());
    e.message = line(&e.message).into_owned();
}

/// A project server name with a control character (an escape sequence, a carriage return, a
/// bidirectional override) is no name: the entry becomes a config error, its name escaped, so the
/// name never reaches a terminal, a tool name or a config key raw.
fn without_unsafe_names(mut loaded: LoadedConfigs) -> LoadedConfigs {
    let (ok, bad): (Vec<ServerConfig>, Vec<ServerConfig>) = loaded
        .servers
        .into_iter()
        .partition(|s| !s.name.chars().any(aibuddy_common::term::is_unsafe));
    loaded.servers = ok;
    for s in bad {
        loaded.errors.push(ConfigError {
            file: s.source.unwrap_or_default(),
            line: None,
            column: None,
            server: Some(aibuddy_common::term::line(&s.name).into_owned()),
            field: None,
            message: "the server name contains control or bidirectional characters; ignored"
                .to_string(),
        });
    }
    loaded
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
                pins: Vec::new(),
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
                    let cwd = cwd.as_deref().unwrap_or(project_root);
                    g.pins = pins::pins(project_root, cwd, command, args, env);
                    g.cwd = Some(pins::shown_cwd(cwd).display().to_string());
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

/// Whether the merged entry may start: a project entry only when the project is trusted, a user
/// entry only when the user file is the person's own (not reachable from the project, see
/// `super::exposure`). A disabled entry starts nothing and is always kept.
fn may_start(cfg: &ServerConfig, trusted: bool, user_trusted: bool) -> bool {
    match cfg.scope {
        _ if !cfg.enabled => true,
        ConfigScope::Project => trusted,
        ConfigScope::User => user_trusted,
        ConfigScope::Inline => true,
    }
}

/// What the plane may start now. `user_trusted` is false when the data directory lies inside the
/// project: the user file's servers are then held back like untrusted project servers.
pub fn plan(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
    trusted: bool,
    user_trusted: bool,
) -> McpPlan {
    let (all, _) = merged(project_root, data_dir, project);
    let mut plan = McpPlan {
        errors: all.errors,
        project_file: project.path.display().to_string(),
        ..McpPlan::default()
    };
    for cfg in all.servers {
        if !may_start(&cfg, trusted, user_trusted) {
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
        let p = plan(root, data.path(), &f, false, true);
        let started: Vec<&str> = p.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            started,
            vec!["mine", "off"],
            "disabled entries start nothing"
        );
        assert_eq!(p.untrusted, vec!["proj", "shared"]);
        let p = plan(root, data.path(), &f, true, true);
        assert_eq!(p.servers.len(), 4);
        let p = plan(root, data.path(), &f, true, false);
        let started: Vec<&str> = p.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            started,
            vec!["off", "proj", "shared"],
            "the user's `mine` is held back"
        );
        assert_eq!(p.untrusted, vec!["mine"]);
        let p = plan(root, data.path(), &f, true, true);
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
