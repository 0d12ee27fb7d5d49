//! The local adapter: every operation is confined to the project root by a cap-std `Dir`
//! opened on it. All opens, creates, renames and listings are relative to that handle, so the
//! kernel (openat2 `RESOLVE_BENEATH` where available, cap-std's per-component resolution
//! otherwise) refuses `..`, absolute paths and symlinks that lead outside, including links
//! swapped in while an operation runs. The lexical pass in `scope` only turns absolute paths
//! under the root into relative ones and refuses the obvious cases before touching anything.
//!
//! Blocking work runs in `spawn_blocking` and checks the cancellation token inside its loops.
//! Read-only operations return `Cancelled` as soon as the token fires (the worker notices at its
//! next check and stops); write and edit wait for the worker so the caller always knows
//! whether the effect was applied (the rename is the commit point, checked just before).

mod edit;
pub(crate) mod fsio;
mod grep;
mod ignores;
mod list;
mod project_walk;
mod read;
mod walk;
mod write;

use aibuddy_exec::{ExecOutcome, ExecRequest, ExecSink};
use async_trait::async_trait;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

use crate::api::*;
use crate::error::SandboxError;
use crate::kind::{Capabilities, Confinement, SandboxKind, SandboxSettings};
use crate::limits::Limits;
use crate::scope;

pub use project_walk::{ProjectDirRules, ProjectRules, project_rules, project_walker};

/// State shared by the async front and the blocking workers.
#[derive(Debug)]
pub(crate) struct Scoped {
    /// Canonical absolute root.
    pub root: PathBuf,
    /// The root as configured (may differ from `root` when it goes through a symlink).
    pub configured_root: PathBuf,
    pub dir: Dir,
    pub limits: Limits,
    pub threads: usize,
    /// Blocking workers currently running (observability; tests use it to see a worker stop).
    pub in_flight: AtomicUsize,
}

/// Counts a blocking worker for as long as it runs.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Scoped {
    /// Lexical pass (see `scope`): the path relative to the root, or Escape / InvalidPath.
    pub fn rel(&self, given: &str) -> Result<PathBuf, SandboxError> {
        scope::relative_path(&[&self.root, &self.configured_root], given)
    }

    /// Like `rel` but `None` means the root.
    pub fn rel_or_root(&self, given: Option<&str>) -> Result<PathBuf, SandboxError> {
        match given {
            None => Ok(PathBuf::from(".")),
            Some(g) if g.trim().is_empty() => Ok(PathBuf::from(".")),
            Some(g) => self.rel(g),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LocalSandbox {
    inner: Arc<Scoped>,
    confinement: Confinement,
}

impl LocalSandbox {
    pub fn open(settings: &SandboxSettings) -> Result<Self, SandboxError> {
        let shown = settings.root.display().to_string();
        if !settings.root.is_absolute() {
            return Err(SandboxError::InvalidPath {
                path: shown,
                reason: "the project root must be an absolute path".into(),
            });
        }
        let root = std::fs::canonicalize(&settings.root)
            .map_err(|e| SandboxError::from_io("open project root", &shown, e))?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())
            .map_err(|e| SandboxError::from_io("open project root", &shown, e))?;
        let confinement = probe_confinement(&dir);
        let threads = settings.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get().min(12))
                .unwrap_or(2)
        });
        tracing::debug!(root = %root.display(), ?confinement, threads, "local sandbox opened");
        Ok(LocalSandbox {
            inner: Arc::new(Scoped {
                root,
                configured_root: settings.root.clone(),
                dir,
                limits: settings.limits.clone(),
                threads: threads.max(1),
                in_flight: AtomicUsize::new(0),
            }),
            confinement,
        })
    }

    /// Blocking workers still running, including ones a cancelled call left behind (they stop at
    /// their next cancellation check).
    pub fn workers_in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Run read-only blocking work; return `Cancelled` as soon as the token fires.
    async fn read_only<T, F>(
        &self,
        op: &'static str,
        cancel: CancellationToken,
        work: F,
    ) -> Result<T, SandboxError>
    where
        T: Send + 'static,
        F: FnOnce(&Scoped, &CancellationToken) -> Result<T, SandboxError> + Send + 'static,
    {
        if cancel.is_cancelled() {
            return Err(SandboxError::Cancelled { op });
        }
        let inner = Arc::clone(&self.inner);
        let token = cancel.clone();
        let handle = tokio::task::spawn_blocking(move || {
            let _running = InFlight::enter(&inner.in_flight);
            work(&inner, &token)
        });
        tokio::select! {
            joined = handle => joined.map_err(|e| join_error(op, e))?,
            _ = cancel.cancelled() => Err(SandboxError::Cancelled { op }),
        }
    }

    /// Run blocking work that may have an effect; wait for it so the outcome is known.
    async fn effectful<T, F>(
        &self,
        op: &'static str,
        cancel: CancellationToken,
        work: F,
    ) -> Result<T, SandboxError>
    where
        T: Send + 'static,
        F: FnOnce(&Scoped, &CancellationToken) -> Result<T, SandboxError> + Send + 'static,
    {
        if cancel.is_cancelled() {
            return Err(SandboxError::Cancelled { op });
        }
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let _running = InFlight::enter(&inner.in_flight);
            work(&inner, &cancel)
        })
        .await
        .map_err(|e| join_error(op, e))?
    }
}

