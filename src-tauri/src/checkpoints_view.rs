//! Checkpoints and rewind in the window: what a call (or each call of a run) changed, the preview
//! of a rewind (what would be put back, and the conflicts: paths changed since the call) and the
//! rewind itself. Every command calls the core's use cases (`aibuddy::checkpoints::Checkpoints`:
//! `changes_for_call`, `changes_for_run`, `rewind`), the same the CLI's `aibuddy changes` and
//! `aibuddy rewind` call; this file only gives their results IPC types (ts-rs) and their errors a
//! code and a stage.
//!
//! Authority: the UI names a call or a run, never a path; the core refuses a call of another
//! project and a call still running. A real rewind is also refused while a run or a call of this
//! window is in progress (it would race their writes). Conflicts are put back only when the
//! person chose `force` for that rewind; a rewind is recorded as a call (tool `rewind`) with its
//! own change set, so the window can undo it like any call. Paths and contents come from the
//! project and from commands: each path and each diff line also comes revealed
//! (`aibuddy_common::term::reveal`, as the confirmation dialog shows them), so a bidi override or
//! zero-width character is shown as its code, never obeyed; the UI shows them as text, never as
//! HTML.

use aibuddy::checkpoints::{
    CallChangesView, CallRewind, ChangedFile, CheckpointUseError, Checkpoints, RewindReport,
    RewindTarget,
};
use aibuddy_checkpoint::{ChangeKind, EntryState};
use aibuddy_common::term::{self, DisplaySegment};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tauri::State;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// What happened to one path (as the core's change set names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ChangeKindView {
    Added,
    Modified,
    Deleted,
    Renamed,
    ModeChanged,
    SymlinkChanged,
    TypeChanged,
}

impl From<ChangeKind> for ChangeKindView {
    fn from(k: ChangeKind) -> Self {
        match k {
            ChangeKind::Added => Self::Added,
            ChangeKind::Modified => Self::Modified,
            ChangeKind::Deleted => Self::Deleted,
            ChangeKind::Renamed => Self::Renamed,
            ChangeKind::ModeChanged => Self::ModeChanged,
            ChangeKind::SymlinkChanged => Self::SymlinkChanged,
            ChangeKind::TypeChanged => Self::TypeChanged,
        }
    }
}

/// One side of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct EntryStateView {
    /// `file`, `symlink` or `dir`.
    pub kind: String,
    /// Permission bits, octal text (`"644"`).
    pub mode: String,
    pub size: u64,
}

impl From<EntryState> for EntryStateView {
    fn from(s: EntryState) -> Self {
        EntryStateView {
            kind: s.kind,
            mode: s.mode,
            size: s.size,
        }
    }
}

/// A text as lines of display segments, split at `\n` (a final empty line left out), as the
/// confirmation dialog's diff is: one entry per line of the text. Pure.
pub fn reveal_lines(text: &str) -> Vec<Vec<DisplaySegment>> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(term::reveal).collect()
}

/// One changed path with its diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChangedFileView {
    /// Relative to the project root.
    pub path: String,
    /// `path` revealed (invisible and format characters as their codes).
    pub path_shown: Vec<DisplaySegment>,
    /// `from` revealed.
    pub from_shown: Option<Vec<DisplaySegment>>,
    /// `diff` revealed, one entry per line of it.
    pub diff_shown: Option<Vec<Vec<DisplaySegment>>>,
    pub change: ChangeKindView,
    /// For a rename: where the content came from.
    pub from: Option<String>,
    pub before: Option<EntryStateView>,
    pub after: Option<EntryStateView>,
    /// Either side is binary: named, not diffed.
    pub binary: bool,
    /// The unified diff, when both sides are text.
    pub diff: Option<String>,
    /// Why there is no diff (binary, too large, content missing).
    pub note: Option<String>,
}

