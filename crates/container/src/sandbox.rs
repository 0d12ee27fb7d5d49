//! [`ContainerSandbox`]: the `Sandbox` of a container on a Docker Engine API host.
//!
//! The container is created on first use (opening a project never waits for an engine) from the
//! configured image, with no network of its own (`NetworkMode: none`; a command with the network
//! on reaches the app's allow-list proxy through the bridge program, see `exec.rs`), the project
//! bind-mounted at `workdir` (`project: "bind"`) with its protected paths held for the
//! container's life (`aibuddy_exec::MountGuard`: absent ones cannot be created either), labelled
//! `aibuddy.sandbox`, and removed when the sandbox is dropped.
//!
//! File operations run on the project's mount: in `bind` mode the container sees the project
//! folder itself, so list, read, write, edit, glob and grep go through the local adapter's cap-std
//! handle on that folder: the same bounds, the same stage-attributed errors and the same scoping
//! (nothing outside the mounted folder, symlinks included), and the bytes the container sees.
//! Commands run inside the container (`exec.rs`).
//!
//! The pieces: `options.rs` (what opening needs), `state.rs` (what the clones share),
//! `container.rs` (creating and starting a container), `removal.rs` (`close()` and removal on
//! drop), `operations.rs` (the `Sandbox` trait: file operations on the mount, `exec` forwarded to
//! `exec.rs`).
//!
//! With `project: "sync"` (any engine, `tcp://` included) nothing of this machine is bound: the
//! project is copied in and the container's changes brought back around each command (`sync/`).

use std::path::PathBuf;
use std::sync::Arc;

use aibuddy_sandbox::aibuddy_exec::protect::Placeholder;
use aibuddy_sandbox::{LocalSandbox, SandboxError, SandboxKind, SandboxSettings};
use tokio::sync::OnceCell;

use crate::container::create_container;
use crate::engine::engine_error;
pub use crate::options::{ContainerOptions, DEFAULT_ENGINE_TIMEOUT};
use crate::settings::ProjectMode;
use crate::state::{Created, Inner};
use crate::wrapper::NET_DIR;

/// The prefix of the proxy socket folders of container sandboxes under `/tmp` (not the local
/// path's `aibuddy-net-`, whose sweep judges a folder by its one `proxy.sock`).
const NET_DIR_PREFIX: &str = "aibuddy-cnet-";

/// A sandbox whose commands run in a container of a Docker Engine API host.
#[derive(Debug, Clone)]
pub struct ContainerSandbox {
    pub(crate) inner: Arc<Inner>,
}
impl ContainerSandbox {
    /// Open the sandbox (no engine request yet: the container is created on first use).
    pub fn open(settings: &SandboxSettings, opts: ContainerOptions) -> Result<Self, SandboxError> {
        // `sync` copies the project in (any engine); `bind` mounts it (this machine's only).
        if opts.project == ProjectMode::Bind && !opts.endpoint.is_local() {
            return Err(SandboxError::Unavailable {
                kind: SandboxKind::Container,
                reason: format!(
                    "`project: \"bind\"` mounts this machine's project folder, but the engine {} is \
                     not on this machine: use `\"project\": \"sync\"` (copied in, changes brought back)",
                    opts.endpoint.shown()
                ),
            });
        }
        let docker =
            crate::engine::connect(&opts.endpoint, opts.engine_timeout).map_err(|reason| {
                SandboxError::Unavailable {
                    kind: SandboxKind::Container,
                    reason,
                }
            })?;
        let files = LocalSandbox::open(settings)?;
        // `tempfile` makes the folder `0700`: only this user (the container's root, rootless)
        // reaches the sockets in it.
        let net_dir = tempfile::Builder::new()
            .prefix(NET_DIR_PREFIX)
            .tempdir_in("/tmp")
            .inspect_err(|e| tracing::warn!(error = %e, "no proxy folder: container commands get no network"))
            .ok()
            // `sync` binds nothing of this machine: no proxy folder.
            .filter(|_| opts.project == ProjectMode::Bind);
        Ok(ContainerSandbox {
            inner: Arc::new(Inner {
                docker,
                opts,
                files,
                container: OnceCell::new(),
                read_only: OnceCell::new(),
                net_dir,
                closed: std::sync::atomic::AtomicBool::new(false),
                sync: Default::default(),
            }),
        })
    }

    /// Whether the project is copied in and its changes brought back (`project: "sync"`).
    pub fn synced(&self) -> bool {
        self.inner.opts.project == ProjectMode::Sync
    }

    /// The container's id, once one was created.
    pub fn container_id(&self) -> Option<String> {
        self.inner.container.get().map(|c| c.id.clone())
    }

    /// Where command `id`'s proxy listens: on the host and in the container (`Err(why)`: the
    /// container has no working bridge program or there is no proxy folder, so no network).
    pub(crate) fn proxy_socket(
        &self,
        created: &Created,
        id: &str,
    ) -> Result<(PathBuf, String), String> {
        created.bridge.clone()?;
        let dir = self.inner.net_dir.as_ref().ok_or_else(|| {
            "off: the folder of the proxy sockets could not be made (no network)".to_string()
        })?;
        let name = format!("{id}.sock");
        Ok((dir.path().join(&name), format!("{NET_DIR}/{name}")))
    }

    /// The id of the container that runs (or ran) `read_only` commands, once created.
    pub(crate) fn container_for(&self, read_only: bool) -> Option<String> {
        let cell = if read_only {
            &self.inner.read_only
        } else {
            &self.inner.container
        };
        cell.get().map(|c| c.id.clone())
    }

    pub fn options(&self) -> &ContainerOptions {
        &self.inner.opts
    }

    /// The container of `read_only` commands or of the others, created and started on first use
    /// (bounded by twice the engine timeout).
    pub(crate) async fn ensure(
        &self,
        read_only: bool,
        protected: &[(String, Placeholder)],
    ) -> Result<&Created, SandboxError> {
        let inner = &self.inner;
        if inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(engine_error(
                &inner.opts.endpoint,
                "this container sandbox was closed; its containers are removed",
            ));
        }
        let bound = inner.opts.engine_timeout.saturating_mul(2);
        let cell = if read_only {
            &inner.read_only
        } else {
            &inner.container
        };
        cell.get_or_try_init(|| async {
            match tokio::time::timeout(bound, create_container(inner, read_only, protected)).await {
                Ok(r) => r,
                Err(_) => Err(engine_error(
                    &inner.opts.endpoint,
                    format!("did not create the container within {} s", bound.as_secs()),
                )),
            }
        })
        .await
    }
}
