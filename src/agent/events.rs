//! What a run reports while it runs: the CLI's `--json` lines, the desktop's run events.
//!
//! Live tool output and heartbeats are transient (client only); nothing here enters the model's
//! context. Strings from the model, tools or the provider are carried as-is: printing them to a
//! terminal goes through `aibuddy_common::term`.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::confirm::{ConfirmRequest, NetworkAnswer, NetworkAsk};
use crate::contract::Stage;
use crate::events::{CallStatus, OutputStream};

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
#[ts(export)]
pub enum RunEvent {
    RunStarted {
        run_id: String,
        provider: String,
        model: String,
        /// `native` or `active_tools`.
        presentation: String,
    },
    /// A piece of assistant text as it streams.
    TextDelta { text: String },
    /// The model asked for a tool call (emitted before it runs).
    ToolCall {
        tool_call_id: String,
        tool: String,
        #[ts(type = "unknown")]
        input: Value,
    },
    /// Live output of a running call (client only).
    ToolOutput {
        tool_call_id: String,
        stream: OutputStream,
        chunk: String,
    },
    /// A call finished; `model` is the exact text the model will see.
    ToolResult {
        tool_call_id: String,
        status: CallStatus,
        stage: Option<Stage>,
        model: String,
        /// Wall time of the call, in milliseconds.
        duration_ms: u64,
        /// `execute` only: the command's exit code (`null` for other tools, and when the command
        /// was ended by a signal or never started).
        exit_code: Option<i64>,
        /// Output bytes the model text leaves out (a cut `execute` output); `null` when nothing
        /// was cut. The whole raw output stays recoverable by `tool_call_id`.
        omitted_bytes: Option<u64>,
        /// `tool_search` only: the tools the search activated (empty otherwise).
        activated: Vec<String>,
        /// The person's hooks that ran for the call (`pre_tool_call`, `post_tool_call`).
        hooks: Vec<crate::hooks::HookRun>,
        /// `execute` only: where the command ran when not on this machine (`container
        /// 0123456789ab (image `debian:12`) on unix:///…`); absent for a local run.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        sandbox: Option<String>,
        /// `execute` in a container with `project: "sync"`: what was copied in and brought
        /// back, and every change refused or skipped (the core's `call_sync`).
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        sync: Option<crate::tools::execute::SyncView>,
    },
    /// A hook of the run itself ran (`run_start`, `run_end`, `waiting_for_person`).
    Hook { hook: crate::hooks::HookRun },
    ConfirmRequest {
        tool_call_id: String,
        request: ConfirmRequest,
    },
    /// A running command asks for a host on no `exec.network` list; the host's broker answers it
    /// (the desktop with `answer_network` and `ask.ask_id`). Host and command are untrusted:
    /// shown through `ask.display`.
    NetworkAsk {
        tool_call_id: String,
        ask: NetworkAsk,
    },
    /// The network question `ask_id` was answered (or ended: deny).
    NetworkAskResolved {
        tool_call_id: String,
        ask_id: String,
        answer: NetworkAnswer,
    },
    /// The model asks the person (`ask_user_question`); the host's `HumanBroker` answers it (the
    /// desktop with `answer_ask_user` and this `tool_call_id`). Strings are the model's.
    AskUser {
        tool_call_id: String,
        question: String,
        options: Vec<String>,
        multi_select: bool,
        /// Free text is accepted besides (or instead of) the options.
        allow_other: bool,
    },
    /// An MCP server asks the person to fill a form (elicitation) during the run; answered by id
    /// through the same broker. Strings and schema are the server's.
    Elicitation {
        elicitation_id: String,
        server: String,
        message: String,
        #[ts(type = "unknown")]
        schema: Value,
    },
    /// A long call is alive (re-arms the idle watchdog).
    Heartbeat { tool_call_id: String },
    /// A step failed or stalled and is retried after `delay_ms`. The failed attempt's text is
    /// retracted: clients drop every `text_delta` received since the step began (since the last
    /// `tool_result`, `retry` or `run_started`); it is not stored and the model never sees it.
    /// The retried attempt streams its text again from the start.
    Retry {
        step: u32,
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// Older turns were summarized (conversation compaction).
    Compaction { covers_from: i64, covers_to: i64 },
    /// How much of the model's context window the conversation takes (the context meter): after
    /// each model step, with the provider's counts for that step, and once when a stored run is
    /// continued (its last step's counts). Not sent when the provider reported no usage.
    Usage {
        /// Prompt tokens of the step (cache reads and writes included: they are prompt).
        input_tokens: u64,
        /// Tokens the model wrote in the step (now part of the conversation).
        output_tokens: u64,
        /// The conversation's size in the model's context: `input_tokens + output_tokens`.
        context_tokens: u64,
        /// The context window compaction measures against (the model table's value, the
        /// `providers.NAME.context_window` setting, or, when neither knows the model, the
        /// provider kind's assumed default).
        window_tokens: u64,
        /// False when `window_tokens` is only the kind's assumed default (the model is not in the
        /// table and no setting names its window).
        window_known: bool,
        /// Share of the window past which older turns are summarized (`agent.compaction_threshold`).
        compaction_threshold: f64,
    },
    /// An event of a subagent run (started by the parent's `agent` call `parent_tool_call_id`),
    /// nested under that call's card. The child's own `run_started` / `run_finished` carry its run
    /// id. A child's questions (`confirm_request`, `ask_user`, `network_ask`, `elicitation`) come
    /// wrapped too and are answered by their ids like the parent's.
    Subagent {
        parent_tool_call_id: String,
        #[ts(type = "RunEvent")]
        event: Box<RunEvent>,
    },
    RunFinished {
        run_id: String,
        status: aibuddy_store::RunStatus,
        stage: Option<Stage>,
        usage: aibuddy_store::Usage,
        /// Set when the run ended on an answer the model did not finish normally: `max_tokens`
        /// (cut at its output limit), `refusal` (the model refused), `pause_turn` (still paused
        /// after the automatic continuations), or the provider's own word for any other reason
        /// (verbatim, control characters removed, at most 64 characters). `null` otherwise.
        stop_reason: Option<String>,
    },
}

/// The run event announcing a question to the person (`ask_user`, `elicitation`): what the run's
/// [`crate::human::RunHuman`] announces before it asks.
pub(crate) fn question_event(question: &crate::human::HumanQuestion) -> RunEvent {
    use crate::human::HumanQuestion;
    match question {
        HumanQuestion::Ask(a) => RunEvent::AskUser {
            tool_call_id: a.id.clone(),
            question: a.question.clone(),
            options: a.options.clone(),
            multi_select: a.multi_select,
            allow_other: a.allow_other,
        },
        HumanQuestion::Elicit(e) => RunEvent::Elicitation {
            elicitation_id: e.id.clone(),
            server: e.server.clone(),
            message: e.message.clone(),
            schema: e.schema.clone(),
        },
    }
}

/// Where run events go. Implementations must not block for long.
pub trait RunEventSink: Send + Sync {
    fn emit(&self, event: RunEvent);
}

/// Discards events.
pub struct NullRunSink;
impl RunEventSink for NullRunSink {
    fn emit(&self, _event: RunEvent) {}
}

/// Keeps every event (tests, small tools).
#[derive(Default)]
pub struct CollectingRunSink {
    events: Mutex<Vec<RunEvent>>,
}

impl CollectingRunSink {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    pub fn events(&self) -> Vec<RunEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl RunEventSink for CollectingRunSink {
    fn emit(&self, event: RunEvent) {
        if let Ok(mut e) = self.events.lock() {
            e.push(event);
        }
    }
}

/// Forwards events into an unbounded tokio channel.
pub struct ChannelRunSink(pub tokio::sync::mpsc::UnboundedSender<RunEvent>);
impl RunEventSink for ChannelRunSink {
    fn emit(&self, event: RunEvent) {
        let _ = self.0.send(event);
    }
}
