//! What a call changed, for `aibuddy changes` and the window: the stored change set (or, for a
//! call that never finished, the change from its before-snapshot to the tree now) with a
//! unified diff per text file, binary files named, sizes on both sides.

use aibuddy_checkpoint::{ChangeSet, FileChange, FileDiff, SkippedChange, file_diff};
use aibuddy_store::CallChanges;
use serde::Serialize;

use super::{CheckpointUseError, Checkpoints};

#[derive(Debug, Clone, Serialize)]
pub struct ChangedFile {
    #[serde(flatten)]
    pub change: FileChange,
    #[serde(flatten)]
    pub diff: FileDiff,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallChangesView {
    pub call_id: String,
    pub run_id: String,
    pub tool: String,
    /// `false`: the call never finished (its process died, or it still runs), so its changes are
    /// those from its before-snapshot to the tree as it is now.
    pub complete: bool,
    pub files: Vec<ChangedFile>,
    /// Paths that changed but are not checkpointed, with the reason.
    pub skipped: Vec<SkippedChange>,
    pub not_covered: String,
}

impl Checkpoints {
    /// The change set of `row`: stored, or recomputed against the tree now.
    pub(crate) async fn change_set(
        &self,
        row: &CallChanges,
    ) -> Result<(ChangeSet, bool), CheckpointUseError> {
        if row.project_key != self.cps.key() {
            return Err(CheckpointUseError::OtherProject {
                call: row.tool_call_id.clone(),
            });
        }
        if let Some(text) = &row.changes {
            let cs = serde_json::from_str(text).map_err(|e| {
                CheckpointUseError::Task(format!(
                    "the stored change set of `{}` is damaged: {e}",
                    row.tool_call_id
                ))
            })?;
            return Ok((cs, true));
        }
        let before = self.manifest(&row.before_snapshot).await?;
        let now = self.snapshot().await?;
        Ok((aibuddy_checkpoint::diff(&before, &now.manifest), false))
    }

    async fn view(&self, row: CallChanges) -> Result<CallChangesView, CheckpointUseError> {
        let (ChangeSet { files, skipped }, complete) = self.change_set(&row).await?;
        let cps = self.cps.clone();
        let files = tokio::task::spawn_blocking(move || {
            files
                .into_iter()
                .map(|change| ChangedFile {
                    diff: file_diff(cps.objects(), &change),
                    change,
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| CheckpointUseError::Task(e.to_string()))?;
        Ok(CallChangesView {
            call_id: row.tool_call_id,
            run_id: row.run_id,
            tool: row.tool,
            complete,
            files,
            skipped,
            not_covered: self.not_covered(),
        })
    }

    /// What call `call_id` changed.
    pub async fn changes_for_call(
        &self,
        call_id: &str,
    ) -> Result<CallChangesView, CheckpointUseError> {
        let row = self.row(call_id).await?;
        self.view(row).await
    }

    /// What each checkpointed call of run `run_id` changed, oldest first.
    pub async fn changes_for_run(
        &self,
        run_id: &str,
    ) -> Result<Vec<CallChangesView>, CheckpointUseError> {
        let rows = self.store.run_call_changes(run_id).await?;
        if rows.is_empty() {
            return Err(CheckpointUseError::EmptyRun(run_id.to_string()));
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.view(row).await?);
        }
        Ok(out)
    }

    pub(crate) async fn row(&self, call_id: &str) -> Result<CallChanges, CheckpointUseError> {
        match self.store.call_changes(call_id).await? {
            Some(r) => Ok(r),
            None => match self.store.get_call(call_id).await? {
                Some(_) => Err(CheckpointUseError::NoCheckpoint(call_id.to_string())),
                None => Err(CheckpointUseError::CallNotFound(call_id.to_string())),
            },
        }
    }
}
