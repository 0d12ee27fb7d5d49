//! A tool's risk class: the fact the confirmation rules, the approval policy and the registry
//! all read, so it lives with the contract of a tool.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How much a tool's effect matters, which decides whether a person must confirm it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Risk {
    /// No effect outside reading; never confirmed.
    ReadOnly,
    /// Writes inside the project; confirmed by default (a project setting may auto-approve).
    Writes,
    /// Commands, deletions, destructive external tools: always confirmed.
    HighImpact,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::ReadOnly => "read_only",
            Risk::Writes => "writes",
            Risk::HighImpact => "high_impact",
        }
    }
}
