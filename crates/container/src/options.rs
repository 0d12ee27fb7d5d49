//! [`ContainerOptions`]: what [`crate::ContainerSandbox::open`] needs besides the sandbox
//! settings (the engine, the image, the working directory, the project mode, the engine's
//! request bound, the bridge program), made from the `sandbox.container` settings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aibuddy_sandbox::{SandboxError, SandboxKind};

use crate::engine::Endpoint;
use crate::settings::{ContainerSettings, ProjectMode};

/// How long one engine request may take before its response starts (create, start, inspect...).
pub const DEFAULT_ENGINE_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`ContainerSandbox::open`] needs besides the sandbox settings.
#[derive(Debug, Clone)]
pub struct ContainerOptions {
    pub endpoint: Endpoint,
    pub image: String,
    pub workdir: String,
    pub project: ProjectMode,
    /// Bound of each engine request (see [`DEFAULT_ENGINE_TIMEOUT`]).
    pub engine_timeout: Duration,
    /// The bridge program bound into the container for commands with the network on
    /// (`aibuddy_exec::init_program`: `aibuddy-exec-init` or the app's own binary; it must run
    /// in the image). `None`: commands have no network at all.
    pub bridge_program: Option<PathBuf>,
    /// The bounds of `project: "sync"` (`sync/`).
    pub sync: crate::sync_state::SyncLimits,
}

impl ContainerOptions {
    /// The options of the `sandbox.container` settings; the engine is resolved from them, then
    /// `DOCKER_HOST`, then the usual sockets.
    pub fn from_settings(
        s: &ContainerSettings,
        docker_host: Option<&str>,
        runtime_dir: Option<&Path>,
    ) -> Result<Self, SandboxError> {
        let unavailable = |reason: String| SandboxError::Unavailable {
            kind: SandboxKind::Container,
            reason,
        };
        s.check().map_err(unavailable)?;
        let image = s.image.clone().ok_or_else(|| {
            unavailable("`sandbox.container.image` is not set: name the image to run in".into())
        })?;
        let endpoint = crate::engine::resolve(s.engine.as_deref(), docker_host, runtime_dir, |p| {
            p.exists()
        })
        .map_err(unavailable)?;
        Ok(ContainerOptions {
            endpoint,
            image,
            workdir: s.workdir().to_string(),
            project: s.project,
            engine_timeout: DEFAULT_ENGINE_TIMEOUT,
            bridge_program: aibuddy_sandbox::aibuddy_exec::init_program(None).ok(),
            sync: crate::sync_state::SyncLimits::default(),
        })
    }
}
