//! Failure stages and the typed tool error every failure carries.
//!
//! The stage tells where in a call's lifecycle something went wrong (seed: "The lifecycle also gives
//! failures a precise location"), so recovery can be chosen by stage rather than by parsing text.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Where in a call's lifecycle a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[ts(export)]
pub enum Stage {
    /// The capability exists but was not activated (unknown or inactive tool name).
    Discovery,
    /// Arguments do not satisfy the tool's schema or its semantic rules.
    Parameters,
    /// The user, workspace, sandbox or host does not permit the effect.
    Authorization,
    /// Timeout, cancellation, missing dependency, partially applied effect.
    Execution,
    /// Raw output exists but projecting or compacting it failed.
    Projection,
    /// The call completed but reading back the effect did not match.
    Verification,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::Discovery,
        Stage::Parameters,
        Stage::Authorization,
        Stage::Execution,
        Stage::Projection,
        Stage::Verification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Discovery => "Discovery",
            Stage::Parameters => "Parameters",
            Stage::Authorization => "Authorization",
            Stage::Execution => "Execution",
            Stage::Projection => "Projection",
            Stage::Verification => "Verification",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
    }

    /// A short hint shown to the model with an error of this stage: what kind of recovery fits.
    pub fn model_hint(self) -> &'static str {
        match self {
            Stage::Discovery => {
                "The tool is not active in this step. Use one of the listed tools, or tool_search to activate a deferred one."
            }
            Stage::Parameters => {
                "Fix the arguments to match the tool's schema and retry; do not repeat the same call unchanged."
            }
            Stage::Authorization => {
                "The effect is not permitted here (outside the project, or declined by the person). Do not retry the same call; choose another approach or ask the person."
            }
            Stage::Execution => {
                "The call did not complete. Inspect what may have been partially applied before any retry."
            }
            Stage::Projection => {
                "The raw result exists but could not be presented; recover it with view_tool_call."
            }
            Stage::Verification => {
                "The call ran but its effect does not match what was intended. Read the affected state and correct it."
            }
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
