//! The spine every call hangs on:
//!
//! ```text
//! call {id, name, args}
//!   -> discovery: is `name` active in this run?                       else Discovery error
//!   -> registry: name -> tool; parse + validate args                  else Parameters error
//!   -> pre_tool_call hooks: block (Authorization error), ask (confirm), allow (nothing skipped)
//!   -> authorization: prepare (target, scope, consequence); confirm   else Authorization error
//!   -> checkpoint (not read-only): before-snapshot committed            else Execution error
//!   -> execution: the handler, with the call's cancellation token     else Execution error
//!   -> checkpoint: after-snapshot and change set (crate::checkpoints)
//!   -> projections: client (display) and model (compact hook)
//!   -> post_tool_call hooks: their notes join the model text
//!   -> store: commit raw + status; only then report finished
//!   -> background precompaction when the model projection is large (results::Compactor)
//! ```

mod approval;
pub mod call_stops;
mod hook_stage;
mod stages;

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approvals::Verdict;
use crate::confirm::{Approves, ConfirmBroker, ConfirmRequest, call_digest};
use crate::contract::{Stage, ToolError};
use crate::discovery::{Exposure, ToolSet};
use crate::events::{CallStatus, Event, EventSink};
use crate::hooks::HookRun;
use crate::registry::{CallContext, Compaction, Prepared, RawOutput, Registry, Risk, ToolDef};
use crate::services::Services;
// The records a call leaves live below (tools, results and checkpoints write them too).
pub use crate::call_record as record;
pub use crate::call_record::new_call_id;
pub use record::{CallEnd, CallRecorder, CallStart, ConfirmRecord, MemoryRecorder, now_ms};

/// A tool call as the model (or the CLI, or the UI console) emits it.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The provider's call id, when there is one.
    pub id: Option<String>,
    pub name: String,
    /// Raw argument text (JSON).
    pub arguments: String,
}

/// The result of one call: status, the exact model text, and the client projection.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    pub status: CallStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The exact text the model sees.
    pub model: String,
    /// The display projection.
    pub client: Value,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmRecord>,
    /// The person's hooks that ran for this call (`pre_tool_call`, `post_tool_call`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
}

impl CallOutcome {
    /// The client projection a card shows: the call's own, or, for a stopped command (no
    /// projection of its own), the copy its error keeps in `details.client`; `Null` without one.
    pub fn shown_client(&self) -> &Value {
        if !self.client.is_null() {
            return &self.client;
        }
        self.error
            .as_ref()
            .and_then(|e| e.details.as_ref())
            .and_then(|d| d.get("client"))
            .unwrap_or(&Value::Null)
    }
}

/// What the owning config declares about a call's results, taken from the registry at call time
/// (so tools that join later, e.g. MCP tools after `list_changed`, carry their own policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultPolicy {
    pub config_key: String,
    pub compaction: Compaction,
    pub disposable: bool,
}

/// Something that wants to see every finished call with its raw output (background precompaction).
pub trait AfterCall: Send + Sync {
    fn after_call(
        &self,
        tool: &ToolDef,
        policy: &ResultPolicy,
        args: &Value,
        raw: &RawOutput,
        outcome: &CallOutcome,
    );
}

/// Everything one run needs to execute calls.
pub struct Runner {
    pub run_id: String,
    pub registry: Arc<Registry>,
    pub services: Arc<Services>,
    pub broker: Arc<dyn ConfirmBroker>,
    pub recorder: Arc<dyn CallRecorder>,
    pub after_call: Option<Arc<dyn AfterCall>>,
    pub sandbox_kind: String,
    /// Checkpoints before and after each call that is not read-only (`None`: not taken).
    pub checkpoints: Option<Arc<crate::checkpoints::Checkpoints>>,
}

/// Whether a model's call names no tool at all: empty, or only whitespace and control
/// characters. Such a call fails at Discovery with its own message (the model is told to call a
/// listed tool), like an unknown name; the run goes on.
pub fn has_no_name(name: &str) -> bool {
    name.chars().all(|c| c.is_whitespace() || c.is_control())
}

/// The active tools of a run, sorted and comma-separated (for Discovery errors).
fn active_names(toolset: &ToolSet) -> String {
    let mut active: Vec<&str> = toolset.active().map(|t| t.name.as_str()).collect();
    active.sort_unstable();
    active.join(", ")
}

struct Failure {
    status: CallStatus,
    error: ToolError,
}

impl Failure {
    fn error(error: ToolError) -> Failure {
        Failure {
            status: CallStatus::Error,
            error,
        }
    }
}

/// A call that ran: what its result is projected and recorded with.
struct Ran {
    tool: ToolDef,
    policy: ResultPolicy,
    args: Value,
    raw: RawOutput,
    confirm: Option<ConfirmRecord>,
}

/// A call that ended at a stage, with the confirmation it got before (if it was asked).
struct Stopped {
    failure: Failure,
    confirm: Option<ConfirmRecord>,
}

