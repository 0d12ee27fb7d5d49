//! The MCP bridge: one registry config per connected server (`mcp:<server>`), turning the
//! `aibuddy-mcp` catalog into tools. Every MCP schema passes through `define_tool`; a tool whose
//! schema fails is left out with a Discovery-stage reason (shown by `tools list`) while its
//! siblings stay. Risk comes from the tool's annotations only when the person marked the server
//! `trustAnnotations: true`; otherwise every MCP tool is high impact and asks (annotations are
//! untrusted hints per the MCP spec; a server's own `readOnlyHint` cannot skip the confirmation).
//! Results are bounded for the model ([`MODEL_MAX_CHARS`]) and for the client
//! ([`CLIENT_MAX_CHARS`]); the raw result is stored whole.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use aibuddy_mcp::{McpManager, McpRiskLevel, McpToolEntry};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::events::Event;
use crate::registry::{
    CallContext, Compaction, DeclaredNames, Prepared, RawOutput, Requirement, Risk, Source,
    ToolConfig, ToolConfigMeta, ToolDef, ToolHandler,
};

/// The config key of a server's tools.
pub fn config_key(server: &str) -> String {
    format!("mcp:{server}")
}

/// A tool left out of the registry, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub server: String,
    pub tool: String,
    pub qualified_name: String,
    pub reason: String,
}

/// Map MCP risk to registry risk. The level is already the effective one (untrusted
/// annotations leave it at high impact, see `aibuddy_mcp::risk`).
pub fn risk_of(entry: &McpToolEntry) -> Risk {
    risk_of_level(entry.risk.level)
}

/// Map an MCP risk level to registry risk. Pure.
pub fn risk_of_level(level: McpRiskLevel) -> Risk {
    match level {
        McpRiskLevel::ReadOnly => Risk::ReadOnly,
        McpRiskLevel::Write => Risk::Writes,
        McpRiskLevel::HighImpact => Risk::HighImpact,
    }
}

/// The qualified-name prefix of a server's tools: `mcp__<server>__` sanitised, shortened to what
/// every one of its (possibly hash-shortened) qualified names shares. Pure.
pub fn name_prefix(entries: &[McpToolEntry], server: &str) -> String {
    let mut prefix = format!(
        "{}{}__",
        aibuddy_mcp::names::PREFIX,
        aibuddy_mcp::names::sanitize_part(server)
    );
    for e in entries.iter().filter(|e| e.server == server) {
        let common = prefix
            .bytes()
            .zip(e.qualified_name.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        prefix.truncate(common);
    }
    prefix
}

/// One server's config.
pub struct McpServerConfig {
    server: String,
    key: String,
    entries: Vec<McpToolEntry>,
    manager: Arc<McpManager>,
}

impl McpServerConfig {
    pub fn new(server: &str, entries: Vec<McpToolEntry>, manager: Arc<McpManager>) -> Self {
        Self {
            server: server.to_string(),
            key: config_key(server),
            entries,
            manager,
        }
    }

    /// Define every tool; split into the accepted tools and those left out. Pure apart from
    /// building handlers.
    pub fn define(&self) -> (Vec<ToolDef>, Vec<LeftOut>) {
        let mut ok = Vec::new();
        let mut left = Vec::new();
        for e in &self.entries {
            let description = match (&e.title, e.description.trim()) {
                (_, d) if !d.is_empty() => d.to_string(),
                (Some(t), _) => t.clone(),
                (None, _) => format!("{} (MCP server `{}`)", e.name, e.server),
            };
            match define_tool(
                e.qualified_name.clone(),
                description,
                e.input_schema.clone(),
            ) {
                Ok(spec) => ok.push(ToolDef {
                    spec,
                    risk: risk_of(e),
                    source: Source::Mcp(self.server.clone()),
                    handler: Arc::new(McpToolHandler {
                        manager: self.manager.clone(),
                        server: self.server.clone(),
                        tool: e.name.clone(),
                        qualified: e.qualified_name.clone(),
                    }),
                }),
                Err(err) => left.push(LeftOut {
                    server: self.server.clone(),
                    tool: e.name.clone(),
                    qualified_name: e.qualified_name.clone(),
                    reason: err.reason,
                }),
            }
        }
        (ok, left)
    }

    pub fn meta(&self) -> ToolConfigMeta {
        let risk = self
            .define()
            .0
            .iter()
            .map(|t| t.risk)
            .max()
            .unwrap_or(Risk::ReadOnly);
        ToolConfigMeta {
            key: self.key.clone(),
            display_name: format!("MCP: {}", self.server),
            category: "mcp".to_string(),
            risk,
            disposable: false,
            names: DeclaredNames::Prefix(name_prefix(&self.entries, &self.server)),
        }
    }
}

impl ToolConfig for McpServerConfig {
    fn key(&self) -> &str {
        &self.key
    }
    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::McpServer(self.server.clone())]
    }
    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let (ok, left) = self.define();
        for l in &left {
            tracing::warn!(
                server = %l.server,
                tool = %l.tool,
                "MCP tool left out (Discovery): {}",
                l.reason
            );
        }
        Ok(ok)
    }
}

