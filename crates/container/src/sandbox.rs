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
//! With `project: "sync"` (any engine, `tcp://` included) nothing of this machine is bound: the
//! project is copied in and the container's changes brought back around each command (`sync/`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::aibuddy_exec::protect::Placeholder;
use aibuddy_sandbox::aibuddy_exec::{Confinement, ExecOutcome, ExecRequest, ExecSink, MountGuard};
use aibuddy_sandbox::api::*;
use aibuddy_sandbox::{
    Capabilities, LocalSandbox, Sandbox, SandboxError, SandboxKind, SandboxSettings,
};
use async_trait::async_trait;
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::engine::Endpoint;
use crate::settings::{ContainerSettings, ProjectMode};
use crate::wrapper::{BRIDGE_PROGRAM, KEEP_ALIVE, NET_DIR};

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
    pub sync: crate::sync::SyncLimits,
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
            sync: crate::sync::SyncLimits::default(),
        })
    }
}

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
    /// [`NET_DIR`] in the containers; `None` when it could not be made (no network then).
    pub net_dir: Option<tempfile::TempDir>,
    /// Set by [`ContainerSandbox::close`]: the containers are gone and none is made again.
    pub closed: std::sync::atomic::AtomicBool,
    /// `project: "sync"`: what each container holds (`sync/`).
    pub sync: crate::sync::SyncState,
}

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

    /// Remove the containers now (force), if any were created. The sandbox is finished: a
    /// command after this fails at Execution saying so. Dropping the sandbox removes the
    /// containers too, in the background.
    pub async fn close(&self) -> Result<(), SandboxError> {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for id in [self.container_for(false), self.container_for(true)]
            .into_iter()
            .flatten()
        {
            let opts = RemoveContainerOptions {
                force: true,
                ..Default::default()
            };
            let bound = self.inner.opts.engine_timeout;
            let removed =
                tokio::time::timeout(bound, self.inner.docker.remove_container(&id, Some(opts)))
                    .await;
            match removed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(engine_error(
                        &self.inner.opts.endpoint,
                        format!("could not remove container {id}: {e}"),
                    ));
                }
                Err(_) => {
                    return Err(engine_error(
                        &self.inner.opts.endpoint,
                        format!("did not remove container {id} within {} s", bound.as_secs()),
                    ));
                }
            }
        }
        // Nothing runs in the project's mount any more: sweep and release the protected paths.
        if let Some(c) = self.inner.container.get() {
            c.release_guard();
        }
        Ok(())
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

/// An Execution-stage error about the engine, naming it.
pub(crate) fn engine_error(endpoint: &Endpoint, what: impl std::fmt::Display) -> SandboxError {
    SandboxError::Exec {
        stage: aibuddy_sandbox::Stage::Execution,
        message: format!("container engine {}: {what}", endpoint.shown()),
    }
}

/// Where a host path under the project `root` is in the container (`None`: not under it).
fn in_container(root: &Path, workdir: &str, host: &Path) -> Option<String> {
    let rel = host.strip_prefix(root).ok()?;
    Some(if rel.as_os_str().is_empty() {
        workdir.to_string()
    } else {
        format!("{workdir}/{}", rel.to_string_lossy())
    })
}

