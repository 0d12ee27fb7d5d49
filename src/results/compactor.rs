//! `Compactor`: background precompaction after a call finished (the pipeline's `AfterCall`).
//!
//! Order of one compaction (never on the path that returns the result to the client):
//! 1. `plan` decides from the config's strategy, disposability and the token estimate;
//! 2. the store row is marked `pending`;
//! 3. the compact text is made: the tool's `trim` hook (or the generic head/tail trim), the
//!    `Summarizer` (falls back to trim when none), or a one-line note for `drop`;
//! 4. if it is not smaller than the original, the original stays (`not_smaller`);
//! 5. trim/summarize offload raw input+output to `compacted_outputs/<run>/<id>.json` (input,
//!    structured output, and for spooled outputs the raw bytes as text up to 1 MiB; the store
//!    keeps every byte) and the text ends with a note telling the model that `view_tool_call`
//!    recovers it;
//! 6. the cache and the store row are replaced (the store again checks "only when smaller").
//!
//! A replaced projection is announced as [`Event::ToolCompacted`] on the host's sink
//! ([`Compactor::set_event_sink`]; none by default): it comes after the call's `ToolFinished`, so
//! it is not on the call's own sink, and carries the call id for the client to match.
//!
//! Any failure is a Projection-stage failure: recorded on the row (`failed` + error), logged,
//! and the original projection stays.
//!
//! Cancellation: [`Compactor::cancel`] stops every pending compaction of the app (project closed,
//! CLI exit); a run attached with [`Compactor::attach_run`] gets its own token, a child of the
//! run's cancellation token, so stopping that run stops the precompactions of its calls and only
//! those (two runs in one desktop process do not stop each other's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use aibuddy_store::{CompactionState, Store};

use super::plan::{Plan, plan};
use super::summarizer::{Summarizer, SummaryRequest};
use super::tokens::{
    PRECOMPACTION_THRESHOLD, TRIM_TARGET_TOKENS, chars_for_tokens, estimate_tokens,
};
use super::trim::head_tail_trim;
use crate::contract::Stage;
use crate::events::{CallStatus, Event, EventSink, NullSink};
use crate::pipeline::{AfterCall, CallOutcome, ResultPolicy};
use crate::registry::{RawOutput, ToolDef};

/// Raw bytes copied into an offload document at most (the store keeps all of them).
const OFFLOAD_RAW_MAX: u64 = 1024 * 1024;

/// The model projections later steps see, by call id, after compaction replaced them.
#[derive(Debug, Default)]
pub struct ProjectionCache {
    map: Mutex<HashMap<String, String>>,
}

impl ProjectionCache {
    pub fn get(&self, tool_call_id: &str) -> Option<String> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tool_call_id)
            .cloned()
    }

    /// Inserts or replaces only when `text` is smaller than what is cached.
    fn put_if_smaller(&self, tool_call_id: &str, text: &str) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(tool_call_id) {
            Some(old) if old.len() <= text.len() => {}
            _ => {
                map.insert(tool_call_id.to_string(), text.to_string());
            }
        }
    }
}

/// What happened to one call's projection (returned by `compact`, for tests and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionOutcome {
    Skipped,
    Compacted {
        strategy: &'static str,
        pointer: Option<String>,
        text: String,
    },
    NotSmaller,
    /// Projection-stage failure; the original stays.
    Failed(String),
}

/// The note appended to a compacted projection that has a recovery pointer.
pub fn recovery_note(tool_call_id: &str, strategy: &str, original_tokens: usize) -> String {
    format!(
        "\n\n[aibuddy: this result was compacted ({strategy}) from about {original_tokens} tokens. \
         The complete raw input and output are recoverable: call view_tool_call with \
         {{\"tool_call_id\": \"{tool_call_id}\"}} and page with offset/limit.]"
    )
}