fn join_error(op: &'static str, err: tokio::task::JoinError) -> SandboxError {
    tracing::error!(op, %err, "sandbox worker failed");
    SandboxError::Io {
        op,
        path: String::new(),
        source: std::io::Error::other(format!("worker failed: {err}")),
    }
}

/// Does the kernel resolve beneath a directory handle for us (openat2 RESOLVE_BENEATH)?
fn probe_confinement(dir: &Dir) -> Confinement {
    use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
    match openat2(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(_) => Confinement::Kernel,
        Err(_) => Confinement::Userspace,
    }
}

#[async_trait]
impl Sandbox for LocalSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Local
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            kind: SandboxKind::Local,
            fs_read: true,
            fs_write: true,
            exec: true,
            confinement: self.confinement,
        }
    }

    fn root(&self) -> &Path {
        &self.inner.root
    }

    fn scope(&self, given: &str) -> Result<String, SandboxError> {
        self.inner.rel(given).map(|p| scope::display(&p))
    }

    async fn list(
        &self,
        req: ListRequest,
        cancel: CancellationToken,
    ) -> Result<Listing, SandboxError> {
        self.read_only("ls", cancel, move |s, c| list::list(s, &req, c))
            .await
    }

    async fn read(
        &self,
        req: ReadRequest,
        cancel: CancellationToken,
    ) -> Result<ReadOutcome, SandboxError> {
        self.read_only("read", cancel, move |s, c| read::read(s, &req, c))
            .await
    }

    async fn preview_write(
        &self,
        req: WriteRequest,
        cancel: CancellationToken,
    ) -> Result<WritePlan, SandboxError> {
        self.read_only("preview write", cancel, move |s, c| {
            write::preview(s, &req, c)
        })
        .await
    }

    async fn write(
        &self,
        req: WriteRequest,
        cancel: CancellationToken,
    ) -> Result<WriteOutcome, SandboxError> {
        self.effectful("write", cancel, move |s, c| write::write(s, &req, c))
            .await
    }

    async fn preview_edit(
        &self,
        req: EditRequest,
        cancel: CancellationToken,
    ) -> Result<EditPlan, SandboxError> {
        self.read_only("preview edit", cancel, move |s, c| {
            edit::preview(s, &req, c)
        })
        .await
    }

    async fn edit(
        &self,
        req: EditRequest,
        cancel: CancellationToken,
    ) -> Result<EditOutcome, SandboxError> {
        self.effectful("edit", cancel, move |s, c| edit::edit(s, &req, c))
            .await
    }

    async fn glob(
        &self,
        req: GlobRequest,
        cancel: CancellationToken,
    ) -> Result<GlobOutcome, SandboxError> {
        self.read_only("glob", cancel, move |s, c| walk::glob(s, &req, c))
            .await
    }

    async fn grep(
        &self,
        req: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<GrepOutcome, SandboxError> {
        self.read_only("grep", cancel, move |s, c| grep::grep(s, &req, c))
            .await
    }

    async fn exec(
        &self,
        mut req: ExecRequest,
        cancel: CancellationToken,
        sink: Arc<dyn ExecSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        req.cwd = self.inner.root.clone();
        aibuddy_exec::run(req, cancel, sink)
            .await
            .map_err(SandboxError::from)
    }
}