impl From<Failure> for Stopped {
    fn from(failure: Failure) -> Stopped {
        Stopped {
            failure,
            confirm: None,
        }
    }
}

impl Runner {
    /// Run one call through the whole pipeline. Never panics on model or user input.
    pub async fn call(
        &self,
        toolset: &ToolSet,
        req: CallRequest,
        cancel: CancellationToken,
        events: Arc<dyn EventSink>,
    ) -> CallOutcome {
        let started = Instant::now();
        let tool_call_id = req
            .id
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(new_call_id);
        let input: Value = serde_json::from_str(req.arguments.trim())
            .unwrap_or_else(|_| Value::String(req.arguments.clone()));
        let config_key = self.registry.config_of(&req.name).map(str::to_string);
        let start = CallStart {
            tool_call_id: tool_call_id.clone(),
            run_id: self.run_id.clone(),
            tool: req.name.clone(),
            config: config_key.clone(),
            input: input.clone(),
            started_at: now_ms(),
        };
        events.emit(Event::ToolStarted {
            call_id: tool_call_id.clone(),
            tool: req.name.clone(),
            input: input.clone(),
        });
        if let Err(e) = self.recorder.begin(&start).await {
            tracing::error!(call = %tool_call_id, "could not record call start: {e}");
            let failure = Failure {
                status: CallStatus::Error,
                error: ToolError::execution(
                    "store_unavailable",
                    format!("the call was not run because it could not be recorded: {e}"),
                ),
            };
            return self
                .finish_failure(
                    &tool_call_id,
                    &req.name,
                    failure,
                    None,
                    Vec::new(),
                    started,
                    &events,
                )
                .await;
        }

        let mut hooks = Vec::new();
        let result = self
            .run_stages(
                toolset,
                &req,
                &tool_call_id,
                cancel.clone(),
                events.clone(),
                &mut hooks,
            )
            .await;
        match result {
            Ok(Ran {
                tool,
                policy,
                args,
                raw,
                confirm: confirm_record,
            }) => {
                let (client, model) = match tool.handler.project(&args, &raw) {
                    Ok(p) => p,
                    // The effect happened but its result cannot be read: the call fails at
                    // Projection and its raw result stays recoverable by call id.
                    Err(mut error) => {
                        error.details = Some(match error.details.take() {
                            None => raw.value.clone(),
                            Some(d) => serde_json::json!({"raw_output": raw.value, "details": d}),
                        });
                        let failure = Failure {
                            status: CallStatus::Error,
                            error,
                        };
                        return self
                            .finish_failure(
                                &tool_call_id,
                                &req.name,
                                failure,
                                confirm_record,
                                hooks,
                                started,
                                &events,
                            )
                            .await;
                    }
                };
                // post_tool_call hooks: their notes join the model's text (stored with it).
                let model = self
                    .post_hooks(&req.name, &args, &tool_call_id, &model, &cancel, &mut hooks)
                    .await;
                let outcome = CallOutcome {
                    tool_call_id: tool_call_id.clone(),
                    run_id: self.run_id.clone(),
                    tool: req.name.clone(),
                    status: CallStatus::Ok,
                    stage: None,
                    error: None,
                    model,
                    client,
                    duration_ms: started.elapsed().as_millis() as u64,
                    confirm: confirm_record,
                    hooks,
                };
                let end = CallEnd {
                    tool_call_id: tool_call_id.clone(),
                    status: CallStatus::Ok,
                    stage: None,
                    error: None,
                    output: raw.value.clone(),
                    spool: raw.spool.clone(),
                    model: outcome.model.clone(),
                    client: outcome.client.clone(),
                    finished_at: now_ms(),
                    duration_ms: outcome.duration_ms,
                    confirm: outcome.confirm.clone(),
                };
                if let Err(e) = self.recorder.finish(&end).await {
                    // The effect happened but the result is not durable: say so rather than report ok.
                    tracing::error!(call = %tool_call_id, "could not commit call result: {e}");
                    let failure = Failure {
                        status: CallStatus::Error,
                        error: ToolError::execution(
                            "store_unavailable",
                            format!("the call ran but its result could not be stored: {e}"),
                        ),
                    };
                    return self
                        .finish_failure(
                            &tool_call_id,
                            &req.name,
                            failure,
                            outcome.confirm,
                            outcome.hooks,
                            started,
                            &events,
                        )
                        .await;
                }
                events.emit(Event::ToolFinished {
                    call_id: tool_call_id.clone(),
                    status: CallStatus::Ok,
                    stage: None,
                    client: outcome.client.clone(),
                    duration_ms: outcome.duration_ms,
                });
                if let Some(after) = &self.after_call {
                    after.after_call(&tool, &policy, &args, &raw, &outcome);
                }
                outcome
            }
            Err(Stopped { failure, confirm }) => {
                self.finish_failure(
                    &tool_call_id,
                    &req.name,
                    failure,
                    confirm,
                    hooks,
                    started,
                    &events,
                )
                .await
            }
        }
    }

