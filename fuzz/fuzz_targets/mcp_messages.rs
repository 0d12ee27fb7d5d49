//! MCP message handling: what a server sends, turned into our types. A `tools/list` result becomes
//! the catalog (`aibuddy_mcp::catalog::build_catalog`: qualified names, schemas, risk) and then the
//! core's tool definitions (`define_tool`); a `tools/call` result becomes our content blocks and
//! the model text (`aibuddy::tools::mcp::model_text`). Whole JSON-RPC lines are decoded too.
//!
//! Input: `kind byte, repeat byte` then `server name 0x1E JSON 0x1E arguments JSON`.
//! Invariants: never panics; every listed tool is either in the catalog or rejected with a
//! reason; catalog names match `^[a-zA-Z0-9_-]{1,64}$`, start with `mcp__`, are unique and map back
//! to their exact server and tool; every accepted schema is an object schema; argument checks and
//! `define_tool` on server schemas never panic; the model text of a result stays bounded (30,000
//! characters plus one omission line), keeps its head and tail, and a result's text blocks appear
//! in order.
#![no_main]

use std::collections::{BTreeMap, HashSet};

use aibuddy::contract::define_tool;
use aibuddy::tools::mcp::{MODEL_MAX_CHARS, model_text};
use aibuddy_fuzz::{fields, text};
use aibuddy_mcp::McpCallResult;
use aibuddy_mcp::catalog::build_catalog;
use aibuddy_mcp::names::{PREFIX, is_valid_name};
use libfuzzer_sys::fuzz_target;
use rmcp::model::{CallToolResult, ListToolsResult, ServerJsonRpcMessage};
use serde_json::{Value, json};

/// Room for the one line the bound adds when it cuts (`[... N characters omitted; ...]`).
const OMISSION_LINE: usize = 128;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (kind, repeat) = (data[0], data[1] as usize + 1);
    let f = fields(&data[2..], 3);
    let server = text(f[0]);
    let _ = serde_json::from_slice::<ServerJsonRpcMessage>(f[1]);
    match kind % 2 {
        0 => tools_list(&server, f[1], f[2], repeat % 2 == 0),
        _ => call_result(f[1], repeat),
    }
});

fn tools_list(server: &str, json: &[u8], args: &[u8], trust_annotations: bool) {
    let Ok(list) = serde_json::from_slice::<ListToolsResult>(json) else {
        return;
    };
    let args: Value = serde_json::from_slice(args).unwrap_or_else(|_| json!({}));
    let listed = list.tools.len();
    let servers = BTreeMap::from([(server.to_string(), list.tools)]);
    let trusted: std::collections::BTreeSet<String> = if trust_annotations {
        [server.to_string()].into()
    } else {
        Default::default()
    };
    let catalog = build_catalog(&servers, &trusted);
    assert_eq!(catalog.entries.len() + catalog.rejected.len(), listed);
    let mut seen = HashSet::new();
    for e in &catalog.entries {
        assert!(is_valid_name(&e.qualified_name), "{:?}", e.qualified_name);
        assert!(
            e.qualified_name.starts_with(PREFIX),
            "{:?}",
            e.qualified_name
        );
        assert!(
            seen.insert(e.qualified_name.clone()),
            "duplicate {:?}",
            e.qualified_name
        );
        let origin = catalog
            .names
            .resolve(&e.qualified_name)
            .expect("name maps back");
        assert_eq!(
            (origin.server.as_str(), origin.tool.as_str()),
            (server, e.name.as_str())
        );
        assert_eq!(e.input_schema["type"], "object");
        // A server's own annotations never lower risk unless the person trusts them.
        assert!(
            trust_annotations || e.risk.level == aibuddy_mcp::McpRiskLevel::HighImpact,
            "untrusted annotations lowered risk: {:?}",
            e.risk
        );
        let _ = e.check_arguments(&args);
        let _ = define_tool(
            e.qualified_name.clone(),
            e.description.clone(),
            e.input_schema.clone(),
        )
        .map(|spec| spec.validate(&args));
    }
    for r in &catalog.rejected {
        assert!(!r.reason.is_empty());
    }
    let sorted = catalog
        .entries
        .windows(2)
        .all(|w| w[0].qualified_name <= w[1].qualified_name);
    assert!(sorted, "catalog entries are sorted by qualified name");
}

fn call_result(json: &[u8], repeat: usize) {
    let Ok(result) = serde_json::from_slice::<CallToolResult>(json) else {
        return;
    };
    // As the manager turns a result into ours (`McpManager::call`).
    let blocks: Vec<Value> = result
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    let mut content = Vec::with_capacity(blocks.len() * repeat.min(64));
    for _ in 0..repeat.min(64) {
        content.extend(blocks.iter().cloned());
    }
    let ours = McpCallResult {
        server: "s".into(),
        tool: "t".into(),
        content,
        structured_content: result.structured_content.clone(),
        is_error: result.is_error.unwrap_or(false),
    };
    let joined = ours.text();
    let texts: Vec<&str> = ours
        .content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(joined, texts.join("\n"));

    let raw = json!({
        "server": ours.server,
        "tool": ours.tool,
        "content": ours.content,
        "structured_content": ours.structured_content,
    });
    let model = model_text(&raw);
    let chars = model.chars().count();
    assert!(
        chars <= MODEL_MAX_CHARS + OMISSION_LINE,
        "{chars} characters"
    );
    if !texts.is_empty() && texts.len() == ours.content.len() {
        // Only text blocks: the model text is the joined text, whole or head + tail.
        if joined.chars().count() <= MODEL_MAX_CHARS {
            assert_eq!(model, joined);
        } else {
            let head: String = joined.chars().take(MODEL_MAX_CHARS * 2 / 3).collect();
            assert!(model.starts_with(&head), "head kept");
            let tail: String = {
                let n = joined.chars().count();
                joined.chars().skip(n - MODEL_MAX_CHARS / 3).collect()
            };
            assert!(model.ends_with(&tail), "tail kept");
        }
    }
}
