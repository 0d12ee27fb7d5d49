//! Rewind: put back what calls changed, newest first. Each call's plan is made against the
//! tree as the newer calls' plans leave it (`restore::simulate`), so a dry run shows exactly
//! what the real rewind would do. A path changed since the call is a conflict: listed, left
//! alone unless forced. A real rewind is recorded as a call of the pseudo tool `rewind` (in a
//! run of its own) whose before-snapshot is committed before anything is written, and whose
//! change set is stored like any call's, so `aibuddy rewind <that call>` undoes it.

use aibuddy_checkpoint::restore::{self, Conflict, Failure};
use aibuddy_checkpoint::{ChangeSet, diff::show};
use aibuddy_common::CallStatus;
use aibuddy_store::{CallChanges, CallFinish, CallStart, RawFormat};
use serde::Serialize;

use super::{CheckpointUseError, Checkpoints, REWIND_TOOL};

/// What to rewind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindTarget {
    /// One call.
    Call(String),
    /// The checkpointed calls of a run, from `from` (inclusive) to its end; all when `None`.
    Run {
        run_id: String,
        from: Option<String>,
    },
}

/// One path a rewind puts back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathAction {
    pub path: String,
    /// `restore` (content, mode or symlink put back, or recreated) or `remove` (the call
    /// created it).
    pub action: &'static str,
    /// Applied over a conflict (`--force`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallRewind {
    pub call_id: String,
    pub tool: String,
    /// `false`: the call never finished; its after-state was taken as the tree found now.
    pub complete: bool,
    pub actions: Vec<PathAction>,
    /// Paths changed since the call: left alone unless forced.
    pub conflicts: Vec<Conflict>,
    /// Paths the call changed that were not checkpointed (size cap, special, unreadable).
    pub not_restorable: Vec<String>,
    /// Paths that could not be written (a real rewind only).
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RewindReport {
    pub dry_run: bool,
    pub force: bool,
    /// Newest first, in the order they were put back.
    pub calls: Vec<CallRewind>,
    /// The call the rewind was recorded as (rewind it to undo this rewind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewind_call_id: Option<String>,
    /// What the rewind changed (a real rewind only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangeSet>,
    pub not_covered: String,
}

impl RewindReport {
    /// Conflicts left alone (not forced).
    pub fn unresolved_conflicts(&self) -> usize {
        if self.force {
            0
        } else {
            self.calls.iter().map(|c| c.conflicts.len()).sum()
        }
    }

    pub fn failures(&self) -> usize {
        self.calls.iter().map(|c| c.failures.len()).sum()
    }
}

impl Checkpoints {
    /// The calls `target` names, newest first.
    async fn targets(&self, target: &RewindTarget) -> Result<Vec<CallChanges>, CheckpointUseError> {
        let mut rows = match target {
            RewindTarget::Call(id) => vec![self.row(id).await?],
            RewindTarget::Run { run_id, from } => {
                let rows = self.store.run_call_changes(run_id).await?;
                if rows.is_empty() {
                    return Err(CheckpointUseError::EmptyRun(run_id.clone()));
                }
                match from {
                    None => rows,
                    Some(from) => {
                        let Some(pos) = rows.iter().position(|r| &r.tool_call_id == from) else {
                            // A call of the run that changed nothing checkpointed starts nothing.
                            return match self.store.get_call(from).await? {
                                Some(c) if &c.run_id == run_id => {
                                    Err(CheckpointUseError::NoCheckpoint(from.clone()))
                                }
                                _ => Err(CheckpointUseError::NotInRun {
                                    call: from.clone(),
                                    run: run_id.clone(),
                                }),
                            };
                        };
                        rows[pos..].to_vec()
                    }
                }
            }
        };
        rows.reverse();
        for r in &rows {
            if r.project_key != self.cps.key() {
                return Err(CheckpointUseError::OtherProject {
                    call: r.tool_call_id.clone(),
                });
            }
            if r.after_snapshot.is_none()
                && let Some(call) = self.store.get_call(&r.tool_call_id).await?
                && call.status == CallStatus::Running
            {
                return Err(CheckpointUseError::StillRunning(r.tool_call_id.clone()));
            }
        }
        Ok(rows)
    }

