//! Agent runs: a model drives the tool plane.
//!
//! ```text
//! Agent::run(RunStart)
//!   -> store: create the run (or resume it: dangling calls answered as interrupted) + user text
//!   -> each step: rebuild the request from storage (context), present the tools (tools),
//!      compact when it would pass `agent.compaction_threshold` of the context window
//!      (compaction: pure cut and estimate; compact_step: summary through the provider
//!      (summarize), stored in `summaries`, `compaction` event, request rebuilt),
//!      stream it under the idle watchdog with retries (watchdog), store the assistant message
//!      exactly as received, execute its tool calls through `Runner::call` (calls), store results
//!   -> until no tool calls, max_steps, an error, or stop; finish the run in the store
//! ```
//!
//! `run_loop` holds `Agent::run` and the step stages (`RunSteps`: request, model answer, calls),
//! each returning `Err(End)` where the run ends (`run_end`); `next_request` rebuilds a step's
//! request from storage; `answer` stores the model's answer before its calls run.
//!
//! Confirmations reach the host's broker through `confirms::RunConfirm`, which emits the run's
//! `confirm_request` only once the request can be answered (`ConfirmBroker::decide_announced`).
//! Each tool call runs as its run's MCP caller (`calls::Asker`): an elicitation a server sends
//! during the call goes to that run's person and is stored under that call.
//!
//! Everything the model sees is rebuilt from SQLite each step, so a resumed run (`continue_run`)
//! and a live one send the same requests, and `Agent::next_request_body` (`aibuddy runs show
//! RUN_ID --next-request`) prints exactly what the next step sends. Calls are stored under
//! run-scoped ids (`<run_id>:<provider id>`, store schema 5); the model always gets its own ids
//! back. A continued run keeps its stored provider and model unless flags say otherwise
//! (`stored_route`).

mod answer;
mod calls;
mod compact_step;
pub mod compaction;
mod confirms;
pub mod context;
pub mod events;
pub mod human;
mod next_request;
mod run_end;
mod run_hooks;
mod run_loop;
pub mod search_note;
pub mod stored_route;
pub mod subagent;
pub mod summarize;
pub mod tools;
pub mod usage_event;
pub mod watchdog;

use std::sync::Arc;
use std::time::Duration;

use aibuddy_provider::{BackoffPolicy, Provider};
use serde::Serialize;

use crate::app::App;
use crate::confirm::ConfirmBroker;
use crate::contract::Stage;
use crate::human::{HumanBroker, NoPerson};

pub use aibuddy_store::RunStatus;
pub use events::{CollectingRunSink, NullRunSink, RunEvent, RunEventSink};
// The app holds the running calls of its runs, so their table lives below it (in the pipeline).
pub use crate::pipeline::call_stops;

/// Default bound on model steps per run.
pub const DEFAULT_MAX_STEPS: u32 = 100;
// The timeouts' defaults are the settings' (`agent.*_timeout_secs`), which own them.
pub use crate::settings::{DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE_TIMEOUT, DEFAULT_STEP_TIMEOUT};

/// Tunables of the loop (settings feed these; the defaults are the issue's).
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Steps per run when `RunStart::max_steps` is not given.
    pub max_steps: u32,
    /// A step whose stream yields nothing (not even a ping) for this long is aborted and retried.
    pub idle_timeout: Duration,
    /// A step whose stream sends only keep-alives (pings, SSE comments, bytes that complete no
    /// event) for this long, with no text, call or usage, is aborted and retried like a stall:
    /// pings re-arm the idle timer, so without this bound such a stream would never end.
    pub keepalive_timeout: Duration,
    /// The longest a step's model response may take, from its first request to its last event,
    /// retries and their waits included (tool calls are not counted). A stream that keeps
    /// trickling text forever re-arms both timers above; this bound ends it: the step is not
    /// retried, the text streamed so far is kept as the model's answer and the run ends `error`
    /// at Execution.
    pub step_timeout: Duration,
    /// Retries of a failed or stalled step.
    pub backoff: BackoffPolicy,
    /// `max_tokens` of each request.
    pub max_tokens: u32,
    /// Conversation compaction (settings `agent.*`).
    pub compaction: CompactionOptions,
    /// The run's background processes still running when it ends are kept (the person chose
    /// to; they end with the app or a Stop) instead of stopped.
    pub keep_processes: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            keepalive_timeout: DEFAULT_KEEPALIVE_TIMEOUT,
            step_timeout: DEFAULT_STEP_TIMEOUT,
            backoff: BackoffPolicy::default(),
            max_tokens: 8192,
            compaction: CompactionOptions::default(),
            keep_processes: false,
        }
    }
}

impl AgentOptions {
    /// The defaults with the settings' `agent.*` keys applied (compaction, and the time limits
    /// `agent.step_timeout_secs`, `agent.keepalive_timeout_secs`, `agent.idle_timeout_secs`).
    pub fn from_settings(settings: &crate::settings::Settings) -> Self {
        let a = &settings.agent;
        // The loader keeps these in 1 s ..= 24 h; the clamp only guards a hand-built `Settings`.
        let secs =
            |v: u64| Duration::from_secs(v.clamp(1, crate::settings::MAX_AGENT_TIMEOUT_SECS));
        Self {
            idle_timeout: secs(a.idle_timeout_secs),
            keepalive_timeout: secs(a.keepalive_timeout_secs),
            step_timeout: secs(a.step_timeout_secs),
            compaction: CompactionOptions {
                threshold: a.compaction_threshold,
                keep_recent_turns: a.keep_recent_turns.max(1) as usize,
                summary_model: a.summary_model.clone(),
                context_window: None,
            },
            ..Self::default()
        }
    }
}