async fn create_container(
    inner: &Inner,
    read_only: bool,
    protected: &[(String, Placeholder)],
) -> Result<Created, SandboxError> {
    // `project: "sync"`: nothing of this machine is bound (`sync/container.rs`).
    if inner.opts.project == ProjectMode::Sync {
        return crate::sync::create_container(inner, read_only).await;
    }
    let o = &inner.opts;
    let root_path = inner.files.root();
    let root = root_path.to_string_lossy().into_owned();
    // Mounts as structured values (no `src:dst:mode` string a `:` in a path could split).
    let bind = |source: String, target: String, read_only: bool| Mount {
        typ: Some(MountType::BIND),
        source: Some(source),
        target: Some(target),
        read_only: Some(read_only),
        ..Default::default()
    };
    let mut mounts = vec![bind(root.clone(), o.workdir.clone(), read_only)];
    // The protected paths, held as on the local namespace path (`aibuddy_exec::protect`, the one
    // owner of the list and of finding them, nested repositories included): every git directory
    // bound onto itself (it cannot be renamed away and replaced), every present protected path
    // and a placeholder for every absent one bound read-only over it, for the container's life.
    // A read-only project needs none of it.
    let guard = (!read_only).then(|| MountGuard::prepare(&[root_path.to_path_buf()], protected));
    if let Some(g) = &guard {
        let read_only_paths = g.read_only();
        let git_dirs = g.git_dirs().iter().map(|d| (d, false));
        for (dir, ro) in git_dirs.chain(read_only_paths.iter().map(|p| (p, true))) {
            // Outside the project (a worktree's git directory elsewhere): not in the container.
            if let Some(target) = in_container(root_path, &o.workdir, dir) {
                mounts.push(bind(dir.to_string_lossy().into_owned(), target, ro));
            }
        }
    }
    // Parents before what lies in them.
    mounts.sort_by_key(|m| m.target.as_deref().map_or(0, |t| t.matches('/').count()));
    // The bridge program and the proxy sockets' folder, both read-only (the network policy is
    // the proxy's, in this process; see `exec.rs`).
    if let (Some(program), Some(dir)) = (&o.bridge_program, &inner.net_dir) {
        mounts.push(bind(
            program.to_string_lossy().into_owned(),
            BRIDGE_PROGRAM.into(),
            true,
        ));
        mounts.push(bind(
            dir.path().to_string_lossy().into_owned(),
            NET_DIR.into(),
            true,
        ));
    }
    let body = ContainerCreateBody {
        image: Some(o.image.clone()),
        // Our PID 1 whatever the image's entrypoint (its CMD, if any, only becomes `$0`...).
        entrypoint: Some(vec!["/bin/sh".into(), "-c".into(), KEEP_ALIVE.into()]),
        working_dir: Some(o.workdir.clone()),
        labels: Some(
            [
                ("aibuddy.sandbox".to_string(), "1".to_string()),
                ("aibuddy.project".to_string(), root.clone()),
            ]
            .into(),
        ),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            mounts: Some(mounts),
            network_mode: Some("none".into()),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(read_only),
            tmpfs: read_only.then(|| [("/tmp".to_string(), "rw,size=64m".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    // The guard is released (placeholders removed) when creating or starting fails.
    let guard = std::sync::Mutex::new(guard);
    let created = inner
        .docker
        .create_container(None::<CreateContainerOptions>, body)
        .await
        .map_err(|e| {
            engine_error(
                &o.endpoint,
                format!(
                    "could not create the container from image `{}`: {e}",
                    o.image
                ),
            )
        })?;
    let id = created.id;
    if let Err(e) = inner.docker.start_container(&id, None).await {
        remove_quietly(inner.docker.clone(), id.clone());
        return Err(engine_error(
            &o.endpoint,
            format!("could not start the container: {e}"),
        ));
    }
    tracing::debug!(container = %id, image = %o.image, "container sandbox started");
    let bridge = match (&o.bridge_program, &inner.net_dir) {
        (Some(_), Some(_)) => check_bridge(inner, &id).await,
        (None, _) => Err("off: no bridge program to bind into the container (no network)".into()),
        (_, None) => {
            Err("off: the folder of the proxy sockets could not be made (no network)".into())
        }
    };
    if let Err(why) = &bridge {
        tracing::warn!(container = %id, image = %o.image, "{why}");
    }
    Ok(Created { id, bridge, guard })
}

/// Runs the bridge program once in the new container (`… --aibuddy-net-bridge <none> "exit 0"`:
/// it listens, runs the shell and exits with its status, connecting nowhere): a program the
/// image cannot run (another C library, a missing shared library) then means no network for
/// the commands, said in their report, instead of every networked command failing.
async fn check_bridge(inner: &Inner, container: &str) -> Result<(), String> {
    use bollard::exec::{CreateExecOptions, StartExecResults};
    use futures::StreamExt;
    let config = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(vec![
            BRIDGE_PROGRAM.to_string(),
            aibuddy_sandbox::aibuddy_exec::BRIDGE_MARKER.to_string(),
            format!("{NET_DIR}/check.sock"),
            "exit 0".to_string(),
        ]),
        ..Default::default()
    };
    let fail = |why: String| {
        format!("off: the bridge program cannot run in the container ({why}); no network")
    };
    let run = async {
        let exec = inner
            .docker
            .create_exec(container, config)
            .await
            .map_err(|e| e.to_string())?;
        let mut said = String::new();
        if let StartExecResults::Attached { mut output, .. } = inner
            .docker
            .start_exec(&exec.id, None)
            .await
            .map_err(|e| e.to_string())?
        {
            while let Some(item) = output.next().await {
                if let Ok(chunk) = item
                    && said.len() < 400
                {
                    said.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                }
            }
        }
        let code = crate::exec::exit_code(&inner.docker, &exec.id).await?;
        if code == 0 {
            Ok(())
        } else {
            Err(format!("exit {code}: {}", said.trim()))
        }
    };
    match tokio::time::timeout(inner.opts.engine_timeout, run).await {
        Ok(r) => r.map_err(|e| fail(one_line(&e))),
        Err(_) => Err(fail("the check did not finish in time".into())),
    }
}

/// One line of text from the container (its program's message), bounded.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}

/// Remove a container in the background (best effort, force).
fn remove_quietly(docker: Docker, id: String) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let opts = RemoveContainerOptions {
                force: true,
                ..Default::default()
            };
            if let Err(e) = docker.remove_container(&id, Some(opts)).await {
                tracing::debug!(container = %id, error = %e, "container not removed");
            }
        });
    }
}

