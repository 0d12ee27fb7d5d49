//! Failure stages and the typed tool error every failure carries.
//!
//! The stage tells where in a call's lifecycle something went wrong (seed: "The lifecycle also gives
//! failures a precise location"), so recovery can be chosen by stage rather than by parsing text.
//! [`Stage`] is defined once in `aibuddy-common`; the errors of the sandbox, exec and MCP crates
//! carry it, and `From` turns them into a [`ToolError`] of the same stage and code (below).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Where in a call's lifecycle a failure happened: the one definition shared by every crate.
pub use aibuddy_common::Stage;

/// The error of a tool call: a stage, a stable machine code, and a message for people and models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error, TS)]
#[ts(export)]
#[error("{stage} error ({code}): {message}")]
pub struct ToolError {
    pub stage: Stage,
    /// Stable snake_case code, e.g. `invalid_arguments`, `path_escape`, `rejected`, `timeout`.
    pub code: String,
    pub message: String,
    /// Optional structured detail (e.g. the list of schema violations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "unknown")]
    pub details: Option<serde_json::Value>,
}

impl ToolError {
    pub fn new(stage: Stage, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            stage,
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn discovery(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Discovery, code, message)
    }
    pub fn parameters(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Parameters, code, message)
    }
    pub fn authorization(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Authorization, code, message)
    }
    pub fn execution(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Execution, code, message)
    }
    pub fn projection(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Projection, code, message)
    }
    pub fn verification(code: &str, message: impl Into<String>) -> Self {
        Self::new(Stage::Verification, code, message)
    }

    /// The exact text the model sees for this error.
    pub fn model_text(&self) -> String {
        format!(
            "Error [{}/{}]: {}\nHint: {}",
            self.stage,
            self.code,
            self.message,
            self.stage.model_hint()
        )
    }
}

/// A sandbox failure as a tool error: the sandbox's stage, its stable code and its message.
impl From<aibuddy_sandbox::SandboxError> for ToolError {
    fn from(e: aibuddy_sandbox::SandboxError) -> Self {
        ToolError::new(e.stage(), e.code(), e.to_string())
    }
}

/// An MCP client failure as a tool error: the client's stage, its stable code and its message.
impl From<&aibuddy_mcp::McpError> for ToolError {
    fn from(e: &aibuddy_mcp::McpError) -> Self {
        ToolError::new(e.stage(), e.code(), e.to_string())
    }
}

impl From<aibuddy_mcp::McpError> for ToolError {
    fn from(e: aibuddy_mcp::McpError) -> Self {
        ToolError::from(&e)
    }
}
