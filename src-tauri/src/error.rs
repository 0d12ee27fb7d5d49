//! The error every command rejects with: a typed `{code, stage, message}` value, never a bare string,
//! so the UI decides by `code` and `stage` rather than by matching text.

use aibuddy::contract::Stage;
use serde::Serialize;
use ts_rs::TS;

/// What kind of failure a command reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ErrorCode {
    /// A tool failed at one of the lifecycle stages (`stage` says which).
    Tool,
    /// The open project or its settings could not be read.
    Project,
    /// A run could not start or continue: its provider, its prompt, or the stored run (`stage`
    /// says which).
    Run,
    /// Another run of this project is in progress (one run at a time per project).
    Busy,
    /// A checkpoint use case (changes, rewind preview, rewind) failed: `stage` says where.
    Checkpoint,
    /// A bug or an unexpected state in the shell.
    Internal,
    /// Set by the UI, never by the shell: Tauri itself rejected the call (unknown or not permitted command).
    Ipc,
}

/// A rejected command as the UI receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[error("{message}")]
#[ts(export)]
pub struct CommandError {
    pub code: ErrorCode,
    /// The lifecycle stage, for tool failures.
    pub stage: Option<Stage>,
    pub message: String,
}

impl CommandError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            stage: None,
            message: message.into(),
        }
    }
}

impl CommandError {
    /// A refused or failed core use case (`aibuddy::host`), reported under `code`.
    pub fn from_host(code: ErrorCode, error: aibuddy::host::HostError) -> Self {
        Self {
            code,
            stage: Some(error.stage),
            message: error.message,
        }
    }
}

impl From<aibuddy::contract::ToolError> for CommandError {
    fn from(error: aibuddy::contract::ToolError) -> Self {
        Self {
            code: ErrorCode::Tool,
            stage: Some(error.stage),
            message: error.to_string(),
        }
    }
}
