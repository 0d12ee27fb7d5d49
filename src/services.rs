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
    pub processes: crate::processes::Processes,
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

/// Create the sandbox the settings name (`local`, `container`; `daytona` and `e2b` are
/// explicit errors).
///
/// `container` resolves its engine from `sandbox.container.engine` (user level only), else the
/// person's `DOCKER_HOST`, else the usual sockets: the environment here is the person's choice of
/// engine, read where that choice is made (as `PATH` is for a server's command).
pub fn open_sandbox(
    settings: &crate::settings::SandboxSettings,
    project_root: &std::path::Path,
) -> Result<Arc<dyn Sandbox>, String> {
    let kind = settings.kind.as_str();
    let kind: SandboxKind = kind
        .parse()
        .map_err(|e| format!("sandbox kind `{kind}` is not known: {e}"))?;
    let sandbox_settings = SandboxSettings::new(project_root);
    if kind == SandboxKind::Container {
        return open_container(settings, &sandbox_settings);
    }
    // The sandbox's own error already names the kind and why it is unavailable.
    aibuddy_sandbox::create_sandbox(kind, &sandbox_settings).map_err(|e| e.to_string())
}

/// The `container` sandbox of these settings (engine from the settings, `DOCKER_HOST`, the usual
/// sockets).
#[cfg(feature = "container")]
fn open_container(
    settings: &crate::settings::SandboxSettings,
    sandbox_settings: &SandboxSettings,
) -> Result<Arc<dyn Sandbox>, String> {
    let container = match &settings.container {
        Some(v) => aibuddy_sandbox::ContainerSettings::from_value(v)
            .map_err(|e| format!("sandbox `container` is unavailable: sandbox.container: {e}"))?,
        None => Default::default(),
    };
    let docker_host = std::env::var("DOCKER_HOST").ok();
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let opts = aibuddy_container::ContainerOptions::from_settings(
        &container,
        docker_host.as_deref(),
        runtime_dir.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    aibuddy_container::ContainerSandbox::open(sandbox_settings, opts)
        .map(|s| Arc::new(s) as Arc<dyn Sandbox>)
        .map_err(|e| e.to_string())
}

/// Built without the `container` feature: the kind is known, its adapter is not here.
#[cfg(not(feature = "container"))]
fn open_container(
    _settings: &crate::settings::SandboxSettings,
    _sandbox_settings: &SandboxSettings,
) -> Result<Arc<dyn Sandbox>, String> {
    Err(
        "sandbox `container` is unavailable: this build of aibuddy has no container adapter \
         (the `container` feature)"
            .to_string(),
    )
}

/// Where calls would run under these settings, in one line, without opening anything (for
/// `aibuddy trust`, which opens no sandbox): `local: this machine`, or the container's image,
/// engine and project mode. An open sandbox says it itself (`Sandbox::location`).
pub fn sandbox_summary(settings: &crate::settings::SandboxSettings) -> String {
    match settings.kind.as_str() {
        "container" => {
            let c = settings
                .container
                .as_ref()
                .map(aibuddy_sandbox::ContainerSettings::from_value);
            match c {
                Some(Ok(c)) => format!(
                    "container: image `{}` on engine {}, project {} at {}, no network",
                    c.image.as_deref().unwrap_or("(not set)"),
                    c.engine
                        .as_deref()
                        .unwrap_or("(DOCKER_HOST, else the usual sockets)"),
                    match c.project {
                        aibuddy_sandbox::ProjectMode::Bind => "bind",
                        aibuddy_sandbox::ProjectMode::Sync =>
                            "sync (copied in, the changes brought back but protected paths and links leading out)",
                    },
                    c.workdir()
                ),
                Some(Err(e)) => format!("container: unavailable (sandbox.container: {e})"),
                None => "container: unavailable (sandbox.container.image is not set)".to_string(),
            }
        }
        "local" => "local: this machine".to_string(),
        other => format!("{other}: unavailable in this build"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    #[cfg(feature = "container")]
    fn summaries_name_where_calls_run() {
        let mut s = crate::settings::SandboxSettings::default();
        assert_eq!(sandbox_summary(&s), "local: this machine");
        s.kind = "container".into();
        assert!(sandbox_summary(&s).contains("unavailable"));
        s.container = Some(json!({"image": "debian:12", "engine": "unix:///run/x.sock"}));
        assert_eq!(
            sandbox_summary(&s),
            "container: image `debian:12` on engine unix:///run/x.sock, project bind at /workspace, no network"
        );
        let err = open_sandbox(&s, std::path::Path::new("/")).unwrap_err();
        assert!(
            err.contains("not on this machine") || err.contains("container"),
            "{err}"
        );
    }
}