pub struct Compactor {
    store: Store,
    /// Installed once a provider is known (`set_summarizer`); `None`: `summarize` trims.
    summarizer: RwLock<Option<Arc<dyn Summarizer>>>,
    threshold: usize,
    cache: Arc<ProjectionCache>,
    tracker: TaskTracker,
    cancel: CancellationToken,
    /// Per-run tokens of the attached runs (children of each run's cancellation token).
    runs: Mutex<HashMap<String, (u64, CancellationToken)>>,
    events: RwLock<Arc<dyn EventSink>>,
}

/// While alive, the precompactions of a run's calls follow that run's cancellation
/// ([`Compactor::attach_run`]); dropping it detaches the run (compactions already started keep
/// their token).
pub struct RunCompactions {
    compactor: std::sync::Weak<Compactor>,
    run_id: String,
    /// Which attachment this is (a later attachment of the same run id replaces the entry).
    attachment: u64,
}

impl Drop for RunCompactions {
    fn drop(&mut self) {
        if let Some(c) = self.compactor.upgrade() {
            let mut runs = c.runs.lock().unwrap_or_else(|p| p.into_inner());
            // Only our own entry: a later attachment of the same id replaced it.
            if runs
                .get(&self.run_id)
                .is_some_and(|(n, _)| *n == self.attachment)
            {
                runs.remove(&self.run_id);
            }
        }
    }
}

impl Compactor {
    pub fn new(store: Store, summarizer: Option<Arc<dyn Summarizer>>) -> Self {
        Compactor {
            store,
            summarizer: RwLock::new(summarizer),
            threshold: PRECOMPACTION_THRESHOLD,
            cache: Arc::new(ProjectionCache::default()),
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            runs: Mutex::new(HashMap::new()),
            events: RwLock::new(Arc::new(NullSink)),
        }
    }

    /// Backs the `summarize` strategy with `summarizer` from now on (the app opens before a
    /// provider is chosen: a run, or `call` with a provider configured, installs one).
    pub fn set_summarizer(&self, summarizer: Arc<dyn Summarizer>) {
        *self.summarizer.write().unwrap_or_else(|p| p.into_inner()) = Some(summarizer);
    }

    fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
        self.summarizer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Where [`Event::ToolCompacted`] goes (the host's project-level sink).
    pub fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        *self.events.write().unwrap_or_else(|p| p.into_inner()) = sink;
    }

    fn emit(&self, event: Event) {
        let sink = self
            .events
            .read()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        sink.emit(event);
    }

    /// A different threshold (tests).
    pub fn with_threshold(mut self, tokens: usize) -> Self {
        self.threshold = tokens;
        self
    }

    pub fn cache(&self) -> &Arc<ProjectionCache> {
        &self.cache
    }

