//! Reading the configuration files: the only I/O of [`crate::config`].

use std::path::{Path, PathBuf};

use super::expand::{Vars, process_env, with_project_root};
use super::parse::{merge, parse_config_text_with};
use super::types::{CONFIG_FILE_NAME, ConfigError, ConfigScope, LoadedConfigs, Transport};

/// `<project>/.aibuddy/mcp.json`.
pub fn project_config_path(project_root: &Path) -> PathBuf {
    project_root.join(".aibuddy").join(CONFIG_FILE_NAME)
}

/// `<user data dir>/mcp.json`.
pub fn user_config_path(user_data_dir: &Path) -> PathBuf {
    user_data_dir.join(CONFIG_FILE_NAME)
}

fn read_one(path: &Path, scope: ConfigScope, project_root: &Path) -> LoadedConfigs {
    let lookup = with_project_root(project_root, &process_env);
    match std::fs::read_to_string(path) {
        Ok(text) => parse_config_text_with(path, scope, &text, Vars::From(&lookup)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LoadedConfigs::default(),
        Err(e) => LoadedConfigs {
            servers: Vec::new(),
            errors: vec![ConfigError::file(path, None, format!("cannot read: {e}"))],
        },
    }
}

/// Reads the user file (if a data dir is given) and the project file, and merges them.
/// Missing files are not errors. `${VAR}`s are expanded from the process environment
/// (`${AIBUDDY_PROJECT_ROOT}` is `project_root`). Relative stdio `cwd`s resolve against the
/// project root. This starts nothing and decides nothing: which of these may start (and in which
/// working directory) is the core's project trust.
pub fn load_server_configs(project_root: &Path, user_data_dir: Option<&Path>) -> LoadedConfigs {
    let user = user_data_dir
        .map(|dir| read_one(&user_config_path(dir), ConfigScope::User, project_root))
        .unwrap_or_default();
    let project = read_one(
        &project_config_path(project_root),
        ConfigScope::Project,
        project_root,
    );
    let mut merged = merge(user, project);
    for cfg in &mut merged.servers {
        if let Transport::Stdio { cwd: Some(cwd), .. } = &mut cfg.transport
            && cwd.is_relative()
        {
            *cwd = project_root.join(&*cwd);
        }
    }
    merged
}
