//! `tool_search`: finds deferred tools and activates their full schemas for the following steps of
//! the run. Exists only while something is deferred or an MCP server is still on its first
//! connection (`Requirement::DeferredTools`, `DeferDecision::offers_search`).
//!
//! A run never waits for MCP servers still connecting; `tool_search` does, before it ranks (bounded
//! by the setting `tool_search.connect_wait_ms`), through [`ServerReadiness`], and its result names
//! every server still unavailable, so the model knows what it cannot find yet.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
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
/// Longest reason shown per unavailable server in the model text.
const REASON_CHARS: usize = 200;

/// An MCP server whose tools cannot be found now, and why (`still connecting`, its failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    pub server: String,
    pub reason: String,
}

/// What waiting for the MCP servers still connecting came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// The servers whose tools cannot be found now.
    pub unavailable: Vec<Unavailable>,
    /// Tools of servers that were still connecting when the search began and joined as active
    /// tools (under the defer gates): nothing to search, they are callable from the next step.
    pub joined_active: Vec<String>,
}

/// What `tool_search` waits on before it ranks: the MCP servers still connecting (implemented by the
/// capability plane).
#[async_trait]
pub trait ServerReadiness: Send + Sync {
    /// Waits (bounded by the configured wait) until no MCP server is still on its first
    /// connection, brings the search index up to date with the servers that connected, and says
    /// which servers are still unavailable and which tools joined as active ones.
    async fn settle(&self) -> Settled;
}

/// The config. Built unbound by `builtin_configs` (its own empty service); the app binds it to the
/// project's [`DiscoveryService`] and the plane's [`ServerReadiness`].
pub struct ToolSearchConfig {
    service: Arc<DiscoveryService>,
    readiness: Option<Arc<dyn ServerReadiness>>,
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        Self::new(Arc::new(DiscoveryService::new()))
    }
}

impl ToolSearchConfig {
    pub fn new(service: Arc<DiscoveryService>) -> Self {
        Self {
            service,
            readiness: None,
        }
    }

    /// Waits on `readiness` before each search.
    pub fn with_readiness(mut self, readiness: Arc<dyn ServerReadiness>) -> Self {
        self.readiness = Some(readiness);
        self
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
            "Some tools are deferred: only their names and descriptions are indexed, and the tools of MCP \
servers still connecting are not listed yet ({TOOL_NAME} waits for them). When you need a \
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
                readiness: self.readiness.clone(),
            }),
        }])
    }
}

struct ToolSearchHandler {
    service: Arc<DiscoveryService>,
    readiness: Option<Arc<dyn ServerReadiness>>,
}

fn shorten(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The sentence naming tools that joined as active tools while the search waited (shared with the
/// native presentation's note, `agent::search_note`).
pub fn joined_active_text(names: &[String]) -> String {
    format!(
        "These MCP tools connected while the search waited and are active (not deferred): call \
them directly from your next step: {}",
        names.join(", ")
    )
}

/// The model text of a search result, then the tools that joined as active ones and the servers
/// whose tools could not be searched. Pure.
pub fn model_text_with(
    query: &str,
    out: &SearchOutcome,
    joined_active: &[String],
    unavailable: &[Unavailable],
) -> String {
    let mut text = if out.candidates.is_empty() && !joined_active.is_empty() {
        // Nothing deferred matched, but the tools asked for may be among those that joined.
        let mut t = joined_active_text(joined_active);
        if !out.unknown.is_empty() {
            t.push_str(&format!(
                "\nNo deferred tool is named: {}",
                out.unknown.join(", ")
            ));
        }
        t
    } else {
        let mut t = model_text(query, out);
        if !joined_active.is_empty() {
            t.push_str("\n\n");
            t.push_str(&joined_active_text(joined_active));
        }
        t
    };
    if !unavailable.is_empty() {
        text.push_str(
            "\n\nThese MCP servers are not available now, so their tools were not searched:",
        );
        for u in unavailable {
            text.push_str(&format!(
                "\n- {}: {}",
                u.server,
                shorten(&u.reason, REASON_CHARS).replace('\n', " ")
            ));
        }
    }
    text
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
        // The ranking resources load while the search waits for servers still connecting.
        crate::discovery::search::load_in_background();
        let settled = match &self.readiness {
            Some(readiness) => tokio::select! {
                u = readiness.settle() => u,
                _ = ctx.cancel.cancelled() => {
                    return Err(ToolError::execution(
                        "cancelled",
                        "stopped while waiting for MCP servers to connect",
                    ));
                }
            },
            None => Settled::default(),
        };
        let Settled {
            unavailable,
            joined_active,
        } = settled;
        let mut out = self.service.search(&query, limit);
        // A `select:` name of a tool that joined as an active one is not unknown: it is callable.
        out.unknown.retain(|n| {
            !joined_active
                .iter()
                .any(|j| j == n || j.ends_with(&format!("__{n}")))
        });
        let names: Vec<String> = out.candidates.iter().map(|c| c.name.clone()).collect();
        let newly = self.service.activate(&ctx.run_id, &names);
        tracing::debug!(run = %ctx.run_id, %query, activated = ?names, "tool_search");
        Ok(RawOutput::json(json!({
            "query": query,
            "activated": names,
            "newly_activated": newly,
            "candidates": out.candidates,
            "unknown": out.unknown,
            "joined_active": joined_active,
            "unavailable": unavailable,
        })))
    }

    fn model(&self, args: &Value, raw: &RawOutput) -> String {
        let out: SearchOutcome = SearchOutcome {
            candidates: serde_json::from_value(raw.value["candidates"].clone()).unwrap_or_default(),
            unknown: serde_json::from_value(raw.value["unknown"].clone()).unwrap_or_default(),
        };
        let unavailable: Vec<Unavailable> =
            serde_json::from_value(raw.value["unavailable"].clone()).unwrap_or_default();
        let joined: Vec<String> =
            serde_json::from_value(raw.value["joined_active"].clone()).unwrap_or_default();
        model_text_with(
            args["query"].as_str().unwrap_or_default(),
            &out,
            &joined,
            &unavailable,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_servers_are_named_after_the_result() {
        let out = SearchOutcome {
            candidates: Vec::new(),
            unknown: vec!["mcp__slow__echo".into()],
        };
        let text = model_text_with(
            "select:mcp__slow__echo",
            &out,
            &[],
            &[Unavailable {
                server: "slow".into(),
                reason: "still connecting\nsecond line".into(),
            }],
        );
        assert!(text.starts_with("No deferred tool matches"), "{text}");
        assert!(
            text.ends_with("their tools were not searched:\n- slow: still connecting second line"),
            "{text}"
        );
        assert_eq!(
            model_text_with("q", &out, &[], &[]),
            model_text("q", &out),
            "nothing added when every server is up"
        );
        let nothing = SearchOutcome::default();
        let joined = model_text_with("q", &nothing, &["mcp__slow__echo".into()], &[]);
        assert_eq!(
            joined,
            "These MCP tools connected while the search waited and are active (not deferred): \
call them directly from your next step: mcp__slow__echo",
            "no \"nothing matches\" when tools joined"
        );
    }
}