    /// The stages of one call: Discovery, Parameters, Authorization (the person's confirmation
    /// when asked), Execution with its checkpoint. `Err(Stopped)`: the call ended at a stage,
    /// with the confirmation it got so far.
    async fn run_stages(
        &self,
        toolset: &ToolSet,
        req: &CallRequest,
        call_id: &str,
        cancel: CancellationToken,
        events: Arc<dyn EventSink>,
        hooks: &mut Vec<HookRun>,
    ) -> Result<Ran, Stopped> {
        let (tool, policy) = self.discover(toolset, req).map_err(Stopped::from)?;
        // Parameters
        let args = tool
            .spec
            .parse_args(&req.arguments)
            .map_err(|error| Stopped::from(Failure::error(error)))?;
        let ctx = CallContext {
            call_id: call_id.to_string(),
            run_id: self.run_id.clone(),
            tool: req.name.clone(),
            cancel: cancel.clone(),
            events: events.clone(),
            services: self.services.clone(),
            broker: self.broker.clone(),
        };
        // pre_tool_call hooks: a block ends the call here; `ask` makes the person confirm.
        let hook_ask = self.pre_hooks(req, &args, call_id, &cancel, hooks).await?;
        let confirm = self
            .authorize(&tool, &policy, &ctx, req, &args, &events, hook_ask)
            .await?;
        match self.execute(&tool, &ctx, &args).await {
            Ok(raw) => Ok(Ran {
                tool,
                policy,
                args,
                raw,
                confirm,
            }),
            Err(failure) => Err(Stopped { failure, confirm }),
        }
    }

    /// What the person is (or would have been) shown for this call; `why`: why the approval mode
    /// or a rule asks, shown as a scope line.
    fn confirm_request(
        &self,
        call_id: &str,
        req: &CallRequest,
        args: &Value,
        prepared: &Prepared,
        risk: Risk,
        why: Option<String>,
    ) -> ConfirmRequest {
        let target = if prepared.target.is_empty() {
            req.name.clone()
        } else {
            prepared.target.clone()
        };
        let mut scope = vec![
            format!("project root: {}", self.services.project_root.display()),
            format!("sandbox: {}", self.sandbox_kind),
        ];
        scope.extend(prepared.scope.iter().cloned());
        scope.extend(why.map(|w| format!("approvals: {w}")));
        ConfirmRequest {
            call_id: call_id.to_string(),
            tool: req.name.clone(),
            risk,
            digest: call_digest(call_id, &req.name, args, &target, &scope),
            target,
            scope,
            consequence: prepared.consequence.clone(),
            diff: prepared.diff.clone(),
            model_says: prepared.model_says.clone(),
            display: Default::default(),
        }
        .revealed()
    }

    #[allow(clippy::too_many_arguments)]
    async fn finish_failure(
        &self,
        call_id: &str,
        tool: &str,
        failure: Failure,
        confirm: Option<ConfirmRecord>,
        hooks: Vec<HookRun>,
        started: Instant,
        events: &Arc<dyn EventSink>,
    ) -> CallOutcome {
        let Failure { status, error } = failure;
        let client = serde_json::json!({
            "error": {
                "stage": error.stage,
                "code": error.code,
                "message": error.message,
            }
        });
        let model = match status {
            CallStatus::Cancelled => {
                format!("Cancelled: {}\n{}", error.message, partial_text(&error))
            }
            // A timeout (or any failure that carries partial output) keeps what was produced.
            _ => match partial_text(&error) {
                p if p.is_empty() => error.model_text(),
                p => format!("{}\n{p}", error.model_text()),
            },
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let end = CallEnd {
            tool_call_id: call_id.to_string(),
            status,
            stage: Some(error.stage),
            error: Some(error.clone()),
            output: error.details.clone().unwrap_or(Value::Null),
            // A cancelled command keeps the output it spooled so far.
            spool: error
                .details
                .as_ref()
                .and_then(|d| d.pointer("/spool/path"))
                .and_then(Value::as_str)
                .map(std::path::PathBuf::from)
                .filter(|p| p.exists()),
            model: model.clone(),
            client: client.clone(),
            finished_at: now_ms(),
            duration_ms,
            confirm: confirm.clone(),
        };
        if let Err(e) = self.recorder.finish(&end).await {
            tracing::error!(call = %call_id, "could not record failed call: {e}");
        }
        events.emit(Event::ToolFinished {
            call_id: call_id.to_string(),
            status,
            stage: Some(error.stage),
            client: client.clone(),
            duration_ms,
        });
        CallOutcome {
            tool_call_id: call_id.to_string(),
            run_id: self.run_id.clone(),
            tool: tool.to_string(),
            status,
            stage: Some(error.stage),
            error: Some(error),
            model,
            client,
            duration_ms,
            confirm,
            hooks,
        }
    }
}

/// Partial output a cancelled tool attached to its error (`details.partial_model`), if any.
fn partial_text(error: &ToolError) -> String {
    error
        .details
        .as_ref()
        .and_then(|d| d.get("partial_model"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_default()
}