struct McpToolHandler {
    manager: Arc<McpManager>,
    server: String,
    tool: String,
    qualified: String,
}

#[async_trait]
impl ToolHandler for McpToolHandler {
    async fn prepare(&self, _ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        let shown = serde_json::to_string(args).unwrap_or_default();
        let shown: String = shown.chars().take(400).collect();
        Ok(Prepared {
            target: format!("{}/{}", self.server, self.tool),
            scope: vec![format!("external MCP server `{}`", self.server)],
            consequence: format!(
                "calls `{}` on MCP server `{}` with {shown}",
                self.tool, self.server
            ),
            ..Default::default()
        })
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let events = ctx.events.clone();
        let call_id = ctx.call_id.clone();
        let progress: aibuddy_mcp::ProgressSink = Arc::new(move |p: aibuddy_mcp::McpProgress| {
            events.emit(Event::ToolProgress {
                call_id: call_id.clone(),
                progress: p.progress,
                total: p.total,
                message: p.message,
            });
        });
        let result = self
            .manager
            .call(
                &self.qualified,
                args.clone(),
                ctx.cancel.clone(),
                Some(progress),
            )
            .await
            .map_err(ToolError::from)?;
        if result.is_error {
            return Err(reported_error(&result));
        }
        let content = Value::Array(result.content);
        let bounded = super::mcp_images::bound_content_images(&content).await;
        let mut raw = json!({
            "server": result.server,
            "tool": result.tool,
            "content": content,
            "structured_content": result.structured_content,
        });
        if !bounded.is_null() {
            raw[super::mcp_images::RAW_KEY] = bounded;
        }
        Ok(RawOutput::json(raw))
    }

    fn client(&self, _args: &Value, raw: &RawOutput) -> Value {
        client_value(&raw.value)
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_text(&raw.value)
    }
}

/// A result the server marked `isError` as an Execution-stage error. Its text is bounded as a
/// result's is ([`MODEL_MAX_CHARS`], head and tail): the message reaches the model and the
/// client; the whole content stays in the details, which are stored. Pure.
pub fn reported_error(result: &aibuddy_mcp::McpCallResult) -> ToolError {
    let text = bound_text(result.text(), MODEL_MAX_CHARS);
    ToolError::execution(
        "tool_reported_error",
        format!(
            "`{}` on MCP server `{}` reported an error: {}",
            result.tool,
            result.server,
            if text.is_empty() { "(no text)" } else { &text }
        ),
    )
    .with_details(json!({"content": result.content}))
}

/// Most characters of one text block (or of the structured content) in the client projection.
pub const CLIENT_MAX_CHARS: usize = 100_000;
/// Longest base64 `data` of an image or audio block kept in the client projection.
pub const CLIENT_MAX_DATA: usize = 1024 * 1024;

/// The client projection of an MCP result: the raw value with each text block and the
/// structured content bounded to [`CLIENT_MAX_CHARS`] (head and tail) and binary data over
/// [`CLIENT_MAX_DATA`] left out (its size is kept). The raw result stays whole in the store. Pure.
pub fn client_value(raw: &Value) -> Value {
    let mut out = json!({
        "server": raw["server"],
        "tool": raw["tool"],
    });
    let blocks: Vec<Value> = raw["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|block| {
            let mut block = block.clone();
            if let Some(text) = block.get("text").and_then(Value::as_str)
                && text.len() > CLIENT_MAX_CHARS
            {
                block["text"] = Value::String(bound_text(text.to_string(), CLIENT_MAX_CHARS));
            }
            if let Some(n) = block.get("data").and_then(Value::as_str).map(str::len)
                && n > CLIENT_MAX_DATA
            {
                block["data"] = Value::String(String::new());
                block["data_omitted_bytes"] = json!(n);
            }
            block
        })
        .collect();
    out["content"] = Value::Array(blocks);
    let images = super::mcp_images::sent(raw);
    if !images.is_empty() {
        out[crate::results::images::CLIENT_KEY] = json!(images);
    }
    out["structured_content"] = match &raw["structured_content"] {
        Value::Null => Value::Null,
        v => {
            let text = v.to_string();
            if text.len() > CLIENT_MAX_CHARS {
                Value::String(bound_text(text, CLIENT_MAX_CHARS))
            } else {
                v.clone()
            }
        }
    };
    out
}

