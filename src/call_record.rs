//! The records a call leaves for persistence, and the seam (`CallRecorder`) the store implements.
//! Durability order: `finish` returns only after the raw result is committed; only then is the call
//! reported finished. Below the pipeline (`crate::pipeline::record` re-exports it): background
//! processes, the results and the checkpoints' rewind record calls too.

use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::confirm::{ConfirmRequest, Decision};
use crate::contract::{Stage, ToolError};
use crate::events::CallStatus;

/// A new sortable call id.
pub fn new_call_id() -> String {
    format!("call_{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// The id the model of run `run_id` knows a stored call by: its provider's own id when the
/// stored id is the run-scoped form of it (`<run_id>:<id>`, which `view_tool_call` resolves
/// within the run), else the stored id. Pure.
pub fn model_call_id(run_id: &str, stored: &str) -> String {
    stored
        .strip_prefix(run_id)
        .and_then(|r| r.strip_prefix(':'))
        .filter(|own| !run_id.is_empty() && aibuddy_store::scoped_call_id(run_id, own) == stored)
        .unwrap_or(stored)
        .to_string()
}

/// Written before any effect (status `running`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallStart {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    /// Owning config key, when the tool is known.
    pub config: Option<String>,
    /// Raw input: the parsed arguments, or the raw text as a JSON string when it was not JSON.
    pub input: Value,
    /// Milliseconds since the Unix epoch.
    pub started_at: i64,
}

/// A person's decision on a confirm request, kept with the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmRecord {
    pub request: ConfirmRequest,
    pub decision: Decision,
    pub approved: bool,
    pub decided_at: i64,
}

/// Written when the call ends, whatever the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallEnd {
    pub tool_call_id: String,
    pub status: CallStatus,
    pub stage: Option<Stage>,
    pub error: Option<ToolError>,
    /// Raw structured output (Null on failure before execution).
    pub output: Value,
    /// Raw output bytes spooled to a file by the tool, if any.
    pub spool: Option<std::path::PathBuf>,
    pub model: String,
    pub client: Value,
    pub finished_at: i64,
    pub duration_ms: u64,
    pub confirm: Option<ConfirmRecord>,
}

#[derive(Debug, thiserror::Error)]
#[error("could not record the call: {0}")]
pub struct RecordError(pub String);

/// Persistence of calls. `finish` must not return before the record is durable.
#[async_trait]
pub trait CallRecorder: Send + Sync {
    async fn begin(&self, start: &CallStart) -> Result<(), RecordError>;
    async fn finish(&self, end: &CallEnd) -> Result<(), RecordError>;
    /// A confirm request (target, scope, consequence), recorded before the person is asked and
    /// before any effect. The decision follows in `finish` (`CallEnd::confirm`).
    async fn confirm_requested(&self, _request: &ConfirmRequest) -> Result<(), RecordError> {
        Ok(())
    }
    /// A call decided by the person's standing policy (the approval mode or a rule) without
    /// asking: what would have been shown, whether it runs, and why. Recorded before any effect.
    async fn policy_decided(
        &self,
        _request: &ConfirmRequest,
        _approved: bool,
        _why: &str,
    ) -> Result<(), RecordError> {
        Ok(())
    }
    /// One run of a person's hook, kept with its call (`call_id`) or only its run (run events).
    async fn hook_ran(
        &self,
        _run_id: &str,
        _call_id: Option<&str>,
        _run: &crate::hooks::HookRun,
    ) -> Result<(), RecordError> {
        Ok(())
    }
}

/// Keeps records in memory (tests; hosts without a data directory).
#[derive(Default)]
pub struct MemoryRecorder {
    pub starts: Mutex<Vec<CallStart>>,
    pub ends: Mutex<Vec<CallEnd>>,
}

#[async_trait]
impl CallRecorder for MemoryRecorder {
    async fn begin(&self, start: &CallStart) -> Result<(), RecordError> {
        self.starts
            .lock()
            .map_err(|e| RecordError(e.to_string()))?
            .push(start.clone());
        Ok(())
    }
    async fn finish(&self, end: &CallEnd) -> Result<(), RecordError> {
        self.ends
            .lock()
            .map_err(|e| RecordError(e.to_string()))?
            .push(end.clone());
        Ok(())
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
