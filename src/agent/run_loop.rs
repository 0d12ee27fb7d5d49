//! `Agent::run`: the loop over steps (see the module docs of `agent`).

use std::sync::Arc;

use aibuddy_provider::{Message, ModelRequest, StopReason, Usage as ProviderUsage};
use aibuddy_store::{
    Conversation, MessageRole, NewMessage, NewRun, RunEnd, RunParent, RunRecord, RunStatus, Store,
    StoreError, Usage,
};
use tokio_util::sync::CancellationToken;

use super::answer::{keep_partial, record_answer};
use super::calls::{Asker, PlannedCall, ToolEvents, execute};
use super::compact_step::Compacted;
use super::confirms::RunConfirm;
use super::events::{RunEvent, RunEventSink};
use super::next_request::{SearchCache, searched};
use super::run_end::{End, stored_usage};
use super::run_hooks::RunHooks;
use super::subagent::{ChildStart, Children};
use super::tools::presentation_name;
use super::watchdog::{
    IdleWatchdog, StepContext, StepEnd, guard_tools, over_time_reason, stream_step,
};
use super::{Agent, AgentError, RunOutcome, RunStart};
use crate::confirm::ConfirmBroker;
use crate::contract::Stage;
use crate::events::EventSink;
use crate::human::RunHuman;
use crate::tools::tool_search::TOOL_NAME as TOOL_SEARCH;
use serde_json::json;

/// Longest run title kept from the prompt.
const TITLE_CHARS: usize = 80;
/// The user text a continued run gets when the person gave none and the model had finished (a
/// run that ended with its turn still paused, `pause_turn`, is resent as it is instead).
const CONTINUE_TEXT: &str = "Continue.";
/// Consecutive `pause_turn` steps continued automatically (the conversation is sent back with
/// the paused content last) before the run ends flagged `pause_turn`.
pub const MAX_PAUSE_CONTINUATIONS: u32 = 5;
fn title_of(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut t: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().nth(TITLE_CHARS).is_some() {
        t.push('…');
    }
    Some(t)
}

/// The last message the model would read is its own final answer (no calls): a continued run
/// then needs a user turn.
fn ends_with_final_answer(conv: &Conversation) -> bool {
    conv.messages
        .last()
        .is_some_and(|m| m.role == MessageRole::Assistant && m.requested_calls.is_empty())
}

impl Agent {
    pub(super) fn store(&self) -> Result<Store, AgentError> {
        self.app
            .persistence
            .as_ref()
            .map(|p| p.store.clone())
            .ok_or(AgentError::NoStore)
    }

    /// Creates or resumes the run and appends the person's text (a child run: created linked to
    /// its parent, its task as the text). Returns the run id.
    async fn open_run(
        &self,
        store: &Store,
        start: &RunStart,
        child: Option<&ChildStart>,
    ) -> Result<String, AgentError> {
        let route = self.provider.route();
        let store_err = |source| AgentError::Store {
            stage: Stage::Execution,
            source,
        };
        let prompt = start.prompt.trim();
        let run_id = match &start.continue_run {
            Some(id) => {
                let cont = |reason: String| AgentError::Continue {
                    run_id: id.clone(),
                    reason,
                };
                // A turn the server paused is continued by resending the conversation as it
                // is (the paused content last), like the automatic continuations: no user text.
                let paused = match store.get_run(id).await.map_err(store_err)? {
                    Some(r) if r.status.is_some() => {
                        r.stop_reason.as_deref() == Some(StopReason::PauseTurn.as_str())
                    }
                    Some(_) => return Err(cont("it is not an agent run".into())),
                    None => return Err(cont("there is no such run".into())),
                };
                let answered = store
                    .resume_run(id)
                    .await
                    .map_err(|e| cont(e.to_string()))?;
                tracing::info!(run = %id, interrupted_calls = answered.len(), "run resumed");
                let conv = store.conversation(id).await.map_err(store_err)?;
                if prompt.is_empty() && !paused && ends_with_final_answer(&conv) {
                    store
                        .append_message(id, NewMessage::user_text(CONTINUE_TEXT))
                        .await
                        .map_err(store_err)?;
                }
                id.clone()
            }
            None => {
                if prompt.is_empty() {
                    return Err(AgentError::EmptyPrompt);
                }
                let new = NewRun {
                    run_id: None,
                    title: title_of(child.map_or(prompt, |c| c.task.description.as_str())),
                    provider: route.name.clone(),
                    model: route.model.clone(),
                    presentation: presentation_name(route.presentation).to_string(),
                    project_root: Some(self.app.project_root.display().to_string()),
                };
                match child {
                    None => store.create_run(new).await,
                    Some(c) => {
                        let parent = RunParent {
                            run_id: c.parent_run_id.clone(),
                            call_id: c.parent_call_id.clone(),
                            shape: serde_json::to_string(&c.shape).ok(),
                        };
                        store.create_child_run(new, parent).await
                    }
                }
                .map_err(store_err)?
            }
        };
        if !prompt.is_empty() {
            store
                .append_message(&run_id, NewMessage::user_text(prompt))
                .await
                .map_err(store_err)?;
        }
        Ok(run_id)
    }

