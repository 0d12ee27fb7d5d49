//! Values passed in and out of the store. Column meanings are documented on the fields.

use serde::{Deserialize, Serialize};

/// Lifecycle status of one tool call: the one definition shared with the core and the UI. Its
/// string forms (`running`, `ok`, ...) are the values of the `tool_calls.status` column.
pub use aibuddy_common::CallStatus;

/// The person's answer to a confirm request as recorded (`pending`, `approved`, `rejected`,
/// `cancelled`: the values of the `confirm_decisions.decision` column). The one definition is
/// [`aibuddy_common::DecisionState`]; this crate keeps its former name.
pub use aibuddy_common::DecisionState as Decision;

/// Where a call's model projection is in background precompaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionState {
    /// Below the threshold, or not considered yet.
    None,
    /// Compaction started in the background.
    Pending,
    /// A smaller projection replaced the original (trim or summarize; a recovery pointer exists).
    Compacted,
    /// The output was declared disposable and dropped (no recovery pointer).
    Dropped,
    /// The compacted result was not smaller; the original stays.
    NotSmaller,
    /// Compaction failed (a Projection-stage failure); the original stays, the error is recorded.
    Failed,
}

impl CompactionState {
    pub const ALL: [CompactionState; 6] = [
        CompactionState::None,
        CompactionState::Pending,
        CompactionState::Compacted,
        CompactionState::Dropped,
        CompactionState::NotSmaller,
        CompactionState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CompactionState::None => "none",
            CompactionState::Pending => "pending",
            CompactionState::Compacted => "compacted",
            CompactionState::Dropped => "dropped",
            CompactionState::NotSmaller => "not_smaller",
            CompactionState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<CompactionState> {
        CompactionState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// Written by `begin_call` BEFORE the call executes (status `running`).
#[derive(Debug, Clone, PartialEq)]
pub struct CallStart {
    /// Provider id when there is one, else `new_id()`. Validated with `validate_id`.
    pub tool_call_id: String,
    /// The run (task) this call belongs to; created on first use.
    pub run_id: String,
    /// Project root the run works in (creates the `projects` row on first use).
    pub project_root: Option<String>,
    pub tool: String,
    /// Key of the config that owns `tool`.
    pub config: String,
    /// Raw arguments exactly as received (may be malformed JSON: it is stored as text).
    pub input: String,
    /// Unix milliseconds; `None` = now.
    pub started_at_ms: Option<i64>,
}

/// How the raw output bytes relate to the tool's result (schema version 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawFormat {
    /// The tool's result was a text: the bytes are its UTF-8 encoding.
    Text,
    /// The tool's result was structured: the bytes are its compact JSON.
    Json,
    /// Bytes exactly as produced (a command's spooled output); the structured result, if any,
    /// is in `output_json`.
    Bytes,
}

impl RawFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            RawFormat::Text => "text",
            RawFormat::Json => "json",
            RawFormat::Bytes => "bytes",
        }
    }

    pub fn parse(s: &str) -> Option<RawFormat> {
        [RawFormat::Text, RawFormat::Json, RawFormat::Bytes]
            .into_iter()
            .find(|f| f.as_str() == s)
    }
}

/// Written by `finish_call`. Only after it returns may the caller report the call finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFinish {
    pub tool_call_id: String,
    /// Any status but `Running`.
    pub status: CallStatus,
    /// Failure stage name (`Execution`, ...) when status is not `ok`.
    pub stage: Option<aibuddy_common::Stage>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    /// Raw output bytes exactly as produced. Large outputs go to a file (see `paths`).
    pub raw_output: Vec<u8>,
    /// Take the raw output from this file instead of `raw_output`. The store's own spool file of
    /// the call (`Store::spool_path`) is moved into place; any other file is copied, never changed.
    pub raw_output_file: Option<std::path::PathBuf>,
    pub raw_format: RawFormat,
    /// The tool's structured result when the raw bytes are not it (`RawFormat::Bytes`).
    pub output_json: Option<serde_json::Value>,
    /// What the model sees.
    pub model_projection: Option<String>,
    /// Display-oriented JSON for the client.
    pub client_projection: Option<serde_json::Value>,
    /// Short searchable text of the client projection (indexed by FTS).
    pub display_text: Option<String>,
    /// Unix milliseconds; `None` = now.
    pub finished_at_ms: Option<i64>,
}

impl CallFinish {
    /// A finish record with only the id and status set.
    pub fn new(tool_call_id: impl Into<String>, status: CallStatus) -> Self {
        CallFinish {
            tool_call_id: tool_call_id.into(),
            status,
            stage: None,
            error_code: None,
            error_message: None,
            raw_output: Vec::new(),
            raw_output_file: None,
            raw_format: RawFormat::Bytes,
            output_json: None,
            model_projection: None,
            client_projection: None,
            display_text: None,
            finished_at_ms: None,
        }
    }
}

/// Where a call's raw output lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RawOutputLocation {
    /// No output recorded (running, or failed before execution).
    None,
    /// Stored in the row (`raw_output` BLOB), at most `INLINE_LIMIT` bytes.
    Inline,
    /// Stored in a file relative to the data directory (`blobs/<tool_call_id>.bin`).
    File { path: String },
}