/// Removing containers when the sandbox goes away is waited for (at most this long), so a
/// process that ends right after leaves none behind.
const REMOVE_ON_DROP_WAIT: Duration = Duration::from_secs(5);

impl Drop for Inner {
    fn drop(&mut self) {
        let created: Vec<Created> = [self.container.take(), self.read_only.take()]
            .into_iter()
            .flatten()
            .collect();
        if created.is_empty() {
            return;
        }
        let ids: Vec<String> = created.iter().map(|c| c.id.clone()).collect();
        // A thread of its own with its own runtime and client: this may run on a runtime's
        // worker, or after the runtime that made the client has stopped.
        let endpoint = self.opts.endpoint.clone();
        let remover = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let Ok(docker) = crate::engine::connect(&endpoint, REMOVE_ON_DROP_WAIT) else {
                return;
            };
            rt.block_on(async {
                for id in ids {
                    let opts = RemoveContainerOptions {
                        force: true,
                        ..Default::default()
                    };
                    let removed = tokio::time::timeout(
                        REMOVE_ON_DROP_WAIT,
                        docker.remove_container(&id, Some(opts)),
                    )
                    .await;
                    match removed {
                        Ok(Ok(())) => {}
                        // Already gone (`close()` removed it).
                        Ok(Err(bollard::errors::Error::DockerResponseServerError {
                            status_code: 404,
                            ..
                        })) => {}
                        _ => tracing::warn!(container = %id, "container sandbox not removed"),
                    }
                }
            });
        });
        let _ = remover.join();
        // After the containers are gone: sweep and release the protected paths.
        for c in &created {
            c.release_guard();
        }
    }
}

#[async_trait]
impl Sandbox for ContainerSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Container
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            kind: SandboxKind::Container,
            ..self.inner.files.capabilities()
        }
    }

    fn root(&self) -> &Path {
        self.inner.files.root()
    }

    fn location(&self) -> String {
        let o = &self.inner.opts;
        let which = match self.container_id() {
            Some(id) => format!("container {}", &id[..id.len().min(12)]),
            None => "a container (created on first use)".to_string(),
        };
        if self.synced() {
            return format!(
                "container: {which} of image `{}` on engine {}, {}",
                o.image,
                o.endpoint.shown(),
                crate::sync::location_phrase(&o.workdir)
            );
        }
        format!(
            "container: {which} of image `{}` on engine {}, project bound at {}, no network of its own (egress only through the allow-list proxy)",
            o.image,
            o.endpoint.shown(),
            o.workdir
        )
    }

    fn exec_confinement(&self) -> Option<Confinement> {
        Some(Confinement::Container {
            engine: self.inner.opts.endpoint.shown(),
            image: self.inner.opts.image.clone(),
            container: self
                .container_id()
                .map(|id| id.chars().take(12).collect())
                .unwrap_or_default(),
            // Support, not a run: a command with the network on gets the proxy (not in sync
            // mode: nothing of this machine reaches the container).
            network_isolated: self.synced(),
            synced: self.synced(),
        })
    }

    fn scope(&self, given: &str) -> Result<String, SandboxError> {
        self.inner.files.scope(given)
    }

    async fn list(&self, req: ListRequest, c: CancellationToken) -> Result<Listing, SandboxError> {
        self.inner.files.list(req, c).await
    }

    async fn read(
        &self,
        req: ReadRequest,
        c: CancellationToken,
    ) -> Result<ReadOutcome, SandboxError> {
        self.inner.files.read(req, c).await
    }

    async fn preview_write(
        &self,
        req: WriteRequest,
        c: CancellationToken,
    ) -> Result<WritePlan, SandboxError> {
        self.inner.files.preview_write(req, c).await
    }

    async fn write(
        &self,
        req: WriteRequest,
        c: CancellationToken,
    ) -> Result<WriteOutcome, SandboxError> {
        self.inner.files.write(req, c).await
    }

    async fn preview_edit(
        &self,
        req: EditRequest,
        c: CancellationToken,
    ) -> Result<EditPlan, SandboxError> {
        self.inner.files.preview_edit(req, c).await
    }

    async fn edit(
        &self,
        req: EditRequest,
        c: CancellationToken,
    ) -> Result<EditOutcome, SandboxError> {
        self.inner.files.edit(req, c).await
    }

    async fn glob(
        &self,
        req: GlobRequest,
        c: CancellationToken,
    ) -> Result<GlobOutcome, SandboxError> {
        self.inner.files.glob(req, c).await
    }

    async fn grep(
        &self,
        req: GrepRequest,
        c: CancellationToken,
    ) -> Result<GrepOutcome, SandboxError> {
        self.inner.files.grep(req, c).await
    }

    async fn exec(
        &self,
        req: ExecRequest,
        cancel: CancellationToken,
        sink: Arc<dyn ExecSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        if self.synced() {
            return crate::sync::exec(self, req, cancel, sink).await;
        }
        crate::exec::run(self, req, cancel, sink).await
    }
}