    /// Runs the agent until the model stops, `max_steps`, an error, or `cancel`. The person's
    /// `run_start` hooks run once the run is open, `run_end` hooks once its end is stored. A run that
    /// started always ends recorded (`Ok`), whatever its status; `Err` means it could not start.
    pub async fn run(
        &self,
        start: RunStart,
        cancel: CancellationToken,
        events: Arc<dyn RunEventSink>,
    ) -> Result<RunOutcome, AgentError> {
        self.run_as(start, None, cancel, events).await
    }

    /// A subagent run (`subagent`): stored linked to its parent, shaped (tools, system text) for
    /// its length, starting no children of its own.
    pub(crate) async fn run_child(
        &self,
        child: ChildStart,
        cancel: CancellationToken,
        events: Arc<dyn RunEventSink>,
    ) -> Result<RunOutcome, AgentError> {
        let start = RunStart {
            prompt: child.task.prompt.clone(),
            max_steps: child.max_steps,
            continue_run: None,
        };
        self.run_as(start, Some(child), cancel, events).await
    }

    async fn run_as(
        &self,
        start: RunStart,
        child: Option<ChildStart>,
        cancel: CancellationToken,
        events: Arc<dyn RunEventSink>,
    ) -> Result<RunOutcome, AgentError> {
        let store = self.store()?;
        let run_id = self.open_run(&store, &start, child.as_ref()).await?;
        // A child sees its narrowed tools and its system text from the first request on; a
        // top-level run may start children (a child may not: the depth is one).
        // A continued child keeps the shape it was stored with.
        let shape = match &child {
            Some(c) => Some(c.shape.clone()),
            None => match store.get_run(&run_id).await {
                Ok(Some(r)) => super::subagent::stored_shape(&r),
                _ => None,
            },
        };
        let is_child = shape.is_some();
        let _shape = shape.map(|s| self.app.child_shapes.attach(&run_id, s));
        let _children = (!is_child).then(|| {
            self.app.capabilities.subagent_desk().attach(
                &run_id,
                Arc::new(Children {
                    agent: self.clone(),
                    parent_run_id: run_id.clone(),
                    events: events.clone(),
                    max_steps: start.max_steps,
                    slots: Arc::new(tokio::sync::Semaphore::new(
                        self.app.capabilities.subagent_desk().max_concurrent(),
                    )),
                }),
            )
        });
        let route = self.provider.route();
        events.emit(RunEvent::RunStarted {
            run_id: run_id.clone(),
            provider: route.name.clone(),
            model: route.model.clone(),
            presentation: presentation_name(route.presentation).to_string(),
        });
        if start.continue_run.is_some()
            && let Ok(conv) = store.conversation(&run_id).await
        {
            // The context meter of a continued run starts from its last step.
            self.emit_stored_usage(&conv, events.as_ref());
        }
        let hooks = RunHooks::new(
            &self.app.services.settings,
            self.app.project_root.clone(),
            self.app.data_dir.clone(),
            &run_id,
            store.clone(),
            events.clone(),
        );
        let first = json!({"continued": start.continue_run.is_some(), "prompt": start.prompt});
        hooks.run("run_start", first, &cancel).await;
        // The person's questions of this run (ask_user_question, MCP elicitation): one broker.
        let human = Arc::new(
            RunHuman::new(
                self.human.clone(),
                {
                    let events = events.clone();
                    Arc::new(move |q: &crate::human::HumanQuestion| {
                        events.emit(super::events::question_event(q))
                    })
                },
                Some(store.clone()),
                &run_id,
                cancel.clone(),
            )
            .with_wait_notice({
                let (hooks, cancel) = (hooks.clone(), cancel.clone());
                Arc::new(move |what: &str, id: &str| hooks.waiting(what, id, &cancel))
            }),
        );
        let _desk = self
            .app
            .capabilities
            .human_desk()
            .attach(&run_id, human.clone());
        // Stopping this run also stops the background precompaction of its calls (only its own).
        let _compactions = self
            .app
            .persistence
            .as_ref()
            .map(|p| p.compactor.attach_run(&run_id, &cancel));
        let mut steps = StepCount {
            done: 0,
            max: start.max_steps.unwrap_or(self.options.max_steps).max(1),
        };
        let end = self
            .steps(
                &store, &run_id, &mut steps, &cancel, &events, &human, &hooks,
            )
            .await;
        if let Some(e) = &end.error {
            tracing::warn!(run = %run_id, stage = ?end.stage, "run failed: {e}");
        }
        // Its background processes end with it (their records stored first), unless kept.
        let stopped_processes = self
            .app
            .services
            .processes
            .end_run(&run_id, self.options.keep_processes)
            .await;
        let finished = store
            .finish_run(
                &run_id,
                RunEnd {
                    status: end.status,
                    stage: end.stage,
                    error_message: end.error.clone(),
                    stop_reason: end.stop_reason.clone(),
                },
            )
            .await;
        if let Err(e) = finished {
            tracing::error!(run = %run_id, "could not record the end of the run: {e}");
        }
        self.app.capabilities.discovery.end_run(&run_id);
        // A stopped run's `run_end` hooks still run (bounded by their own timeouts).
        let last =
            json!({"status": end.status, "stage": end.stage, "stop_reason": end.stop_reason});
        hooks.settle().await;
        hooks.run("run_end", last, &CancellationToken::new()).await;
        let usage = match store.get_run(&run_id).await {
            Ok(Some(r)) => r.usage,
            _ => Usage::default(),
        };
        events.emit(RunEvent::RunFinished {
            run_id: run_id.clone(),
            status: end.status,
            stage: end.stage,
            usage,
            stop_reason: end.stop_reason.clone(),
        });
        Ok(RunOutcome {
            run_id,
            status: end.status,
            stage: end.stage,
            error: end.error,
            usage,
            steps: steps.done,
            stop_reason: end.stop_reason,
            stopped_processes,
        })
    }

