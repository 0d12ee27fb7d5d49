//! Tool configs (the seed's `ServerToolConfig`): one config owns creating its tools, its runtime
//! instructions and its result hooks (through the handlers it creates), and its compaction strategy.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ToolDef;
use crate::contract::DefineError;

/// What precompaction does with a large model projection of this config's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Compaction {
    /// Never compacted.
    None,
    /// Structural trimming by the tool's own hook; raw offloaded with a recovery pointer.
    Trim,
    /// Model summarization (falls back to trim without a summarizer); raw offloaded.
    Summarize,
    /// Dropped from the model's view; only for configs whose metadata declares output disposable.
    Drop,
}

/// A dependency a config needs from the host or the run before its tools may be exposed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
#[ts(export)]
pub enum Requirement {
    /// A sandbox with filesystem operations.
    SandboxFs,
    /// A sandbox that can execute commands.
    SandboxExec,
    /// The SQLite store (call history and recovery).
    Store,
    /// At least one skill loaded.
    Skills,
    /// At least one deferred tool in this run.
    DeferredTools,
    /// This MCP server connected.
    McpServer(String),
}

/// A tool configuration.
pub trait ToolConfig: Send + Sync {
    /// The config key (the seed's toolKey), e.g. `filesystem`, `execute`, `mcp:github`.
    fn key(&self) -> &str;

    /// Host or run dependencies; missing ones make every tool of the config absent with a reason.
    fn requirements(&self) -> Vec<Requirement> {
        Vec::new()
    }

    /// Text that joins the system prompt only while this config's tools are active.
    fn instructions(&self) -> Option<String> {
        None
    }

    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }

    /// Create the tools. Each goes through `define_tool`, so a bad schema fails here.
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError>;
}