/// When and how older turns are summarized (see `compaction`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOptions {
    /// Share of the context window the next request may reach before compaction (0 < x <= 1).
    pub threshold: f64,
    /// Turns kept verbatim (at least one).
    pub keep_recent_turns: usize,
    /// Model of the summary requests; `None`: the run's model.
    pub summary_model: Option<String>,
    /// Overrides the route's context window (the route has the table's value or the
    /// `providers.NAME.context_window` setting).
    pub context_window: Option<u64>,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        Self {
            threshold: 0.8,
            keep_recent_turns: 2,
            summary_model: None,
            context_window: None,
        }
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunStart {
    /// The person's text. May be empty when continuing a run (it then resumes as stored).
    pub prompt: String,
    /// Override of the run's step bound.
    pub max_steps: Option<u32>,
    /// Resume this stored run (an `interrupted` one included) instead of starting a new one.
    pub continue_run: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    pub run_id: String,
    pub status: RunStatus,
    /// The failure stage of an `error` end.
    pub stage: Option<Stage>,
    /// The provider's (or store's) message of an `error` end (bounded, terminal-escaped).
    pub error: Option<String>,
    /// Cumulative usage of the run, retried and aborted attempts included.
    pub usage: aibuddy_store::Usage,
    /// Model steps answered in this invocation.
    pub steps: u32,
    /// Why the last step stopped when the run ended on an answer that is not "the model
    /// finished": `max_tokens` (cut at its output limit), `refusal`, `pause_turn` (still paused
    /// after the automatic continuations), or the provider's own word for another reason.
    /// `None` otherwise.
    pub stop_reason: Option<String>,
    /// Background processes of the run that were still running when it ended and were stopped
    /// then (empty when the person keeps them).
    pub stopped_processes: Vec<crate::tools::process::ProcInfo>,
}

/// Failures that prevent a run from starting or being recorded (a run that started and failed
/// ends with `RunOutcome { status: Error, .. }` instead).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The app has no store (runs need one).
    #[error("agent runs need the SQLite store, which is not open")]
    NoStore,
    /// A new run needs the person's text.
    #[error("a run needs a prompt")]
    EmptyPrompt,
    /// The run to continue does not exist, is not an agent run, or is busy.
    #[error("run `{run_id}` cannot be continued: {reason}")]
    Continue { run_id: String, reason: String },
    /// The next request could not be built (`next_request_body`).
    #[error("the next request cannot be built ({stage:?}): {message}")]
    Request { stage: Stage, message: String },
    /// The store refused a write or read the loop depends on.
    #[error("run storage failed ({stage:?}): {source}")]
    Store {
        stage: Stage,
        #[source]
        source: aibuddy_store::StoreError,
    },
}

impl AgentError {
    pub fn stage(&self) -> Stage {
        match self {
            AgentError::NoStore | AgentError::EmptyPrompt | AgentError::Continue { .. } => {
                Stage::Parameters
            }
            AgentError::Store { stage, .. } | AgentError::Request { stage, .. } => *stage,
        }
    }
}

/// The run loop over one open project, one provider route and one confirm broker. Cloning is
/// cheap (shared parts); a subagent run uses a clone of its parent's.
#[derive(Clone)]
pub struct Agent {
    pub(crate) app: Arc<App>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) broker: Arc<dyn ConfirmBroker>,
    /// Answers `ask_user_question` and MCP elicitations of runs (nobody by default).
    pub(crate) human: Arc<dyn HumanBroker>,
    pub(crate) options: AgentOptions,
}

impl Agent {
    /// Also backs the app's precompaction `summarize` strategy with this provider
    /// ([`summarize::ProviderSummarizer`], model `agent.summary_model` or the run's).
    pub fn new(
        app: Arc<App>,
        provider: Arc<dyn Provider>,
        broker: Arc<dyn ConfirmBroker>,
        options: AgentOptions,
    ) -> Self {
        if let Some(p) = &app.persistence {
            p.compactor.set_summarizer(Arc::new(
                summarize::ProviderSummarizer::new(
                    provider.clone(),
                    options.compaction.summary_model.clone(),
                    options.idle_timeout,
                )
                .with_limits(summarize::SummaryLimits::of(&options)),
            ));
        }
        Self {
            app,
            provider,
            broker,
            human: Arc::new(NoPerson::new()),
            options,
        }
    }

    /// The broker that answers the person's questions during runs (`ask_user_question`, MCP
    /// elicitation): the CLI's terminal prompt, the desktop's `PendingQuestions`. Without one, the
    /// model is told nobody can answer.
    pub fn with_human(mut self, human: Arc<dyn HumanBroker>) -> Self {
        self.human = human;
        self
    }

    pub fn options(&self) -> &AgentOptions {
        &self.options
    }
}
