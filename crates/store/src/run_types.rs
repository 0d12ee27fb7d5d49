//! Values of agent runs and their conversation (schema version 4): what the run loop writes and
//! what a context rebuild reads. Provider content is kept as the exact JSON text received.

use serde::{Deserialize, Serialize, Serializer};

use crate::types::{CallStatus, CompactionState, ConfirmRecord, UserAnswer};

/// Lifecycle status of an agent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Owned by a live process (see `RunRecord::owner`).
    Running,
    Completed,
    Cancelled,
    Error,
    MaxSteps,
    /// Its process died while it was running; set at the next `Store::open` (or
    /// `Store::recover_runs`). `Store::resume_run` continues it.
    Interrupted,
}

impl RunStatus {
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::Cancelled,
        RunStatus::Error,
        RunStatus::MaxSteps,
        RunStatus::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Error => "error",
            RunStatus::MaxSteps => "max_steps",
            RunStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Role of a stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
    /// A tool result: the message names the call (`tool_call_id`); the result itself stays in
    /// `tool_calls` (model projection, compacted form, status).
    Tool,
}

impl MessageRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::System => "system",
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<MessageRole> {
        [
            MessageRole::System,
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::Tool,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// Token usage as reported by a provider (zero when it reported none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// What `Store::create_run` records. The run starts `running`, owned by this process.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// `None`: a new sortable id. Validated with `validate_id`.
    pub run_id: Option<String>,
    pub title: Option<String>,
    /// Provider entry name from settings (`anthropic`, `local`, ...).
    pub provider: String,
    pub model: String,
    /// `native` or `active_tools`.
    pub presentation: String,
    pub project_root: Option<String>,
}

/// One run row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    pub run_id: String,
    pub title: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub presentation: Option<String>,
    /// `None` for runs that only group tool calls (`aibuddy call`), never an agent run.
    pub status: Option<RunStatus>,
    /// Failure stage (`Execution`, ...) of a run that ended `error`.
    pub stage: Option<aibuddy_common::Stage>,
    pub error_message: Option<String>,
    /// RFC 3339 UTC with milliseconds.
    pub started_at: String,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
    pub usage: Usage,
    /// Model requests answered (one per stored assistant message).
    pub steps: i64,
    /// Tool calls requested by the model.
    pub tool_calls: i64,
    pub project_root: Option<String>,
    /// Instance id of the process that owns the run while it is `running`.
    pub owner: Option<String>,
    /// Calls of this run are stored under run-scoped ids (`<run_id>:<provider id>`, schema 5);
    /// `false` for runs stored before (their calls keep the provider's ids).
    pub scoped_call_ids: bool,
    /// Why the model's last step stopped, when the run ended on an answer the model did not
    /// finish normally (`max_tokens`, `refusal`, `pause_turn`, or the provider's own word;
    /// schema 8). `None` otherwise, while running, and for runs stored before.
    pub stop_reason: Option<String>,
    /// A subagent run: the run whose `agent` call started it (schema 12). `None` otherwise.
    pub parent_run_id: Option<String>,
    /// A subagent run: the stored id of the parent's `agent` call (schema 12).
    pub parent_call_id: Option<String>,
    /// A subagent run: its shape as the core stored it (opaque JSON: tool set, system text).
    pub child_shape: Option<String>,
}

impl RunRecord {
    /// The id under which the provider's call `provider_id` of this run is stored (`tool_calls`,
    /// messages, events); the model always gets `provider_id` back.
    pub fn stored_call_id(&self, provider_id: &str) -> String {
        if self.scoped_call_ids {
            crate::call_ids::scoped_call_id(&self.run_id, provider_id)
        } else {
            provider_id.to_string()
        }
    }
}

/// One row of `Store::list_runs` (newest first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunListRow {
    pub run_id: String,
    pub title: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub status: RunStatus,
    pub started_at: String,
    pub started_at_ms: i64,
    pub steps: i64,
    pub tool_calls: i64,
    /// A subagent run: the run whose `agent` call started it, and that call's stored id.
    pub parent_run_id: Option<String>,
    pub parent_call_id: Option<String>,
}

/// The parent of a subagent run (`Store::create_child_run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunParent {
    pub run_id: String,
    /// The stored (run-scoped) id of the parent's `agent` call.
    pub call_id: String,
    /// The child's shape as the core describes it (opaque JSON), kept for a continued child.
    pub shape: Option<String>,
}

/// How a run ended (`Store::finish_run`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// Any status but `Running` / `Interrupted`.
    pub status: RunStatus,
    pub stage: Option<aibuddy_common::Stage>,
    pub error_message: Option<String>,
    /// See [`RunRecord::stop_reason`].
    pub stop_reason: Option<String>,
}

/// A tool call the model requested in an assistant message (ids parsed by the provider code).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestedCall {
    pub tool_call_id: String,
    pub tool: String,
}

