//! Capability services the host injects into a run: the project, the data directory, settings, the
//! sandbox, and (as later parts land) the store, a summarizer, skills and MCP connections. The
//! effective tool set is intersected with what is present here.

use std::path::PathBuf;
use std::sync::Arc;

use aibuddy_sandbox::{Capabilities, Sandbox, SandboxKind, SandboxSettings};

use crate::approvals::SessionRules;
use crate::contract::ToolError;
use crate::settings::Settings;

/// What the host provides to tools. Absent services make the tools that need them absent.
pub struct Services {
    pub project_root: PathBuf,
    pub data_dir: PathBuf,
    pub settings: Settings,
    /// The project's sandbox, or why there is none (e.g. a remote kind that is unavailable).
    pub sandbox: Result<Arc<dyn Sandbox>, String>,
    /// Approval rules the person added since the project was opened (applied with the settings'
    /// rules; shared by every runner of the project).
    pub session_rules: SessionRules,
    /// The background processes of the project's runs (`execute` with `"background": true`);
    /// shared by every runner of the project.
    pub processes: crate::tools::process::Processes,
}

impl Services {
    /// The sandbox, or an Execution-stage `unavailable` error naming why there is none. Tools that
    /// need a sandbox are absent when it is missing, so this only fires if a host wires them anyway.
    pub fn sandbox(&self) -> Result<&Arc<dyn Sandbox>, ToolError> {
        self.sandbox
            .as_ref()
            .map_err(|reason| ToolError::execution("unavailable", reason.clone()))
    }

    /// The sandbox's capabilities, when there is one.
    pub fn capabilities(&self) -> Option<Capabilities> {
        self.sandbox.as_ref().ok().map(|s| s.capabilities())
    }
}

/// Create the sandbox named by the settings (`local`, `daytona`, `e2b`).
pub fn open_sandbox(
    kind: &str,
    project_root: &std::path::Path,
) -> Result<Arc<dyn Sandbox>, String> {
    let kind: SandboxKind = kind
        .parse()
        .map_err(|e| format!("sandbox kind `{kind}` is not known: {e}"))?;
    // The sandbox's own error already names the kind and why it is unavailable.
    aibuddy_sandbox::create_sandbox(kind, &SandboxSettings::new(project_root))
        .map_err(|e| e.to_string())
}
