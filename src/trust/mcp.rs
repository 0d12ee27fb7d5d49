//! Which MCP servers may start: the user's `mcp.json` (the person's own) always, unless an entry
//! reaches into the project; the project's `.aibuddy/mcp.json` entries only in a trusted project.
//! An untrusted project entry that replaces a user entry of the same name holds back both: the
//! project meant to change that server, and running the user's under a name the project now
//! claims would be a silent surprise.
//!
//! Working directories: a project server without `cwd` starts in the project root; a user-level
//! one in [`neutral_cwd`] (an empty 0700 directory of the data dir), so `python -m srv` or
//! `npx srv` never loads what a command planted in the project. A user-level entry that still
//! reaches into the project ([`user_reach`]: its `cwd` there, its command, an argument or an
//! `env` path there, `${AIBUDDY_PROJECT_ROOT}` included) is pinned, shown by trust and held back
//! like a project server until the project is trusted at its current digest.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use aibuddy_mcp::config::{
    self, ConfigScope, LoadedConfigs, Transport, Vars, process_env, with_project_root,
};
use aibuddy_mcp::{ConfigError, ServerConfig};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::files::{FileContent, ProjectFile};
use super::pins::{self, Pin};

/// The absence reason of a project server (or a user-level one reaching into the project) held
/// back because the project is not trusted.
pub const NOT_TRUSTED: &str = "project not trusted";

/// The folder of the data dir that user-level stdio servers without `cwd` start in.
pub const NEUTRAL_CWD: &str = "mcp-cwd";

/// The working directory of user-level stdio servers without `cwd` (pure): `<data dir>/mcp-cwd`.
pub fn neutral_cwd(data_dir: &Path) -> PathBuf {
    data_dir.join(NEUTRAL_CWD)
}

/// Make [`neutral_cwd`] an empty directory of mode 0700 (a symbolic link or a file in its place
/// is replaced). Something left inside is kept and logged: only the person's own processes can
/// write there (commands do not see the data dir), but nothing should.
pub fn prepare_neutral_cwd(data_dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = neutral_cwd(data_dir);
    if let Ok(meta) = std::fs::symlink_metadata(&dir)
        && !meta.is_dir()
    {
        std::fs::remove_file(&dir)?;
    }
    std::fs::create_dir_all(data_dir)?;
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Err(e) => return Err(e),
    }
    if std::fs::read_dir(&dir)?.next().is_some() {
        tracing::warn!(
            "{} is not empty; user-level MCP servers start there (nothing should be written there)",
            dir.display()
        );
    }
    Ok(dir)
}

/// What makes a user-level stdio entry (expanded, as it would start) reach into the canonical
/// `project_root`: its pins (the `cwd` when it lies in the project, then what its command line
/// names there, resolved against its working directory). Empty: it does not, and needs no trust.
/// Not a user-level enabled stdio entry: empty.
pub fn user_reach(project_root: &Path, data_dir: &Path, cfg: &ServerConfig) -> Vec<Pin> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &cfg.transport
    else {
        return Vec::new();
    };
    if cfg.scope != ConfigScope::User || !cfg.enabled {
        return Vec::new();
    }
    let cwd = cwd.clone().unwrap_or_else(|| neutral_cwd(data_dir));
    pins::cwd_pin(project_root, &cwd)
        .into_iter()
        .chain(pins::pins(project_root, &cwd, command, args, env))
        .collect()
}

/// What the plane starts, and what it holds back.
#[derive(Debug, Clone, Default)]
pub struct McpPlan {
    /// Servers to start (user entries, and project entries when trusted).
    pub servers: Vec<ServerConfig>,
    pub errors: Vec<ConfigError>,
    /// Servers not started because the project is not trusted (by name): project servers, and
    /// user-level ones reaching into the project ([`user_reach`]).
    pub untrusted: Vec<String>,
    /// The user-level ones among `untrusted`, with the file they come from.
    pub untrusted_user: Vec<(String, String)>,
    /// The project file these came from (for problem lines).
    pub project_file: String,
    /// The trust digest the project servers in `servers` were approved at (None when none is a
    /// project server). Before (re)starting one mid-session, check it with
    /// `crate::trust::verify_unchanged`: a pinned file may have been rewritten since.
    pub approved_digest: Option<String>,
}

/// One project MCP server (or user-level one reaching into the project), as trusting the project
/// would start it. Environment variables and headers are named, never their values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ServerGrant {
    pub name: String,
    /// `project` (the project's `mcp.json`) or `user` (the person's own `mcp.json`, an entry whose
    /// working directory, command line or `env` reaches into the project: see its pins).
    pub scope: String,
    /// `stdio`, `http` or `sse`.
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
    /// The person's environment variables its `command`, `args`, `env`, `url` and `headers` read
    /// through `${VAR}` (the fields above show the templates, as written).
    pub variables: Vec<GrantVariable>,
    /// The paths inside the project its command line names, with their kind and content: part of
    /// the trust digest (see [`super::pins`]).
    pub pins: Vec<Pin>,
}

