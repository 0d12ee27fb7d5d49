//! The run events of hooks (`crate::hooks`): `run_start` once the run is open, `run_end` once its
//! end is stored, `waiting_for_person` when a confirmation, a network question, a question of the
//! model (`ask_user_question`) or an MCP server's form waits for the person (started beside the
//! wait, never holding it up). Each run is stored with the run
//! (`hook_runs`, no call) and reported as a `hook` run event.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aibuddy_store::Store;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::events::{RunEvent, RunEventSink};
use crate::hooks::{self, HookScope};
use crate::settings::{ExecSettings, HooksSettings};

/// What a run's own hooks need, shared by the run loop and its confirm broker.
pub(crate) struct RunHooks {
    hooks: HooksSettings,
    exec: ExecSettings,
    project: PathBuf,
    data_dir: PathBuf,
    read_only: bool,
    run_id: String,
    store: Store,
    events: Arc<dyn RunEventSink>,
    /// `waiting_for_person` hooks still running (awaited before `run_end`).
    pending: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl RunHooks {
    pub fn new(
        settings: &crate::settings::Settings,
        project: PathBuf,
        data_dir: PathBuf,
        run_id: &str,
        store: Store,
        events: Arc<dyn RunEventSink>,
    ) -> Arc<RunHooks> {
        Arc::new(RunHooks {
            hooks: settings.hooks.clone(),
            exec: settings.exec.clone(),
            project,
            data_dir,
            read_only: settings.approvals.mode == crate::approvals::ApprovalMode::ReadOnly,
            run_id: run_id.to_string(),
            store,
            events,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Run `event`'s hooks to their end (each bounded by its timeout, killed by `cancel`).
    pub async fn run(&self, event: &str, extra: Value, cancel: &CancellationToken) {
        if self.hooks.of(event).is_empty() {
            return;
        }
        let scope = HookScope {
            hooks: &self.hooks,
            exec: &self.exec,
            project: &self.project,
            data_dir: &self.data_dir,
            read_only: self.read_only,
            run_id: &self.run_id,
            cancel,
        };
        for run in hooks::run_event(scope, event, extra).await {
            let row = hooks::store_row(&self.run_id, None, &run);
            if let Err(e) = self.store.record_hook_run(row).await {
                tracing::error!(run = %self.run_id, "could not record a hook run: {e}");
            }
            self.events.emit(RunEvent::Hook { hook: run });
        }
    }

    /// `waiting_for_person`, started beside the wait.
    pub fn waiting(self: &Arc<Self>, what: &str, call_id: &str, cancel: &CancellationToken) {
        if self.hooks.waiting_for_person.is_empty() {
            return;
        }
        let (me, cancel) = (self.clone(), cancel.clone());
        let extra = serde_json::json!({
            "waiting_for": what,
            "call_id": call_id,
            "message": format!("aibuddy is waiting for you: {what}"),
            "notification_type": "permission_prompt",
        });
        let task = tokio::spawn(async move { me.run("waiting_for_person", extra, &cancel).await });
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|t| !t.is_finished());
        pending.push(task);
    }

    /// Wait for the `waiting_for_person` hooks still running (each bounded by its timeout), so
    /// they are recorded before the run ends and a CLI exit does not cut them short.
    pub async fn settle(&self) {
        let tasks = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            let _ = t.await;
        }
    }
}