impl From<ChangedFile> for ChangedFileView {
    fn from(f: ChangedFile) -> Self {
        ChangedFileView {
            path_shown: term::reveal(&f.change.path),
            from_shown: f.change.from.as_deref().map(term::reveal),
            diff_shown: f.diff.diff.as_deref().map(reveal_lines),
            path: f.change.path,
            change: f.change.change.into(),
            from: f.change.from,
            before: f.change.before.map(Into::into),
            after: f.change.after.map(Into::into),
            binary: f.diff.binary,
            diff: f.diff.diff,
            note: f.diff.note,
        }
    }
}

/// A path that changed but was not checkpointed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SkippedView {
    pub path: String,
    pub path_shown: Vec<DisplaySegment>,
    /// `too_large`, `special` or `unreadable`.
    pub reason: String,
}

/// What one call changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ChangesView {
    pub call_id: String,
    pub run_id: String,
    pub tool: String,
    /// `false`: the call never finished; its changes run up to the tree as it is now.
    pub complete: bool,
    pub files: Vec<ChangedFileView>,
    /// Changed but not checkpointed (over the size cap, special, unreadable): never put back.
    pub skipped: Vec<SkippedView>,
    /// What checkpoints do not cover (ignored paths, the size cap, special files, outside).
    pub not_covered: String,
}

impl From<CallChangesView> for ChangesView {
    fn from(v: CallChangesView) -> Self {
        ChangesView {
            call_id: v.call_id,
            run_id: v.run_id,
            tool: v.tool,
            complete: v.complete,
            files: v.files.into_iter().map(Into::into).collect(),
            skipped: v
                .skipped
                .into_iter()
                .map(|s| SkippedView {
                    path_shown: term::reveal(&s.path),
                    path: s.path,
                    reason: s.reason,
                })
                .collect(),
            not_covered: v.not_covered.to_string(),
        }
    }
}

/// What a rewind puts back: one call, or a run's calls from `from` (all when absent) to its end.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum RewindTargetArg {
    Call {
        call_id: String,
    },
    Run {
        run_id: String,
        from: Option<String>,
    },
}

impl From<RewindTargetArg> for RewindTarget {
    fn from(t: RewindTargetArg) -> Self {
        match t {
            RewindTargetArg::Call { call_id } => RewindTarget::Call(call_id),
            RewindTargetArg::Run { run_id, from } => RewindTarget::Run { run_id, from },
        }
    }
}

/// One path a rewind puts back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PathActionView {
    pub path: String,
    pub path_shown: Vec<DisplaySegment>,
    /// `restore` (content, mode or symlink put back, or recreated) or `remove` (the call
    /// created it).
    pub action: String,
    /// Put back over a conflict (the person chose to overwrite).
    pub forced: bool,
}

/// A path changed since the call: left alone unless the person chooses to overwrite it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ConflictView {
    pub path: String,
    pub path_shown: Vec<DisplaySegment>,
    /// What the call left.
    pub expected: String,
    /// What is there now.
    pub found: String,
}

/// A path that could not be written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct FailureView {
    pub path: String,
    pub path_shown: Vec<DisplaySegment>,
    pub error: String,
}

/// The rewind of one call, newest first in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct CallRewindView {
    pub call_id: String,
    pub tool: String,
    pub complete: bool,
    pub actions: Vec<PathActionView>,
    pub conflicts: Vec<ConflictView>,
    /// Paths the call changed that were not checkpointed: cannot be put back (revealed).
    pub not_restorable: Vec<Vec<DisplaySegment>>,
    pub failures: Vec<FailureView>,
}

impl From<CallRewind> for CallRewindView {
    fn from(c: CallRewind) -> Self {
        CallRewindView {
            call_id: c.call_id,
            tool: c.tool,
            complete: c.complete,
            actions: c
                .actions
                .into_iter()
                .map(|a| PathActionView {
                    path_shown: term::reveal(&a.path),
                    path: a.path,
                    action: a.action.to_string(),
                    forced: a.forced,
                })
                .collect(),
            conflicts: c
                .conflicts
                .into_iter()
                .map(|k| ConflictView {
                    path_shown: term::reveal(&k.path),
                    path: k.path,
                    expected: k.expected,
                    found: k.found,
                })
                .collect(),
            not_restorable: c.not_restorable.iter().map(|p| term::reveal(p)).collect(),
            failures: c
                .failures
                .into_iter()
                .map(|f| FailureView {
                    path_shown: term::reveal(&f.path),
                    path: f.path,
                    error: f.error,
                })
                .collect(),
        }
    }
}

