//! `tool_search`: finds deferred tools and activates their full schemas for the following steps of
//! the run. Exists only while something is deferred (`Requirement::DeferredTools`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::discovery::service::{DiscoveryService, SearchOutcome};
use crate::registry::{
    CallContext, Compaction, RawOutput, Requirement, Risk, Source, ToolConfig, ToolConfigMeta,
    ToolDef, ToolHandler,
};

pub const KEY: &str = "tool_search";
pub const TOOL_NAME: &str = crate::discovery::TOOL_SEARCH;
pub const DEFAULT_LIMIT: u64 = 5;
pub const MAX_LIMIT: u64 = 20;
/// Longest description shown per candidate in the model text.
const DESC_CHARS: usize = 300;

/// The config. Built unbound by `builtin_configs` (its own empty service); the app binds it to the
/// project's [`DiscoveryService`].
pub struct ToolSearchConfig {
    service: Arc<DiscoveryService>,
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        Self::new(Arc::new(DiscoveryService::new()))
    }
}

impl ToolSearchConfig {
    pub fn new(service: Arc<DiscoveryService>) -> Self {
        Self { service }
    }
}

pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(
        KEY,
        "Tool search",
        "discovery",
        Risk::ReadOnly,
        false,
        &[TOOL_NAME],
    )
}

impl ToolConfig for ToolSearchConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::DeferredTools]
    }

    fn instructions(&self) -> Option<String> {
        Some(format!(
            "Some tools are deferred: only their names and descriptions are indexed. When you need a \
capability none of your active tools offers, call {TOOL_NAME} with a short description of the action \
(e.g. \"create a github issue\") or `select:<name>[,<name>]` for known names. The tools it returns \
become callable in your following steps."
        ))
    }

    fn compaction(&self) -> Compaction {
        // Small results whose retained presence keeps tools active after compaction.
        Compaction::None
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let spec = define_tool(
            TOOL_NAME,
            "Search the deferred tools (e.g. MCP server tools) by what they do, and activate the best \
matches for your following steps. Use words describing the action and object (\"list commits in a \
repository\"), or `select:name1,name2` to activate exact tool names.",
            json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What the tool should do, or select:<name>[,<name>...]"
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "description": format!("How many tools to return and activate (default {DEFAULT_LIMIT})")
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        )?;
        Ok(vec![ToolDef {
            spec,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(ToolSearchHandler {
                service: self.service.clone(),
            }),
        }])
    }
}

struct ToolSearchHandler {
    service: Arc<DiscoveryService>,
}

fn shorten(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The model text of a search result. Pure.
pub fn model_text(query: &str, out: &SearchOutcome) -> String {
    let mut text = String::new();
    if out.candidates.is_empty() {
        text.push_str(&format!(
            "No deferred tool matches `{query}`. Try other words for the action or object, or \
select:<exact name>."
        ));
    } else {
        text.push_str(&format!(
            "Activated {} tool{} for your following steps (full schemas now available):\n",
            out.candidates.len(),
            if out.candidates.len() == 1 { "" } else { "s" }
        ));
        for (i, c) in out.candidates.iter().enumerate() {
            let params = if c.params.is_empty() {
                String::new()
            } else {
                format!(" (params: {})", c.params.join(", "))
            };
            text.push_str(&format!(
                "{}. {} — {}{}\n",
                i + 1,
                c.name,
                shorten(&c.description, DESC_CHARS).replace('\n', " "),
                params
            ));
        }
    }
    if !out.unknown.is_empty() {
        text.push_str(&format!(
            "\nNo deferred tool is named: {}",
            out.unknown.join(", ")
        ));
    }
    text.trim_end().to_string()
}

#[async_trait]
impl ToolHandler for ToolSearchHandler {
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let query = args["query"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        if query.is_empty() {
            return Err(ToolError::parameters(
                "empty_query",
                "query must describe the tool you need",
            ));
        }
        let limit = args["limit"]
            .as_u64()
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT) as usize;
        let out = self.service.search(&query, limit);
        let names: Vec<String> = out.candidates.iter().map(|c| c.name.clone()).collect();
        let newly = self.service.activate(&ctx.run_id, &names);
        tracing::debug!(run = %ctx.run_id, %query, activated = ?names, "tool_search");
        Ok(RawOutput::json(json!({
            "query": query,
            "activated": names,
            "newly_activated": newly,
            "candidates": out.candidates,
            "unknown": out.unknown,
        })))
    }

    fn model(&self, args: &Value, raw: &RawOutput) -> String {
        let out: SearchOutcome = SearchOutcome {
            candidates: serde_json::from_value(raw.value["candidates"].clone()).unwrap_or_default(),
            unknown: serde_json::from_value(raw.value["unknown"].clone()).unwrap_or_default(),
        };
        model_text(args["query"].as_str().unwrap_or_default(), &out)
    }
}