    /// Stops pending compactions (user stop, parent cancellation).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Ties the precompactions of run `run_id`'s calls to `run_cancel` until the returned guard
    /// drops: when the run is stopped they are cancelled (the original projections stay), and no
    /// other run's are.
    pub fn attach_run(
        self: &Arc<Self>,
        run_id: &str,
        run_cancel: &CancellationToken,
    ) -> RunCompactions {
        static ATTACHMENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let attachment = ATTACHMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run_id.to_string(), (attachment, run_cancel.child_token()));
        RunCompactions {
            compactor: Arc::downgrade(self),
            run_id: run_id.to_string(),
            attachment,
        }
    }

    /// The token a compaction of run `run_id` observes besides the app-wide one: the attached
    /// run's, else one that only [`Compactor::cancel`] ends.
    fn run_token(&self, run_id: &str) -> CancellationToken {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(run_id)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| self.cancel.child_token())
    }

    /// Waits until every background compaction started so far has finished (CLI exit, tests).
    pub async fn wait_idle(&self) {
        self.tracker.close();
        self.tracker.wait().await;
        self.tracker.reopen();
    }

    /// Compacts one finished call now, stopped by [`Compactor::cancel`] or by the stop of the
    /// attached run the call belongs to.
    pub async fn compact(&self, job: Job) -> CompactionOutcome {
        let token = self.run_token(&job.run_id);
        self.compact_with(job, token).await
    }

    /// [`Compactor::compact`] with the run's token taken when the call finished.
    async fn compact_with(&self, job: Job, run: CancellationToken) -> CompactionOutcome {
        let cancel = Cancel {
            app: &self.cancel,
            run: &run,
        };
        let tokens = estimate_tokens(&job.model);
        let (strategy, disposable) = (job.policy.compaction, job.policy.disposable);
        let decided = plan(
            strategy,
            disposable,
            tokens,
            self.threshold,
            self.summarizer().is_some(),
        );
        let name = match decided {
            Plan::Skip => return CompactionOutcome::Skipped,
            Plan::Trim => "trim",
            Plan::Summarize => "summarize",
            Plan::Drop | Plan::RefuseDrop => "drop",
        };
        if let Err(e) = self
            .store
            .set_compaction(
                &job.tool_call_id,
                CompactionState::Pending,
                Some(name),
                None,
            )
            .await
        {
            return self
                .fail(&job, name, format!("cannot mark pending: {e}"))
                .await;
        }
        let compacted = match decided {
            Plan::RefuseDrop => {
                return self
                    .fail(
                        &job,
                        name,
                        format!(
                            "config `{}` asks for drop but its output is not declared disposable",
                            job.policy.config_key
                        ),
                    )
                    .await;
            }
            Plan::Drop => format!(
                "[aibuddy: the output of {} (about {tokens} tokens) was dropped from context: \
                 this tool's output is declared disposable and was not kept for recovery.]",
                job.tool.name()
            ),
            Plan::Trim => self.trim_text(&job),
            Plan::Summarize => match self.summarize_text(&job, &cancel).await {
                Ok(text) => text,
                Err(e) => return self.fail(&job, name, e).await,
            },
            Plan::Skip => return CompactionOutcome::Skipped,
        };
        if cancel.is_cancelled() {
            return self.fail(&job, name, "cancelled".into()).await;
        }
        // Decide "smaller" before writing anything (the note counts).
        let pointer_needed = decided != Plan::Drop;
        let text = if pointer_needed {
            format!(
                "{compacted}{}",
                recovery_note(&job.tool_call_id, name, tokens)
            )
        } else {
            compacted
        };
        if text.len() >= job.model.len() {
            let _ = self
                .store
                .set_compaction(
                    &job.tool_call_id,
                    CompactionState::NotSmaller,
                    Some(name),
                    None,
                )
                .await;
            return CompactionOutcome::NotSmaller;
        }
        let pointer = if pointer_needed {
            let mut doc = json!({
                "tool_call_id": job.tool_call_id,
                "run_id": job.run_id,
                "tool": job.tool.name(),
                "config": job.policy.config_key,
                "strategy": name,
                "input": job.args,
                "output": job.raw.value,
                "raw_output_spooled": job.raw.spool.is_some(),
                "model_projection": job.model,
            });
            if job.raw.spool.is_some() {
                // The raw bytes (a command's complete output) live with the call in the store;
                // the document carries them too when they are of a readable size.
                match self
                    .store
                    .read_raw_slice(&job.tool_call_id, 0, OFFLOAD_RAW_MAX)
                    .await
                {
                    Ok(slice) => {
                        doc["raw_output_bytes"] = json!(slice.total_len);
                        doc["raw_output_text"] =
                            json!(String::from_utf8_lossy(&slice.bytes).into_owned());
                        doc["raw_output_text_truncated"] =
                            json!(slice.total_len > slice.bytes.len() as u64);
                    }
                    Err(e) => {
                        return self
                            .fail(&job, name, format!("raw output unreadable: {e}"))
                            .await;
                    }
                }
            }
            match self
                .store
                .write_compacted_output(&job.run_id, &job.tool_call_id, &doc)
                .await
            {
                Ok(p) => Some(p),
                Err(e) => return self.fail(&job, name, format!("offload failed: {e}")).await,
            }
        } else {
            None
        };
        let state = if pointer_needed {
            CompactionState::Compacted
        } else {
            CompactionState::Dropped
        };
        match self
            .store
            .replace_model_projection(&job.tool_call_id, &text, state, name, pointer.as_deref())
            .await
        {
            Ok(true) => {
                self.cache.put_if_smaller(&job.tool_call_id, &text);
                tracing::debug!(call = %job.tool_call_id, strategy = name, "projection compacted");
                self.emit(Event::ToolCompacted {
                    call_id: job.tool_call_id.clone(),
                    strategy: name.to_string(),
                    tokens_before: tokens as u64,
                    tokens_after: estimate_tokens(&text) as u64,
                });
                CompactionOutcome::Compacted {
                    strategy: name,
                    pointer,
                    text,
                }
            }
            Ok(false) => CompactionOutcome::NotSmaller,
            Err(e) => {
                self.fail(&job, name, format!("store update failed: {e}"))
                    .await
            }
        }
    }

    fn trim_text(&self, job: &Job) -> String {
        let max_chars = chars_for_tokens(TRIM_TARGET_TOKENS);
        job.tool
            .handler
            .trim(&job.args, &job.raw, max_chars)
            .unwrap_or_else(|| head_tail_trim(&job.model, max_chars))
    }

    async fn summarize_text(&self, job: &Job, cancel: &Cancel<'_>) -> Result<String, String> {
        let Some(summarizer) = self.summarizer() else {
            return Ok(self.trim_text(job));
        };
        let req = SummaryRequest {
            tool: job.tool.name(),
            input: &job.args,
            text: &job.model,
            max_tokens: TRIM_TARGET_TOKENS,
        };
        tokio::select! {
            r = summarizer.summarize(&req, cancel.run) => r.map_err(|e| e.to_string()),
            _ = cancel.app.cancelled() => Err("cancelled".into()),
            _ = cancel.run.cancelled() => Err("cancelled".into()),
        }
    }

    async fn fail(&self, job: &Job, strategy: &str, error: String) -> CompactionOutcome {
        tracing::warn!(
            call = %job.tool_call_id,
            stage = Stage::Projection.as_str(),
            strategy,
            "precompaction failed; the original projection stays: {error}"
        );
        if let Err(e) = self
            .store
            .set_compaction(
                &job.tool_call_id,
                CompactionState::Failed,
                Some(strategy),
                Some(&error),
            )
            .await
        {
            tracing::error!(call = %job.tool_call_id, "cannot record the precompaction failure: {e}");
        }
        CompactionOutcome::Failed(error)
    }
}