/// A rewind's preview (`dry_run`: nothing written) or its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RewindView {
    pub dry_run: bool,
    pub force: bool,
    /// Newest first, in the order they are put back.
    pub calls: Vec<CallRewindView>,
    /// Conflicts left alone (0 when forced).
    pub unresolved_conflicts: u32,
    /// Paths that could not be written (a real rewind only).
    pub failures: u32,
    /// The call the rewind was recorded as (undo it to undo the rewind); `null` for a preview.
    pub rewind_call_id: Option<String>,
    pub not_covered: String,
}

impl From<RewindReport> for RewindView {
    fn from(r: RewindReport) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        RewindView {
            unresolved_conflicts: count(r.unresolved_conflicts()),
            failures: count(r.failures()),
            dry_run: r.dry_run,
            force: r.force,
            calls: r.calls.into_iter().map(Into::into).collect(),
            rewind_call_id: r.rewind_call_id,
            not_covered: r.not_covered.to_string(),
        }
    }
}

/// A failed checkpoint use case as the UI receives it: code `checkpoint`, with its stage.
pub fn use_error(e: CheckpointUseError) -> CommandError {
    CommandError {
        code: ErrorCode::Checkpoint,
        stage: Some(e.stage()),
        message: e.to_string(),
    }
}

/// The open project's checkpoints.
fn checkpoints_of(state: &ShellState) -> Result<Arc<Checkpoints>, CommandError> {
    state.app()?.checkpoints.clone().ok_or_else(|| {
        CommandError::new(
            ErrorCode::Checkpoint,
            "checkpoints are not available in this project (see the log for why)",
        )
    })
}

/// What call `call_id` changed.
#[tauri::command]
pub async fn call_changes(
    state: State<'_, ShellState>,
    call_id: String,
) -> Result<ChangesView, CommandError> {
    let cps = checkpoints_of(&state)?;
    Ok(cps
        .changes_for_call(&call_id)
        .await
        .map_err(use_error)?
        .into())
}

/// What each checkpointed call of run `run_id` changed, oldest first.
#[tauri::command]
pub async fn run_changes(
    state: State<'_, ShellState>,
    run_id: String,
) -> Result<Vec<ChangesView>, CommandError> {
    let cps = checkpoints_of(&state)?;
    Ok(cps
        .changes_for_run(&run_id)
        .await
        .map_err(use_error)?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// The preview of a rewind: what would be put back and the conflicts; writes nothing.
#[tauri::command]
pub async fn rewind_preview(
    state: State<'_, ShellState>,
    target: RewindTargetArg,
    force: bool,
) -> Result<RewindView, CommandError> {
    let cps = checkpoints_of(&state)?;
    Ok(cps
        .rewind(&target.into(), force, true)
        .await
        .map_err(use_error)?
        .into())
}

/// Puts back what the target changed, newest first; conflicts are overwritten only when `force`.
/// Refused while a run or a call of this window is in progress.
#[tauri::command]
pub async fn rewind(
    state: State<'_, ShellState>,
    target: RewindTargetArg,
    force: bool,
) -> Result<RewindView, CommandError> {
    let project = state.project()?;
    if let Some(reason) = project.busy_reason() {
        return Err(CommandError {
            code: ErrorCode::Busy,
            stage: Some(aibuddy::contract::Stage::Authorization),
            message: format!("cannot rewind now: {reason}; wait for it to end"),
        });
    }
    let cps = checkpoints_of(&state)?;
    Ok(cps
        .rewind(&target.into(), force, false)
        .await
        .map_err(use_error)?
        .into())
}