/// One environment variable a project server reads. Its value is shown only when neither its
/// name nor its value looks like a secret ([`looks_secret`]); the trust digest covers the
/// template, not the value (the environment is the person's own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct GrantVariable {
    pub name: String,
    /// Set in the environment now (an unset one without default keeps the server from starting).
    pub set: bool,
    /// The value, when set and not secret-looking.
    pub value: Option<String>,
}

/// Whether a variable's value should stay hidden (the one rule of
/// [`aibuddy_common::secrets::variable_looks_secret`]). Pure.
pub fn looks_secret(name: &str, value: &str) -> bool {
    aibuddy_common::secrets::variable_looks_secret(name, value)
}

fn grant_variables(
    names: &[String],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<GrantVariable> {
    names
        .iter()
        .map(|name| {
            let value = lookup(name);
            GrantVariable {
                name: name.clone(),
                set: value.is_some(),
                value: value.filter(|v| !looks_secret(name, v)),
            }
        })
        .collect()
}

fn read_user(data_dir: &Path, vars: Vars<'_>) -> LoadedConfigs {
    let path = config::user_config_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => config::parse_config_text_with(&path, ConfigScope::User, &text, vars),
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
/// does, and the names the user file defines. `vars`: templates kept (what trust shows) or
/// expanded (what starts, and what the pins cover).
fn merged(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
    vars: Vars<'_>,
) -> (LoadedConfigs, BTreeSet<String>) {
    let user = read_user(data_dir, vars);
    let user_names = user.servers.iter().map(|s| s.name.clone()).collect();
    let project_cfg = match &project.content {
        FileContent::Present(text) => without_unsafe_names(config::parse_config_text_with(
            &project.path,
            ConfigScope::Project,
            text,
            vars,
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

/// The expanded entry of `c` (the template), else `c` itself.
fn expanded_of<'a>(expanded: &'a LoadedConfigs, c: &'a ServerConfig) -> &'a ServerConfig {
    expanded
        .servers
        .iter()
        .find(|e| e.name == c.name && e.scope == c.scope)
        .unwrap_or(c)
}

/// The project servers trust would start, as written (templates), with the variables they read;
/// their pins come from the expanded command lines (so `${X:-./run.sh}` pins `run.sh`, and a
/// changed value that points into the project changes the digest).
pub fn grants(project_root: &Path, data_dir: &Path, project: &ProjectFile) -> Vec<ServerGrant> {
    grants_with(project_root, data_dir, project, &process_env)
}

/// [`grants`] with an explicit environment lookup.
pub fn grants_with(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<ServerGrant> {
    let lookup = with_project_root(project_root, lookup);
    let lookup: &dyn Fn(&str) -> Option<String> = &lookup;
    let (all, user_names) = merged(project_root, data_dir, project, Vars::Keep);
    let (expanded, _) = merged(project_root, data_dir, project, Vars::From(lookup));
    all.servers
        .iter()
        .filter(|c| {
            is_project_grant(c)
                || (c.scope == ConfigScope::User
                    && !user_reach(project_root, data_dir, expanded_of(&expanded, c)).is_empty())
        })
        .map(|c| {
            let user = c.scope == ConfigScope::User;
            let mut g = ServerGrant {
                name: c.name.clone(),
                scope: if user { "user" } else { "project" }.to_string(),
                transport: String::new(),
                command: None,
                args: Vec::new(),
                url: None,
                cwd: None,
                env: Vec::new(),
                headers: Vec::new(),
                replaces_user_server: user_names.contains(&c.name),
                variables: grant_variables(&c.variables, lookup),
                pins: Vec::new(),
            };
            // The pins of what would run: the expanded entry when it expands, else the template.
            let run = expanded_of(&expanded, c);
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
                    let neutral = neutral_cwd(data_dir);
                    let cwd = match cwd {
                        Some(cwd) => cwd.as_path(),
                        None if user => &neutral,
                        None => project_root,
                    };
                    g.pins = match &run.transport {
                        _ if user => user_reach(project_root, data_dir, run),
                        Transport::Stdio {
                            command, args, env, ..
                        } => pins::pins(project_root, cwd, command, args, env),
                        Transport::Http { .. } | Transport::Sse { .. } => Vec::new(),
                    };
                    g.cwd = Some(pins::shown_cwd(cwd).display().to_string());
                }
                Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                    g.transport = match &c.transport {
                        Transport::Sse { .. } => "sse",
                        _ => "http",
                    }
                    .into();
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

/// What the plane may start now. `trusted`: the project's trust applies (its servers, and user-level
/// ones reaching into it, may start). `user_trusted` is false when the data directory lies inside
/// the project: the user file's servers are then held back like untrusted project servers. Every
/// stdio server comes out with its working directory set (see the module documentation).
pub fn plan(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
    trusted: bool,
    user_trusted: bool,
) -> McpPlan {
    plan_with(
        project_root,
        data_dir,
        project,
        trusted,
        user_trusted,
        &process_env,
    )
}

/// [`plan`] with an explicit environment lookup: the servers come out expanded; a server reading
/// an unset variable without default is a config error (located) and does not start.
pub fn plan_with(
    project_root: &Path,
    data_dir: &Path,
    project: &ProjectFile,
    trusted: bool,
    user_trusted: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> McpPlan {
    let lookup = with_project_root(project_root, lookup);
    let (all, _) = merged(project_root, data_dir, project, Vars::From(&lookup));
    let mut plan = McpPlan {
        errors: all.errors,
        project_file: project.path.display().to_string(),
        ..McpPlan::default()
    };
    let neutral = neutral_cwd(data_dir);
    let mut uses_neutral = false;
    for mut cfg in all.servers {
        let reaches = !user_reach(project_root, data_dir, &cfg).is_empty();
        if !may_start(&cfg, trusted, user_trusted) || (reaches && !trusted) {
            if cfg.scope == ConfigScope::User {
                let file = cfg.source.as_deref().unwrap_or(Path::new("mcp.json"));
                plan.untrusted_user
                    .push((cfg.name.clone(), file.display().to_string()));
            }
            plan.untrusted.push(cfg.name);
            continue;
        }
        // Every stdio server gets its working directory explicitly.
        if let Transport::Stdio {
            cwd: cwd @ None, ..
        } = &mut cfg.transport
        {
            *cwd = Some(if cfg.scope == ConfigScope::Project {
                project_root.to_path_buf()
            } else {
                uses_neutral = true;
                neutral.clone()
            });
        }
        plan.servers.push(cfg);
    }
    if uses_neutral && let Err(e) = prepare_neutral_cwd(data_dir) {
        tracing::warn!(
            "{}: cannot prepare the working directory of user-level MCP servers: {e}",
            neutral.display()
        );
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

    #[test]
    fn grants_show_templates_and_variables_and_pin_what_the_expansion_runs() {
        let data = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("run.sh"), "echo hi").unwrap();
        let f = project_file(
            root.path(),
            r#"{"mcpServers": {
                "s": {"command": "${RUNNER:-./run.sh}", "args": ["--home=${HOME_DIR}"],
                      "env": {"T": "${GH_TOKEN}", "R": "${RAW}"}},
                "u": {"url": "https://x/mcp", "headers": {"A": "${NOT_SET}"}}}}"#,
        );
        let env = |name: &str| match name {
            "HOME_DIR" => Some("/home/p".to_string()),
            "GH_TOKEN" => Some("ghp-short".to_string()),
            "RAW" => Some("a1b2c3d4e5f6a7b8c9d0".to_string()),
            _ => None,
        };
        let g = grants_with(root.path(), data.path(), &f, &env);
        let s = g.iter().find(|g| g.name == "s").unwrap();
        assert_eq!(
            s.command.as_deref(),
            Some("${RUNNER:-./run.sh}"),
            "the template"
        );
        assert_eq!(s.args, vec!["--home=${HOME_DIR}"]);
        let var = |name: &str| s.variables.iter().find(|v| v.name == name).unwrap();
        assert_eq!(var("HOME_DIR").value.as_deref(), Some("/home/p"));
        assert!(
            var("GH_TOKEN").set && var("GH_TOKEN").value.is_none(),
            "secret by name"
        );
        assert!(
            var("RAW").set && var("RAW").value.is_none(),
            "secret by shape"
        );
        assert!(!var("RUNNER").set);
        let run = s.pins.iter().find(|p| p.path == "run.sh");
        assert!(
            run.is_some_and(|p| p.state.starts_with("file sha256:")),
            "the expanded command is pinned: {:?}",
            s.pins
        );
        assert!(
            s.pins.iter().any(|p| p.path == "$T"),
            "env values are pinned by name: {:?}",
            s.pins
        );
        let u = g.iter().find(|g| g.name == "u").unwrap();
        assert_eq!(u.variables.len(), 1);
        assert!(!u.variables[0].set);
        let text = serde_json::to_string(&g).unwrap();
        assert!(
            !text.contains("ghp-short") && !text.contains("a1b2c3"),
            "{text}"
        );

        // What starts: expanded values; an unset variable is a located problem, not a server.
        let p = plan_with(root.path(), data.path(), &f, true, true, &env);
        let names: Vec<&str> = p.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["s"]);
        let Transport::Stdio { command, args, .. } = &p.servers[0].transport else {
            panic!("stdio expected")
        };
        assert_eq!(
            (command.as_str(), args[0].as_str()),
            ("./run.sh", "--home=/home/p")
        );
        assert_eq!(p.errors.len(), 1);
        assert_eq!(p.errors[0].field.as_deref(), Some("headers.A"));
        assert!(p.errors[0].line.is_some());
    }

    #[test]
    fn secret_looking_values_stay_hidden() {
        assert!(looks_secret("API_KEY", "x"));
        assert!(looks_secret("github_token", "x"));
        assert!(looks_secret("X", "sk4f8a9b2c3d4e5f6g"));
        assert!(!looks_secret("HOME", "/home/person/a1b2c3d4e5f6"));
        assert!(!looks_secret("MODE", "fast"));
    }
}
