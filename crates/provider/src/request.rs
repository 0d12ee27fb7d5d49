//! What one step asks of a provider: system prompt, messages, tools and their presentation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Message;

/// The name of aibuddy's own client-side search tool.
pub const TOOL_SEARCH_NAME: &str = "tool_search";

/// One tool definition as the loop hands it to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema whose top level is an object.
    pub input_schema: Value,
    /// Deferred by the defer decision and not activated in this run. Native presentation sends it
    /// with `defer_loading: true`; activeTools leaves it out.
    pub deferred: bool,
}

/// How tool schemas reach the provider (the seed's tool-defer: one decision, two presentations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presentation {
    /// A stable array of every tool, deferred ones flagged; the provider expands references.
    Native,
    /// Only active and activated schemas; `tool_search` is an ordinary tool that activates.
    ActiveTools,
}

/// One model step.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub presentation: Presentation,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
}

impl ModelRequest {
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            system: String::new(),
            messages,
            tools: Vec::new(),
            presentation: Presentation::ActiveTools,
            max_tokens: 8192,
            temperature: None,
        }
    }

    /// The tools this request sends under its presentation (activeTools drops deferred ones).
    pub fn sent_tools(&self) -> impl Iterator<Item = &ToolSpec> {
        let native = self.presentation == Presentation::Native;
        self.tools.iter().filter(move |t| native || !t.deferred)
    }

    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }
}