    /// The steps of a run, until it ends (however it ends).
    #[allow(clippy::too_many_arguments)]
    async fn steps(
        &self,
        store: &Store,
        run_id: &str,
        steps: &mut StepCount,
        cancel: &CancellationToken,
        events: &Arc<dyn RunEventSink>,
        human: &Arc<RunHuman>,
        hooks: &Arc<RunHooks>,
    ) -> End {
        // Calls are stored under run-scoped ids (a provider reusing `call_0` in another run must
        // not collide); the model keeps its own ids (the context maps them back).
        let run = match store.get_run(run_id).await {
            Ok(Some(run)) => run,
            Ok(None) => return End::store(StoreError::RunNotFound(run_id.to_string())),
            Err(e) => return End::store(e),
        };
        // A question waiting for the person pauses it, like a pending confirmation.
        let watchdog =
            Arc::new(IdleWatchdog::new(self.options.idle_timeout).with_person_waits(human.waits()));
        let mut lp = RunSteps {
            agent: self,
            store,
            kind: self.provider.route().kind.as_str(),
            cancel,
            events,
            confirm: Arc::new(RunConfirm {
                inner: self.broker.clone(),
                events: events.clone(),
                watchdog: watchdog.clone(),
                hooks: hooks.clone(),
                cancel: cancel.clone(),
            }),
            tool_sink: Arc::new(ToolEvents {
                run: events.clone(),
                watchdog: watchdog.clone(),
            }),
            watchdog,
            asker: Asker {
                run_id,
                human,
                stops: &self.app.call_stops,
            },
            cache: SearchCache::new(),
            run,
        };
        // `pause_turn` steps in a row, continued automatically.
        let mut pauses = 0u32;
        loop {
            if cancel.is_cancelled() {
                return End::status(RunStatus::Cancelled);
            }
            if steps.done >= steps.max {
                return End::status(RunStatus::MaxSteps);
            }
            if let Err(end) = lp.step(steps, &mut pauses).await {
                return end;
            }
        }
    }
}

