//! The Anthropic Messages request's invariants.

use std::collections::HashSet;

use serde_json::Value;

use super::super::images::anthropic_image_problem;
use super::*;

pub(super) fn check_anthropic(c: &mut Checker, v: &Value, tools: &HashSet<String>) {
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut prev_calls: HashSet<String> = HashSet::new();
    let mut prev_server: HashSet<String> = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        check_client_only(c, &format!("messages[{i}]"), m);
        let blocks = match m.get("content") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        for (j, b) in blocks.iter().enumerate() {
            check_client_only(c, &format!("messages[{i}].content[{j}]"), b);
            if b.get("type").and_then(Value::as_str) == Some("image")
                && let Some(p) = anthropic_image_problem(b)
            {
                c.fail("image_block", format!("messages[{i}].content[{j}]: {p}"));
            }
        }
        let ty = |b: &Value| {
            b.get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        if m.get("role").and_then(Value::as_str) == Some("assistant") {
            prev_calls = blocks
                .iter()
                .filter(|b| ty(b) == "tool_use")
                .filter_map(|b| b.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            prev_server = blocks
                .iter()
                .filter(|b| ty(b) != "tool_use")
                .filter_map(|b| b.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            if !prev_calls.is_empty() {
                let next = messages.get(i + 1).cloned().unwrap_or_default();
                let results: Vec<String> = next
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| ty(b) == "tool_result")
                    .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                check_pairs(c, &prev_calls, &results, &format!("messages[{i}]"));
            }
            continue;
        }
        check_results_first(c, i, &blocks);
        for b in &blocks {
            if ty(b) != "tool_result" {
                continue;
            }
            check_result_content(c, i, b);
            let id = b
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if prev_server.contains(id) || id.starts_with("srvtoolu_") {
                c.fail(
                    "no_result_for_server_tool",
                    format!("a tool_result answers the server tool call {id}"),
                );
            } else if !prev_calls.contains(id) {
                c.fail(
                    "result_names_known_call",
                    format!("a tool_result names {id}, not a call of the previous turn"),
                );
            }
            for r in b
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if ty(r) == "tool_reference" {
                    let name = r
                        .get("tool_name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !tools.contains(name) {
                        c.fail(
                            "tool_reference_known",
                            format!("tool_reference {name} is not in tools"),
                        );
                    }
                }
            }
        }
        prev_calls.clear();
        prev_server.clear();
    }
}

/// Block types the Messages API accepts inside a `tool_result`'s content array.
const RESULT_CONTENT_TYPES: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "tool_reference",
];

/// In a user turn that answers tool calls, every `tool_result` comes before any other block (the
/// Messages API answers 400 otherwise).
fn check_results_first(c: &mut Checker, i: usize, blocks: &[Value]) {
    let is_result = |b: &Value| b.get("type").and_then(Value::as_str) == Some("tool_result");
    if let Some(first_other) = blocks.iter().position(|b| !is_result(b))
        && blocks[first_other..].iter().any(is_result)
    {
        c.fail(
            "tool_results_first",
            format!("messages[{i}] has a tool_result after other content"),
        );
    }
}

fn check_result_content(c: &mut Checker, i: usize, result: &Value) {
    let Some(parts) = result.get("content").and_then(Value::as_array) else {
        return;
    };
    for p in parts {
        let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
        if !RESULT_CONTENT_TYPES.contains(&ty) {
            c.fail(
                "result_content_type",
                format!("messages[{i}] has a tool_result holding a {ty:?} block"),
            );
        }
        if ty == "image"
            && let Some(problem) = anthropic_image_problem(p)
        {
            c.fail(
                "image_block",
                format!("messages[{i}] has a tool_result image: {problem}"),
            );
        }
        if ty == "text" && !p.get("text").is_some_and(Value::is_string) {
            c.fail(
                "result_content_type",
                format!("messages[{i}] has a tool_result text block without text"),
            );
        }
    }
}
