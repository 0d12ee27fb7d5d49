//! The runner request of one command from the settings (no I/O): the arguments of `execute`, the
//! environment policy (the provider keys always dropped), writable roots resolved, the data
//! directories hidden, and the approval mode `read-only`. `execute`, the person's hooks and the
//! confined MCP servers all build their requests here, so it sits below all three (above
//! `settings`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use aibuddy_sandbox::aibuddy_exec::{
    ConfinePolicy, EnvPolicy, ExecRequest, NamespacePolicy, timeout_from_ms,
};
use serde::Deserialize;

use crate::contract::ToolError;
use crate::settings::ExecSettings;

/// The app's provider keys: never passed to commands, whatever the include list says.
pub const PROVIDER_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AIBUDDY_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
];

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    pub command: String,
    pub timeout_ms: Option<u64>,
    pub description: Option<String>,
    /// Start in the background (`crate::tools::process`): the call returns with a process id.
    #[serde(default)]
    pub background: bool,
}

/// The environment policy from the project settings plus the provider keys.
pub fn env_policy(settings: &ExecSettings) -> EnvPolicy {
    EnvPolicy {
        include: settings.env_include.clone(),
        exclude: settings.env_exclude.clone(),
        always_drop: PROVIDER_KEYS.iter().map(|s| s.to_string()).collect(),
        set: Vec::new(),
    }
}

/// `~/x` -> home/x; relative -> beneath the project root; absolute kept.
pub(crate) fn resolve_root(given: &str, project_root: &Path, home: Option<&Path>) -> PathBuf {
    if let (Some(rest), Some(home)) = (given.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    if given == "~"
        && let Some(home) = home
    {
        return home.to_path_buf();
    }
    let p = Path::new(given);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        project_root.join(p)
    }
}

/// Builds the runner request from arguments and settings (no I/O).
pub fn build_request(
    args: &ExecArgs,
    settings: &ExecSettings,
    project_root: &Path,
    home: Option<&Path>,
    spool: Option<PathBuf>,
) -> Result<ExecRequest, ToolError> {
    if args.command.trim().is_empty() {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "execute: `command` is empty",
        ));
    }
    let timeout = timeout_from_ms(args.timeout_ms.or(Some(settings.default_timeout_ms)))
        .map_err(|e| ToolError::parameters("invalid_arguments", e.to_string()))?;
    let mut req = ExecRequest::new(args.command.clone(), project_root);
    req.timeout = timeout;
    req.heartbeat_interval = Duration::from_secs(settings.heartbeat_secs.max(1));
    req.env = env_policy(settings);
    req.writable_roots = settings
        .writable_roots
        .iter()
        .map(|r| resolve_root(r, project_root, home))
        .collect();
    req.network_allowed = settings.network.is_on();
    req.network_policy = settings.network.policy();
    req.max_processes = settings.max_processes;
    if !settings.namespaces {
        req.namespaces = NamespacePolicy::Off;
    }
    req.protected_paths = settings.protected_paths.clone();
    req.unprotected_paths = settings.unprotected_paths.clone();
    req.confine = ConfinePolicy::BestEffort;
    req.spool_path = spool;
    req.home = home.map(Path::to_path_buf);
    req.exposed_credentials = settings
        .expose_credentials
        .iter()
        .map(|r| resolve_root(r, project_root, home))
        .collect();
    Ok(req)
}

/// The data directories hidden from commands: the one in use and the default one, once each.
pub fn data_dirs(in_use: &Path, default: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![in_use.to_path_buf()];
    if default != in_use {
        dirs.push(default.to_path_buf());
    }
    dirs
}

/// The approval mode `read-only`: the project and the writable roots read-only, no network, and
/// no run at all where the command cannot be confined.
pub fn make_read_only(req: &mut ExecRequest) {
    req.read_only = true;
    req.writable_roots.clear();
    req.network_allowed = false;
    req.network_policy = None;
    req.confine = ConfinePolicy::Required;
}