/// The two tokens one compaction observes: the app's and its run's.
struct Cancel<'a> {
    app: &'a CancellationToken,
    run: &'a CancellationToken,
}

impl Cancel<'_> {
    fn is_cancelled(&self) -> bool {
        self.app.is_cancelled() || self.run.is_cancelled()
    }
}

/// One finished call handed to the compactor.
#[derive(Clone)]
pub struct Job {
    pub tool_call_id: String,
    pub run_id: String,
    /// The owning config's compaction strategy and disposability, as of the call.
    pub policy: ResultPolicy,
    pub tool: ToolDef,
    pub args: Value,
    pub raw: RawOutput,
    /// The model projection as delivered.
    pub model: String,
}

impl AfterCall for Arc<Compactor> {
    fn after_call(
        &self,
        tool: &ToolDef,
        policy: &ResultPolicy,
        args: &Value,
        raw: &RawOutput,
        outcome: &CallOutcome,
    ) {
        if outcome.status != CallStatus::Ok || estimate_tokens(&outcome.model) < self.threshold {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no async runtime: precompaction skipped");
            return;
        };
        let job = Job {
            tool_call_id: outcome.tool_call_id.clone(),
            run_id: outcome.run_id.clone(),
            policy: policy.clone(),
            tool: tool.clone(),
            args: args.clone(),
            raw: raw.clone(),
            model: outcome.model.clone(),
        };
        // The run's token as of now: the run may detach before the task runs.
        let run = self.run_token(&job.run_id);
        let this = self.clone();
        self.tracker.spawn_on(
            async move {
                this.compact_with(job, run).await;
            },
            &handle,
        );
    }
}