/// One stored call, everything but the raw output bytes (read those with `read_raw_slice`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    pub config: String,
    pub status: CallStatus,
    pub stage: Option<aibuddy_common::Stage>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    /// RFC 3339 UTC with milliseconds.
    pub started_at: String,
    pub started_at_ms: i64,
    pub finished_at: Option<String>,
    pub finished_at_ms: Option<i64>,
    pub duration_ms: Option<i64>,
    /// Raw arguments as received: parsed JSON when it parses, else the text as a JSON string.
    pub input: serde_json::Value,
    pub raw_output_len: Option<i64>,
    pub raw_output: RawOutputLocation,
    /// True when the output is what was spooled before the process died.
    pub raw_output_partial: bool,
    /// `None` for rows written before schema version 3 or not finished.
    pub raw_format: Option<RawFormat>,
    pub output_json: Option<serde_json::Value>,
    pub model_projection: Option<String>,
    pub client_projection: Option<serde_json::Value>,
    pub display_text: Option<String>,
    /// Path of the offloaded raw input/output, relative to the data directory.
    pub recovery_pointer: Option<String>,
    pub compaction_state: CompactionState,
    pub compaction_strategy: Option<String>,
    pub compaction_error: Option<String>,
}

/// One row of `history`: the fields a listing needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRow {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    pub config: String,
    pub status: CallStatus,
    pub stage: Option<aibuddy_common::Stage>,
    pub error_message: Option<String>,
    pub started_at: String,
    pub started_at_ms: i64,
    pub duration_ms: Option<i64>,
    pub input: serde_json::Value,
    pub display_text: Option<String>,
    pub compaction_state: CompactionState,
    /// Where the call ran: the JSON text of its client projection's `confinement_detail`
    /// (small; the core reads it), `None` when it has none. Kept out of listings.
    #[serde(skip)]
    pub confinement_detail: Option<String>,
}

/// Filter of `history`; every field narrows. Results are newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryFilter {
    pub run_id: Option<String>,
    pub tool: Option<String>,
    pub status: Option<CallStatus>,
    /// Full-text search over tool name, input and display text (terms are ANDed, each matched as a
    /// token prefix; FTS operators in the text are treated as plain words).
    pub search: Option<String>,
    /// Page size; `None` = 50, capped at 10,000.
    pub limit: Option<usize>,
    /// Keyset pagination: only calls older than this id (the last id of the previous page).
    pub before: Option<String>,
}

/// A bounded slice of a call's raw output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSlice {
    pub bytes: Vec<u8>,
    pub offset: u64,
    /// Total raw output length in bytes.
    pub total_len: u64,
    pub partial: bool,
}

/// A confirm request: target, scope and expected consequence are recorded BEFORE the effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfirmRecord {
    pub tool_call_id: String,
    pub run_id: Option<String>,
    /// Digest of (tool, canonical args, target): a decision is valid only for this exact action.
    pub digest: String,
    pub target: String,
    pub scope: String,
    pub consequence: String,
    pub decision: Decision,
    pub requested_at_ms: i64,
    pub decided_at_ms: Option<i64>,
    /// Set when no person was asked: the standing policy that decided (schema 9), e.g.
    /// "ran without asking: auto mode, confined" or "your rule `deny rm *` refuses `rm -rf x`".
    /// Such a decision is never shown to the model as the person's answer.
    pub policy: Option<String>,
}

/// An answer the person gave to `ask_user_question`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserAnswer {
    pub tool_call_id: String,
    pub run_id: Option<String>,
    pub question: serde_json::Value,
    pub answer: serde_json::Value,
    pub answered_at_ms: i64,
}

#[cfg(test)]
mod stored_forms {
    //! Rows written with the strings every earlier build stored are read back as the same values:
    //! the shared types keep the store's column values.
    use super::*;
    use crate::{Store, open_connection};

    #[tokio::test]
    async fn statuses_and_decisions_written_by_earlier_builds_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let statuses = [
            ("running", CallStatus::Running),
            ("ok", CallStatus::Ok),
            ("error", CallStatus::Error),
            ("cancelled", CallStatus::Cancelled),
            ("rejected", CallStatus::Rejected),
            ("interrupted", CallStatus::Interrupted),
        ];
        let decisions = [
            ("pending", Decision::Pending),
            ("approved", Decision::Approved),
            ("rejected", Decision::Rejected),
            ("cancelled", Decision::Cancelled),
        ];
        {
            let conn = open_connection(dir.path()).unwrap();
            conn.execute("INSERT INTO runs (run_id, started_at) VALUES ('r', 1)", [])
                .unwrap();
            for (text, _) in statuses {
                conn.execute(
                    "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at,
                                             input, raw_output, raw_output_len, display_text)
                     VALUES (?1, 'r', 'ls', 'filesystem', ?1, 1, '{}', X'', 0, '')",
                    [text],
                )
                .unwrap();
            }
            for (text, _) in decisions {
                conn.execute(
                    "INSERT INTO confirm_decisions (tool_call_id, digest, target, scope,
                                                    consequence, decision, requested_at)
                     VALUES ('ok', ?1, 't', 's', 'c', ?1, 1)",
                    [text],
                )
                .unwrap();
            }
        }
        for (text, status) in statuses {
            let rec = store.get_call(text).await.unwrap().unwrap();
            assert_eq!(rec.status, status, "{text}");
            assert_eq!(rec.status.as_str(), text);
        }
        let recs = store.confirm_records("ok").await.unwrap();
        let mut got: Vec<(String, Decision)> =
            recs.into_iter().map(|r| (r.digest, r.decision)).collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<(String, Decision)> =
            decisions.iter().map(|(t, d)| (t.to_string(), *d)).collect();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want);
    }
}