/// Most characters of an MCP result that enter the model's context (head and tail are kept).
pub const MODEL_MAX_CHARS: usize = 30_000;

/// Keep the head (2/3) and tail (1/3) of `text` within `max` chars, saying what was omitted. Pure.
pub fn bound_text(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let head: String = text.chars().take(max * 2 / 3).collect();
    let tail_n = max / 3;
    let tail: String = text.chars().skip(total - tail_n).collect();
    format!(
        "{head}\n[... {} characters omitted; the complete result is stored: recover it with view_tool_call ...]\n{tail}",
        total - head.chars().count() - tail_n
    )
}

/// Names the image block `i` in `parts` when the raw value says what became of it (sent as
/// image input, or why not); false when it says nothing (results stored before images were
/// sent). Pure.
fn image_part(
    v: &Value,
    i: usize,
    block: &Value,
    sent: &mut usize,
    parts: &mut Vec<String>,
) -> bool {
    match super::mcp_images::entry(v, i) {
        None => false,
        Some(Ok(img)) => {
            *sent += 1;
            parts.push(img.label(*sent));
            true
        }
        Some(Err(reason)) => {
            parts.push(format!(
                "[image content, {}, {} base64 chars; not sent as an image: {reason}]",
                block["mimeType"].as_str().unwrap_or("unknown type"),
                block["data"].as_str().map_or(0, str::len),
            ));
            true
        }
    }
}

/// The model text of an MCP result: text blocks verbatim, other blocks summarised, structured
/// content as JSON when there is no text, bounded to [`MODEL_MAX_CHARS`]. Pure.
pub fn model_text(v: &Value) -> String {
    bound_text(model_text_unbounded(v), MODEL_MAX_CHARS)
}