/// What the steps of one run share, set up once by `Agent::steps`. Each stage returns
/// `Err(End)` when the run ends there (answered, stopped, out of steps or failed).
struct RunSteps<'a> {
    agent: &'a Agent,
    store: &'a Store,
    run: RunRecord,
    /// The route's kind, stored with each assistant message.
    kind: &'a str,
    cancel: &'a CancellationToken,
    events: &'a Arc<dyn RunEventSink>,
    watchdog: Arc<IdleWatchdog>,
    confirm: Arc<dyn ConfirmBroker>,
    tool_sink: Arc<dyn EventSink>,
    asker: Asker<'a>,
    cache: SearchCache,
}

impl RunSteps<'_> {
    fn run_id(&self) -> &str {
        &self.run.run_id
    }

    /// One step: the request, the model's answer (stored before any call runs), its calls.
    async fn step(&mut self, steps: &mut StepCount, pauses: &mut u32) -> Result<(), End> {
        let req = self.request().await?;
        let (mut message, usage, stop) = self.model_answer(&req, steps.done + 1).await?;
        steps.done += 1;
        let calls = record_answer(self.store, &self.run, self.kind, &mut message, usage).await?;
        self.agent
            .emit_step_usage(self.kind, &usage, self.events.as_ref());
        if calls.is_empty() {
            if stop == StopReason::PauseTurn && *pauses < MAX_PAUSE_CONTINUATIONS {
                // The server paused a long turn: the next request sends the conversation back
                // with the paused content last, and the model continues it.
                *pauses += 1;
                tracing::info!(run = %self.run_id(), pauses = *pauses, "the model paused its turn; continued");
                return Ok(());
            }
            if !stop.is_normal() {
                tracing::warn!(run = %self.run_id(), stop = stop.as_str(), "the model's last step did not finish normally");
            }
            return Err(End::answered(&stop));
        }
        *pauses = 0;
        self.run_calls(&calls).await?;
        if self.cancel.is_cancelled() {
            return Err(End::status(RunStatus::Cancelled));
        }
        Ok(())
    }

    /// The request of this step, compacted first when it would pass the threshold.
    async fn request(&mut self) -> Result<ModelRequest, End> {
        let (agent, store) = (self.agent, self.store);
        let run_id = self.run.run_id.clone();
        let req = agent.next_request(store, &run_id, &mut self.cache).await?;
        match agent
            .maybe_compact(store, &run_id, &req, self.cancel, self.events.as_ref())
            .await
        {
            Compacted::No => Ok(req),
            Compacted::Cancelled => Err(End::status(RunStatus::Cancelled)),
            // A provider trickling the summary forever: the run ends at the step time limit,
            // with everything stored before kept.
            Compacted::OverTime(reason) => Err(End::error(Stage::Execution, reason)),
            // Rebuilt from storage: the summary replaces the older turns, and the re-scan of
            // what is retained reactivates the deferred tools retained calls reference.
            Compacted::Yes => agent.next_request(store, &run_id, &mut self.cache).await,
        }
    }

    /// The model's answer to `req`, streamed under the watchdog with retries. The usage of
    /// aborted attempts is recorded; the text of a stopped step is kept as its answer.
    async fn model_answer(
        &self,
        req: &ModelRequest,
        step: u32,
    ) -> Result<(Message, ProviderUsage, StopReason), End> {
        let options = &self.agent.options;
        let cx = StepContext {
            provider: self.agent.provider.as_ref(),
            idle: options.idle_timeout,
            keepalive: options.keepalive_timeout,
            step_timeout: options.step_timeout,
            backoff: options.backoff,
            step,
            cancel: self.cancel,
            events: self.events.as_ref(),
            watchdog: &self.watchdog,
        };
        let (end, aborted) = stream_step(&cx, req).await;
        for u in aborted
            .into_iter()
            .filter(|u| *u != ProviderUsage::default())
        {
            if let Err(e) = self
                .store
                .add_run_usage(self.run_id(), stored_usage(u))
                .await
            {
                tracing::warn!(run = %self.run_id(), "usage of an aborted attempt not recorded: {e}");
            }
        }
        match end {
            StepEnd::Done {
                message,
                usage,
                stop,
            } => Ok((message, usage, stop)),
            StepEnd::Cancelled { partial_text } => {
                keep_partial(self.store, self.run_id(), self.kind, partial_text).await;
                Err(End::status(RunStatus::Cancelled))
            }
            StepEnd::OverTime { partial_text } => {
                let mut reason = over_time_reason(options.step_timeout);
                if !partial_text.is_empty() {
                    reason.push_str("; the text streamed so far is kept");
                }
                keep_partial(self.store, self.run_id(), self.kind, partial_text).await;
                Err(End::error(Stage::Execution, reason))
            }
            StepEnd::Failed { error } => Err(End::error(error.stage(), error.to_string())),
        }
    }

    /// Runs the step's calls (with this step's registry and tool set: MCP servers that
    /// connected since the run started are in both) and stores their results.
    async fn run_calls(&mut self, calls: &[PlannedCall]) -> Result<(), End> {
        let run_id = self.run_id().to_string();
        let app = &self.agent.app;
        let runner = app.runner(Some(run_id.clone()), self.confirm.clone());
        let toolset = app.run_toolset(&run_id);
        let tools_cancel = self.cancel.child_token();
        let guard = guard_tools(self.watchdog.clone(), tools_cancel.clone());
        let outcomes = execute(
            &runner,
            &toolset,
            calls,
            &tools_cancel,
            self.tool_sink.clone(),
            self.events.as_ref(),
            &self.asker,
        )
        .await;
        drop(guard);
        for o in &outcomes {
            if o.tool == TOOL_SEARCH && o.status == crate::events::CallStatus::Ok {
                self.cache
                    .insert(o.tool_call_id.clone(), searched(Some(&o.client)));
            }
        }
        let results = outcomes
            .iter()
            .map(|o| NewMessage::tool_result(&o.tool_call_id))
            .collect();
        self.store
            .append_messages(&run_id, results)
            .await
            .map(|_| ())
            .map_err(End::store)
    }
}

/// Steps taken by a run and its limit (`max_steps`).
struct StepCount {
    done: u32,
    max: u32,
}
