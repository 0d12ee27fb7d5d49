//! The state one [`crate::ContainerSandbox`] shares between its clones: the engine client, the
//! options, the local adapter on the mounted folder, the containers once created ([`Created`])
//! and the folder of the commands' proxy sockets. Removed with the sandbox (`removal.rs`).

use aibuddy_sandbox::LocalSandbox;
use aibuddy_sandbox::aibuddy_exec::MountGuard;
use bollard::Docker;
use tokio::sync::OnceCell;

use crate::options::ContainerOptions;

/// The container of one sandbox, once created.
#[derive(Debug)]
pub(crate) struct Created {
    pub id: String,
    /// Whether the bridge program runs in this container (checked once, after it started):
    /// `Err(why)` and its commands get no network.
    pub bridge: Result<(), String>,
    /// The protected paths held for the container's life (the read-write container only):
    /// finished after the container is removed.
    pub guard: std::sync::Mutex<Option<MountGuard>>,
}

impl Created {
    /// Sweeps the protected paths once the container is gone (the placeholders released).
    pub(crate) fn release_guard(&self) {
        let guard = self
            .guard
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(g) = guard {
            let report = g.finish();
            if !report.is_empty() {
                tracing::warn!(
                    ?report,
                    "protected paths created in the container were removed"
                );
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub docker: Docker,
    pub opts: ContainerOptions,
    pub files: LocalSandbox,
    pub container: OnceCell<Created>,
    /// The container of read-only commands (the approval mode `read-only`): the project mounted
    /// read-only; created on the first such command.
    pub read_only: OnceCell<Created>,
    /// The folder of the commands' proxy sockets (`0700`, under `/tmp`), bound read-only at
    /// [`crate::wrapper::NET_DIR`] in the containers; `None` when it could not be made (no
    /// network then).
    pub net_dir: Option<tempfile::TempDir>,
    /// Set by [`ContainerSandbox::close`]: the containers are gone and none is made again.
    pub closed: std::sync::atomic::AtomicBool,
    /// `project: "sync"`: what each container holds (`sync/`).
    pub sync: crate::sync_state::SyncState,
}