/// A message to append. `content` is the provider's JSON exactly as it should be sent back
/// (stored byte-identical; it must parse as JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub role: MessageRole,
    pub content: String,
    /// Wire format that produced `content` (`anthropic`, `openai-responses`, `openai-chat`);
    /// `None` for provider-neutral content (the prompt, tool result references).
    pub provider_kind: Option<String>,
    pub usage: Option<Usage>,
    /// Role `assistant`: the tool calls it requested, in order.
    pub requested_calls: Vec<RequestedCall>,
    /// Role `tool`: the call whose result this message stands for.
    pub tool_call_id: Option<String>,
}

impl NewMessage {
    /// A provider-neutral user message with a text (`{"text": ...}`).
    pub fn user_text(text: &str) -> NewMessage {
        NewMessage {
            role: MessageRole::User,
            content: serde_json::json!({ "text": text }).to_string(),
            provider_kind: None,
            usage: None,
            requested_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// An assistant message as the provider returned it.
    pub fn assistant(
        provider_kind: &str,
        content: String,
        usage: Option<Usage>,
        requested_calls: Vec<RequestedCall>,
    ) -> NewMessage {
        NewMessage {
            role: MessageRole::Assistant,
            content,
            provider_kind: Some(provider_kind.to_string()),
            usage,
            requested_calls,
            tool_call_id: None,
        }
    }

    /// The reference to a call's result (`{"tool_call_id": ...}`); the result stays in `tool_calls`.
    pub fn tool_result(tool_call_id: &str) -> NewMessage {
        NewMessage {
            role: MessageRole::Tool,
            content: serde_json::json!({ "tool_call_id": tool_call_id }).to_string(),
            provider_kind: None,
            usage: None,
            requested_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.to_string()),
        }
    }
}

/// The stored result a tool message refers to (from `tool_calls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkedResult {
    pub tool: String,
    pub status: CallStatus,
    pub stage: Option<aibuddy_common::Stage>,
    pub error_message: Option<String>,
    /// What the model sees: the compacted form once precompaction replaced it.
    pub model_projection: Option<String>,
    pub compaction_state: CompactionState,
    /// The images sent to the model with the result: the JSON text of the client projection's
    /// `model_images` list (bounded by the core), `None` when it has none. Kept out of listings.
    #[serde(skip)]
    pub model_images: Option<String>,
    /// Where the call ran: the JSON text of the client projection's `confinement_detail`
    /// (small; the core reads it), `None` when it has none. Kept out of listings.
    #[serde(skip)]
    pub confinement_detail: Option<String>,
    /// A container's project sync around the call: the JSON text of the client projection's
    /// `sync` (bounded by the core; the core reads it), `None` when it has none. Kept out of
    /// listings.
    #[serde(skip)]
    pub sync: Option<String>,
}

fn content_as_json<S: Serializer>(content: &str, s: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<serde_json::Value>(content) {
        Ok(v) => v.serialize(s),
        Err(_) => s.serialize_str(content),
    }
}

/// One stored message of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRecord {
    pub message_id: String,
    pub run_id: String,
    /// 1-based order within the run.
    pub seq: i64,
    pub role: MessageRole,
    /// The JSON text exactly as appended (serialized as JSON in listings).
    #[serde(serialize_with = "content_as_json")]
    pub content: String,
    pub provider_kind: Option<String>,
    pub created_at_ms: i64,
    pub usage: Option<Usage>,
    pub requested_calls: Vec<RequestedCall>,
    pub tool_call_id: Option<String>,
    /// Role `tool`: the linked call; `None` when the call has no row (it never started).
    pub result: Option<LinkedResult>,
}

/// A summary that replaces messages `covers_from..=covers_to` in the next requests; the
/// originals stay stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRecord {
    pub summary_id: i64,
    pub run_id: String,
    pub covers_from: i64,
    pub covers_to: i64,
    /// The summary text as the model should read it.
    pub text: String,
    pub provider_kind: Option<String>,
    pub model: Option<String>,
    pub usage: Option<Usage>,
    pub created_at_ms: i64,
}

/// What `Store::append_summary` records.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSummary {
    pub covers_from: i64,
    pub covers_to: i64,
    pub text: String,
    pub provider_kind: Option<String>,
    pub model: Option<String>,
    pub usage: Option<Usage>,
}

/// A completed human interaction of a run, in the order it completed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Interaction {
    /// An `ask_user_question` answer.
    Answer(UserAnswer),
    /// A confirm request with its final decision (never `pending`).
    Confirm(ConfirmRecord),
}

impl Interaction {
    pub fn tool_call_id(&self) -> &str {
        match self {
            Interaction::Answer(a) => &a.tool_call_id,
            Interaction::Confirm(c) => &c.tool_call_id,
        }
    }
}

/// A run's stored conversation: everything a context rebuild reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversation {
    pub run: RunRecord,
    /// Every message in order, compacted ones included.
    pub messages: Vec<MessageRecord>,
    /// Summaries, oldest first.
    pub summaries: Vec<SummaryRecord>,
    pub interactions: Vec<Interaction>,
}
