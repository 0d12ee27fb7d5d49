//! One tool: its checked contract, risk, source, and the handler that owns execution and hooks.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

use super::Risk;
use crate::contract::{ToolError, ToolSpec};
use crate::events::EventSink;
use crate::services::Services;

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, TS)]
#[ts(export, type = "string")]
pub enum Source {
    Core,
    Skill,
    Mcp(String),
}

impl From<Source> for String {
    fn from(s: Source) -> String {
        match s {
            Source::Core => "core".to_string(),
            Source::Skill => "skill".to_string(),
            Source::Mcp(server) => format!("mcp:{server}"),
        }
    }
}

impl TryFrom<String> for Source {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "core" => Ok(Source::Core),
            "skill" => Ok(Source::Skill),
            other => other
                .strip_prefix("mcp:")
                .map(|server| Source::Mcp(server.to_string()))
                .ok_or_else(|| format!("unknown tool source `{other}`")),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from(self.clone()))
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Source::try_from(s).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from(self.clone()))
    }
}

/// Everything a handler may use during one call.
#[derive(Clone)]
pub struct CallContext {
    pub call_id: String,
    pub run_id: String,
    pub tool: String,
    pub cancel: CancellationToken,
    pub events: Arc<dyn EventSink>,
    pub services: Arc<Services>,
    /// The run's confirm broker: a handler asks the person through it during the call (the
    /// network question of `execute`, `ConfirmBroker::network_announced`).
    pub broker: Arc<dyn crate::confirm::ConfirmBroker>,
}

/// What a handler says about a call before any effect: the confirm target, scope and consequence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// The affected thing (path, command, `server/tool`). Empty means "the tool name".
    pub target: String,
    /// Extra scope lines beyond the project root and sandbox kind (writable roots, dropped env...).
    pub scope: Vec<String>,
    /// The expected consequence in one line: the app's own assessment, never the model's words.
    pub consequence: String,
    /// What the model says the call does (a `description` argument), shown labelled as the
    /// model's and apart from `consequence`.
    pub model_says: Option<String>,
    pub diff: Option<String>,
    /// Every target lies inside the project root (lets `auto_approve_writes` apply).
    pub inside_project: bool,
    /// A per-call risk when it differs from the tool's declared risk (never higher than the config's).
    pub risk: Option<Risk>,
    /// A command: how it would be launched on this host (the approval mode asks on a weaker path).
    pub launch: Option<crate::approvals::Launch>,
}

/// The raw result of a call: what persistence stores and projections are computed from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOutput {
    /// Structured raw output.
    pub value: Value,
    /// Raw bytes spooled to a file (e.g. a command's complete output), when the tool produced one.
    pub spool: Option<PathBuf>,
}

impl RawOutput {
    pub fn json(value: Value) -> Self {
        Self { value, spool: None }
    }
}

/// The code of one tool: execution and its result hooks. Hooks are pure functions of the arguments
/// and the raw output, so they are tested without I/O.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// Describe the call for confirmation, before any effect. May read (e.g. to build a diff).
    async fn prepare(&self, _ctx: &CallContext, _args: &Value) -> Result<Prepared, ToolError> {
        Ok(Prepared::default())
    }

    /// Perform the call. Must honour `ctx.cancel`.
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError>;

    /// Client projection: display fields for the UI and CLI.
    fn client(&self, _args: &Value, raw: &RawOutput) -> Value {
        raw.value.clone()
    }

    /// Model projection (the compact hook): the exact text later model steps see.
    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        match &raw.value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// Both projections of a finished call, `(client, model)`, or the Projection-stage error that
    /// makes the call fail (a stored result the tool cannot read). Callers that turn a result into
    /// a call outcome use this rather than `client`/`model`; by default both projections, which
    /// cannot fail.
    fn project(&self, args: &Value, raw: &RawOutput) -> Result<(Value, String), ToolError> {
        Ok((self.client(args, raw), self.model(args, raw)))
    }

    /// Structural trimming for precompaction: a smaller model text within about `max_chars`,
    /// or None when the tool has no structural trim (a generic head/tail trim is used then).
    fn trim(&self, _args: &Value, _raw: &RawOutput, _max_chars: usize) -> Option<String> {
        None
    }
}

/// A tool generated by a config.
#[derive(Clone)]
pub struct ToolDef {
    pub spec: ToolSpec,
    pub risk: Risk,
    pub source: Source,
    pub handler: Arc<dyn ToolHandler>,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.spec.name())
            .field("risk", &self.risk)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    pub fn name(&self) -> &str {
        self.spec.name()
    }
}
