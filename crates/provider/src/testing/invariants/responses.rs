//! The OpenAI Responses request's invariants.

use std::collections::HashSet;

use serde_json::Value;

use super::super::images::input_image_problem;
use super::*;

pub(super) fn check_responses(c: &mut Checker, v: &Value, tools: &HashSet<String>) {
    let items = v
        .get("input")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut calls: HashSet<String> = HashSet::new();
    let mut server: HashSet<String> = HashSet::new();
    let mut results: Vec<String> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        check_client_only(c, &format!("input[{i}]"), it);
        check_item_shape(c, i, it);
        let ty = it.get("type").and_then(Value::as_str).unwrap_or_default();
        let call_id = it
            .get("call_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let client = it.get("execution").and_then(Value::as_str) != Some("server");
        let Some(id) = call_id else { continue };
        match ty {
            "function_call" => {
                calls.insert(id);
            }
            "tool_search_call" if client => {
                calls.insert(id);
            }
            "tool_search_call" => {
                server.insert(id);
            }
            "function_call_output" => answer(c, &calls, &server, &mut results, id),
            "tool_search_output" if client => {
                for t in it
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
                    if !tools.contains(name) {
                        c.fail(
                            "tool_reference_known",
                            format!("tool_search_output returns {name}, which is not in tools"),
                        );
                    }
                }
                answer(c, &calls, &server, &mut results, id);
            }
            _ => {}
        }
    }
    check_pairs(c, &calls, &results, "input");
}

/// The fields the Responses API accepts on the input items aibuddy writes (an unknown field is a
/// 400 `unknown_parameter` there); output items replayed as received are not checked here.
fn allowed_keys(ty: &str) -> Option<&'static [&'static str]> {
    match ty {
        "tool_search_output" => Some(&["type", "id", "call_id", "execution", "status", "tools"]),
        "function_call_output" => Some(&["type", "id", "call_id", "output", "status"]),
        "message" => Some(&["type", "id", "role", "content", "status"]),
        _ => None,
    }
}

/// Input item shapes: known fields only; a message's role and content parts (`input_*` parts for
/// user, system and developer; `output_text` or `refusal` for assistant); `tool_search_output`
/// tools are function definitions with object schemas.
fn check_item_shape(c: &mut Checker, i: usize, it: &Value) {
    let ty = it.get("type").and_then(Value::as_str).unwrap_or_default();
    if let (Some(keys), Some(map)) = (allowed_keys(ty), it.as_object()) {
        for k in map.keys() {
            if !keys.contains(&k.as_str()) {
                c.fail(
                    "item_shape",
                    format!("input[{i}] ({ty}) has the unknown field {k:?}"),
                );
            }
        }
    }
    match ty {
        "message" => {
            let role = it.get("role").and_then(Value::as_str).unwrap_or_default();
            let parts: &[&str] = match role {
                "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
                "assistant" => &["output_text", "refusal"],
                other => {
                    c.fail("item_shape", format!("input[{i}] has the role {other:?}"));
                    return;
                }
            };
            match it.get("content") {
                Some(Value::String(_)) => {}
                Some(Value::Array(a)) if !a.is_empty() => {
                    for p in a {
                        let pt = p.get("type").and_then(Value::as_str).unwrap_or_default();
                        let text_ok =
                            !pt.ends_with("_text") || p.get("text").is_some_and(Value::is_string);
                        if !parts.contains(&pt) || !text_ok {
                            c.fail(
                                "item_shape",
                                format!("input[{i}] ({role} message) has a {pt:?} part"),
                            );
                        }
                        if pt == "input_image"
                            && let Some(problem) = input_image_problem(p)
                        {
                            c.fail("image_block", format!("input[{i}]: {problem}"));
                        }
                    }
                }
                _ => c.fail(
                    "item_shape",
                    format!("input[{i}] is a message without content"),
                ),
            }
        }
        "tool_search_output" => {
            let Some(tools) = it.get("tools").and_then(Value::as_array) else {
                c.fail(
                    "item_shape",
                    format!("input[{i}] tool_search_output without tools"),
                );
                return;
            };
            for t in tools {
                let function = t.get("type").and_then(Value::as_str) == Some("function")
                    && t.get("name").is_some_and(Value::is_string)
                    && t.get("parameters").is_some_and(Value::is_object);
                if !function {
                    c.fail(
                        "item_shape",
                        format!("input[{i}] tool_search_output returns something not a function definition"),
                    );
                }
            }
        }
        "function_call_output"
            if !it
                .get("output")
                .is_some_and(|o| o.is_string() || o.is_array()) =>
        {
            c.fail(
                "item_shape",
                format!("input[{i}] function_call_output without output"),
            );
        }
        "function_call_output" => {
            for p in it
                .get("output")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                check_output_part(c, i, p);
            }
        }
        _ => {}
    }
}

/// One part of a `function_call_output`'s `output` list: `input_text` with text,
/// `input_image` (checked as an image), or `input_file`.
fn check_output_part(c: &mut Checker, i: usize, p: &Value) {
    match p.get("type").and_then(Value::as_str).unwrap_or_default() {
        "input_text" if p.get("text").is_some_and(Value::is_string) => {}
        "input_image" => {
            if let Some(problem) = input_image_problem(p) {
                c.fail("image_block", format!("input[{i}] output: {problem}"));
            }
        }
        "input_file" => {}
        other => c.fail(
            "item_shape",
            format!("input[{i}] function_call_output has a {other:?} part"),
        ),
    }
}