    /// Plans the rewind of `target` and, unless `dry_run`, applies it and records it.
    pub async fn rewind(
        &self,
        target: &RewindTarget,
        force: bool,
        dry_run: bool,
    ) -> Result<RewindReport, CheckpointUseError> {
        let rows = self.targets(target).await?;
        // A rewind writes the tree: it holds off the project's mutating calls (see `serial`).
        let _serial = if dry_run {
            None
        } else {
            self.serialize(&tokio_util::sync::CancellationToken::new())
                .await?
        };
        let current = self.snapshot().await?;
        let mut rewind_call_id = None;
        if !dry_run {
            let id = crate::call_record::new_call_id();
            let run_id = format!("rewind_{}", ulid::Ulid::new().to_string().to_lowercase());
            let input = serde_json::json!({
                "calls": rows.iter().map(|r| r.tool_call_id.clone()).collect::<Vec<_>>(),
                "force": force,
            });
            self.store
                .begin_call(CallStart {
                    tool_call_id: id.clone(),
                    run_id,
                    project_root: Some(self.cps.root().display().to_string()),
                    tool: REWIND_TOOL.to_string(),
                    config: "checkpoints".to_string(),
                    input: input.to_string(),
                    started_at_ms: None,
                })
                .await?;
            // Durable before anything is written: a rewind killed half way can be undone too.
            self.store
                .begin_call_changes(&id, self.cps.key(), &current.id)
                .await?;
            rewind_call_id = Some(id);
        }
        let mut sim = current.manifest.clone();
        let mut calls = Vec::with_capacity(rows.len());
        for row in &rows {
            let before = self.manifest(&row.before_snapshot).await?;
            let after = match &row.after_snapshot {
                Some(id) => self.manifest(id).await?,
                None => sim.clone(),
            };
            let plan = restore::plan(&before, &after, &sim, force);
            let failures = if dry_run || plan.actions.is_empty() {
                Vec::new()
            } else {
                let cps = self.cps.clone();
                let p = plan.clone();
                tokio::task::spawn_blocking(move || {
                    restore::apply(cps.root_dir(), cps.objects(), &p)
                })
                .await
                .map_err(|e| CheckpointUseError::Task(e.to_string()))?
            };
            restore::simulate(&mut sim, &plan);
            calls.push(CallRewind {
                call_id: row.tool_call_id.clone(),
                tool: row.tool.clone(),
                complete: row.after_snapshot.is_some(),
                actions: plan
                    .actions
                    .iter()
                    .map(|a| PathAction {
                        path: show(&a.path),
                        action: if a.to.is_some() { "restore" } else { "remove" },
                        forced: a.forced,
                    })
                    .collect(),
                conflicts: plan.conflicts,
                not_restorable: plan.not_restorable.iter().map(|p| show(p)).collect(),
                failures,
            });
        }
        let mut report = RewindReport {
            dry_run,
            force,
            calls,
            rewind_call_id: rewind_call_id.clone(),
            changes: None,
            not_covered: self.not_covered(),
        };
        if let Some(id) = rewind_call_id {
            let of = serde_json::to_string(
                &rows
                    .iter()
                    .map(|r| r.tool_call_id.as_str())
                    .collect::<Vec<_>>(),
            )
            .ok();
            report.changes = Some(self.record_after(&id, &current.id, of).await?);
            let value = serde_json::to_value(&report)
                .map_err(|e| CheckpointUseError::Task(format!("report: {e}")))?;
            let failures = report.failures();
            let mut fin = CallFinish::new(
                &id,
                if failures == 0 {
                    CallStatus::Ok
                } else {
                    CallStatus::Error
                },
            );
            if failures > 0 {
                fin.stage = Some(aibuddy_common::Stage::Execution);
                fin.error_code = Some("rewind_incomplete".into());
                fin.error_message = Some(format!("{failures} path(s) could not be put back"));
            }
            fin.raw_output = value.to_string().into_bytes();
            fin.raw_format = RawFormat::Json;
            fin.model_projection = Some(format!(
                "rewound {} call(s): {} path(s) put back, {} conflict(s) left alone",
                report.calls.len(),
                report.calls.iter().map(|c| c.actions.len()).sum::<usize>(),
                report.unresolved_conflicts()
            ));
            fin.client_projection = Some(value);
            self.store.finish_call(fin).await?;
        }
        Ok(report)
    }
}
