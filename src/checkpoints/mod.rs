//! Checkpoints of every call that may change the project, and the use cases built on them
//! (host-neutral: the CLI and the desktop call the same functions).
//!
//! - `Checkpoints::before` (pipeline, just before a call that is not read-only runs): takes the
//!   project's call lock (`serial`: mutating calls of one project run one at a time, in this
//!   process and across processes, so no call's change set holds another's changes; read-only
//!   calls never wait), then a fresh snapshot, so a change made between two calls (by the person,
//!   an editor, a build) is never attributed to the next call; its id is committed to
//!   `call_changes` before the call runs, so a call whose process is killed can still be rewound.
//! - `Checkpoints::after` (when the call ends, whatever its status): the after-snapshot and the
//!   change set (`aibuddy_checkpoint::diff`), stored on the call; then the lock is released.
//! - `changes` (`changes_for_call`, `changes_for_run`): the change sets with per-file diffs.
//! - `rewind` (`rewind_calls`): plans (conflicts first), and unless it is a dry run, applies the
//!   plan of each call newest first, itself recorded as a call of the pseudo tool `rewind` with
//!   its own change set, so a rewind can be undone like any call.
//!
//! What is not covered is said by `Checkpoints::not_covered` (with the size cap in force, the
//! setting `checkpoints.max_file_bytes`), which every preview carries.

mod error_stage;
mod rewind;
mod serial;
mod views;

use std::sync::Arc;

use aibuddy_checkpoint::{CheckpointStore, Manifest, SnapshotOptions, diff};
use aibuddy_store::Store;
use tokio_util::sync::CancellationToken;

use crate::contract::ToolError;

pub use serial::CallGuard;

pub use rewind::{CallRewind, PathAction, RewindReport, RewindTarget};
pub use views::{CallChangesView, ChangedFile};

/// The sentence every preview carries about what checkpoints do not cover, with the size cap.
pub fn not_covered(max_file_bytes: u64) -> String {
    format!(
        "Checkpoints cover files inside the project only: paths its ignore rules leave out \
(.gitignore, .ignore, .git), files over the size cap ({max_file_bytes} bytes, setting \
checkpoints.max_file_bytes), special files and anything outside the project are not \
checkpointed and are never put back."
    )
}

/// The pseudo tool a rewind is recorded as.
pub const REWIND_TOOL: &str = "rewind";

/// Why a checkpoint use case failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointUseError {
    #[error("no stored call has the id `{0}`")]
    CallNotFound(String),
    #[error(
        "call `{0}` has no checkpoint (it was read-only, or it ran before checkpoints existed)"
    )]
    NoCheckpoint(String),
    #[error("run `{0}` has no checkpointed call")]
    EmptyRun(String),
    #[error("call `{call}` was made in another project; open that project to rewind it")]
    OtherProject { call: String },
    #[error("call `{0}` is still running")]
    StillRunning(String),
    #[error("call `{call}` is not a call of run `{run}`")]
    NotInRun { call: String, run: String },
    #[error(transparent)]
    Store(#[from] aibuddy_store::StoreError),
    #[error(transparent)]
    Checkpoint(#[from] aibuddy_checkpoint::CheckpointError),
    #[error("checkpoint task failed: {0}")]
    Task(String),
}

/// One project's checkpoints and the store they are recorded in.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    pub(crate) cps: Arc<CheckpointStore>,
    pub(crate) store: Store,
}

/// A mutating call's before-snapshot: its id, its manifest (the after-snapshot is compared to
/// it without reading it back), and the project's call lock, held until [`Checkpoints::after`].
#[derive(Debug)]
pub struct Before {
    pub id: String,
    manifest: Arc<Manifest>,
    _guard: CallGuard,
}