fn model_text_unbounded(v: &Value) -> String {
    let mut parts = Vec::new();
    let mut sent = 0;
    for (i, block) in v["content"].as_array().into_iter().flatten().enumerate() {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or_default().to_string()),
            // An image sent as image input is named in place; one not sent is described.
            Some("image") if image_part(v, i, block, &mut sent, &mut parts) => {}
            Some("image") | Some("audio") => parts.push(format!(
                "[{} content, {}, {} base64 chars]",
                block["type"].as_str().unwrap_or_default(),
                block["mimeType"].as_str().unwrap_or("unknown type"),
                block["data"].as_str().map_or(0, str::len)
            )),
            Some("resource") => {
                let r = &block["resource"];
                match r["text"].as_str() {
                    Some(t) => parts.push(format!(
                        "[resource {}]\n{t}",
                        r["uri"].as_str().unwrap_or_default()
                    )),
                    None => parts.push(format!(
                        "[resource {} ({})]",
                        r["uri"].as_str().unwrap_or_default(),
                        r["mimeType"].as_str().unwrap_or("binary")
                    )),
                }
            }
            Some("resource_link") => parts.push(format!(
                "[resource link {} {}]",
                block["uri"].as_str().unwrap_or_default(),
                block["name"].as_str().unwrap_or_default()
            )),
            _ => parts.push(block.to_string()),
        }
    }
    if parts.is_empty()
        && let Some(s) = v.get("structured_content").filter(|s| !s.is_null())
    {
        parts.push(s.to_string());
    }
    if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_of_blocks() {
        let v = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
        ]});
        assert_eq!(
            model_text(&v),
            "hello\n[image content, image/png, 4 base64 chars]\n[resource file:///a]\nbody"
        );
        assert_eq!(
            model_text(&json!({"content": [], "structured_content": {"a": 1}})),
            "{\"a\":1}"
        );
        assert_eq!(
            model_text(&json!({"content": []})),
            "(the tool returned no content)"
        );
    }

    #[test]
    fn long_results_keep_head_and_tail() {
        let text: String = (0..20_000).map(|i| format!("{i}\n")).collect();
        let total = text.chars().count();
        let out = bound_text(text, 3_000);
        assert!(out.starts_with("0\n1\n"));
        assert!(out.ends_with("19999\n"));
        assert!(out.contains(&format!("{} characters omitted", total - 2_000 - 1_000)));
        assert!(out.chars().count() < 3_200);
        assert_eq!(bound_text("short".into(), 10), "short");
    }

    #[test]
    fn risk_levels_map_and_untrusted_read_only_hints_still_ask() {
        use crate::confirm::needs_confirmation;
        use aibuddy_mcp::{Hints, McpRisk};
        let read_only = Some(Hints {
            read_only: Some(true),
            ..Hints::default()
        });
        let untrusted = risk_of_level(McpRisk::from_hints(read_only, false).level);
        assert_eq!(untrusted, Risk::HighImpact);
        // Even with auto-approval of writes inside the project, high impact asks.
        assert!(needs_confirmation(untrusted, true, true));
        let trusted = risk_of_level(McpRisk::from_hints(read_only, true).level);
        assert_eq!(trusted, Risk::ReadOnly);
        assert!(!needs_confirmation(trusted, false, false));
        let additive = Some(Hints {
            read_only: Some(false),
            destructive: Some(false),
            ..Hints::default()
        });
        assert_eq!(
            risk_of_level(McpRisk::from_hints(additive, false).level),
            Risk::HighImpact
        );
        assert_eq!(
            risk_of_level(McpRisk::from_hints(additive, true).level),
            Risk::Writes
        );
        assert_eq!(
            risk_of_level(McpRisk::from_hints(None, true).level),
            Risk::HighImpact
        );
    }

    /// Image blocks the call bounded are named in place (sent) or described with the reason (not
    /// sent); the sent ones go to the client projection as `model_images`, never into the text.
    #[tokio::test]
    async fn images_are_named_in_the_text_and_kept_in_the_client_projection() {
        let tiny = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
        let content = json!([
            {"type": "text", "text": "two pictures"},
            {"type": "image", "mimeType": "image/png", "data": tiny},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"}
        ]);
        let mut raw = json!({"server": "s", "tool": "t", "content": content.clone(),
            "structured_content": null});
        raw[super::super::mcp_images::RAW_KEY] =
            super::super::mcp_images::bound_content_images(&content).await;
        assert_eq!(
            model_text(&raw),
            "two pictures\n[image 1: image/png, 1x1]\n[image content, image/png, 4 base64 chars; \
not sent as an image: not a PNG, JPEG, GIF, WebP or BMP image]"
        );
        let client = client_value(&raw);
        assert_eq!(client["model_images"][0]["data"], tiny);
        assert_eq!(client["model_images"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn the_client_projection_is_bounded() {
        let big = "y".repeat(3 * CLIENT_MAX_CHARS);
        let raw = json!({
            "server": "s", "tool": "t",
            "content": [
                {"type": "text", "text": big},
                {"type": "text", "text": "small"},
                {"type": "image", "mimeType": "image/png", "data": "A".repeat(CLIENT_MAX_DATA + 1)}
            ],
            "structured_content": {"rows": big}
        });
        let client = client_value(&raw);
        assert!(client.to_string().len() < 3 * CLIENT_MAX_CHARS);
        let text = client["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("characters omitted"), "{}", &text[..100]);
        assert_eq!(client["content"][1]["text"], "small");
        assert_eq!(client["content"][2]["data"], "");
        assert_eq!(
            client["content"][2]["data_omitted_bytes"],
            CLIENT_MAX_DATA + 1
        );
        assert!(client["structured_content"].is_string());
        assert!(model_text(&raw).chars().count() < MODEL_MAX_CHARS + 200);
        let small = json!({"server": "s", "tool": "t", "content": [{"type": "text", "text": "hi"}],
                           "structured_content": {"a": 1}});
        assert_eq!(client_value(&small), small);
    }

    #[test]
    fn a_reported_error_is_bounded_for_the_model_and_kept_whole_in_the_details() {
        let big = "E".repeat(2_000_000);
        let result = aibuddy_mcp::McpCallResult {
            server: "s".into(),
            tool: "t".into(),
            content: vec![json!({"type": "text", "text": big})],
            structured_content: None,
            is_error: true,
        };
        let err = reported_error(&result);
        assert_eq!(err.stage, crate::contract::Stage::Execution);
        assert_eq!(err.code, "tool_reported_error");
        assert!(
            err.model_text().chars().count() < MODEL_MAX_CHARS + 500,
            "{}",
            err.model_text().len()
        );
        assert!(
            err.message.contains("characters omitted"),
            "{}",
            &err.message[..80]
        );
        let details = err.details.unwrap();
        assert_eq!(
            details["content"][0]["text"].as_str().map(str::len),
            Some(2_000_000)
        );
        let empty = aibuddy_mcp::McpCallResult {
            content: vec![],
            ..result
        };
        assert!(
            reported_error(&empty)
                .message
                .ends_with("reported an error: (no text)")
        );
    }
}