impl Checkpoints {
    /// Opens the checkpoints of `project_root` in `data_dir`, recorded in `store`.
    pub fn open(
        data_dir: &std::path::Path,
        project_root: &std::path::Path,
        store: Store,
        max_file_bytes: u64,
    ) -> Result<Self, CheckpointUseError> {
        let opts = SnapshotOptions {
            max_file_bytes,
            ..SnapshotOptions::default()
        };
        Ok(Checkpoints {
            cps: Arc::new(CheckpointStore::open(data_dir, project_root, opts)?),
            store,
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The size cap in force: files larger are not checkpointed.
    pub fn max_file_bytes(&self) -> u64 {
        self.cps.options().max_file_bytes
    }

    /// What these checkpoints do not cover (every preview carries it).
    pub fn not_covered(&self) -> String {
        not_covered(self.max_file_bytes())
    }

    /// A snapshot on a blocking thread.
    pub(crate) async fn snapshot(
        &self,
    ) -> Result<aibuddy_checkpoint::Snapshot, CheckpointUseError> {
        let cps = self.cps.clone();
        tokio::task::spawn_blocking(move || {
            // Placeholders of protected paths that a killed app left are no one's files.
            aibuddy_sandbox::aibuddy_exec::protect::sweep_leftover_placeholders();
            cps.snapshot()
        })
        .await
        .map_err(|e| CheckpointUseError::Task(e.to_string()))?
        .map_err(Into::into)
    }

    /// A snapshot on a blocking thread, sharing its manifest with the stat cache.
    async fn snapshot_shared(
        &self,
    ) -> Result<aibuddy_checkpoint::SharedSnapshot, CheckpointUseError> {
        let cps = self.cps.clone();
        tokio::task::spawn_blocking(move || {
            aibuddy_sandbox::aibuddy_exec::protect::sweep_leftover_placeholders();
            cps.snapshot_shared()
        })
        .await
        .map_err(|e| CheckpointUseError::Task(e.to_string()))?
        .map_err(Into::into)
    }

    /// Waits for the project's call lock (see `serial`); `None` when `cancel` fired first.
    pub async fn serialize(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<CallGuard>, CheckpointUseError> {
        serial::acquire(&self.cps, cancel).await
    }

    /// The before-snapshot of `call_id`, durable (objects stored, id committed) on return, taken
    /// under the project's call lock, which the returned [`Before`] holds until
    /// [`Checkpoints::after`].
    pub async fn before(
        &self,
        call_id: &str,
        cancel: &CancellationToken,
    ) -> Result<Before, ToolError> {
        let fail = |e: CheckpointUseError| {
            ToolError::execution(
                "checkpoint_failed",
                format!(
                    "the project could not be checkpointed before the call, so nothing was done: {e}"
                ),
            )
        };
        let Some(guard) = self.serialize(cancel).await.map_err(fail)? else {
            return Err(ToolError::execution(
                "cancelled",
                "the call was cancelled while it waited for another call in this project to end",
            ));
        };
        let snap = self.snapshot_shared().await.map_err(fail)?;
        self.store
            .begin_call_changes(call_id, self.cps.key(), &snap.id)
            .await
            .map_err(|e| fail(e.into()))?;
        Ok(Before {
            id: snap.id,
            manifest: snap.manifest,
            _guard: guard,
        })
    }

    /// The after-snapshot and change set of `call_id`, then the call lock is released. A
    /// failure is logged: the call's effect happened, and a rewind recomputes its after-state
    /// from the tree.
    pub async fn after(&self, call_id: &str, before: Before) {
        let result = async {
            let snap = self.snapshot_shared().await?;
            let changes = if snap.id == before.id {
                aibuddy_checkpoint::ChangeSet::default()
            } else {
                diff(&before.manifest, &snap.manifest)
            };
            self.store_changes(call_id, &snap.id, &changes, None)
                .await
                .map(|()| changes)
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(call = %call_id, error = %e, "after-call checkpoint not recorded");
        }
        drop(before);
    }

    pub(crate) async fn record_after(
        &self,
        call_id: &str,
        before_id: &str,
        rewind_of: Option<String>,
    ) -> Result<aibuddy_checkpoint::ChangeSet, CheckpointUseError> {
        let snap = self.snapshot_shared().await?;
        let changes = if snap.id == before_id {
            aibuddy_checkpoint::ChangeSet::default()
        } else {
            let before = self.manifest(before_id).await?;
            diff(&before, &snap.manifest)
        };
        self.store_changes(call_id, &snap.id, &changes, rewind_of)
            .await?;
        Ok(changes)
    }

    async fn store_changes(
        &self,
        call_id: &str,
        after_id: &str,
        changes: &aibuddy_checkpoint::ChangeSet,
        rewind_of: Option<String>,
    ) -> Result<(), CheckpointUseError> {
        let json = serde_json::to_string(changes)
            .map_err(|e| CheckpointUseError::Task(format!("change set: {e}")))?;
        self.store
            .finish_call_changes(call_id, after_id, json, rewind_of)
            .await?;
        Ok(())
    }

    pub(crate) async fn manifest(
        &self,
        id: &str,
    ) -> Result<aibuddy_checkpoint::Manifest, CheckpointUseError> {
        let cps = self.cps.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || cps.manifest(&id))
            .await
            .map_err(|e| CheckpointUseError::Task(e.to_string()))?
            .map_err(Into::into)
    }
}
