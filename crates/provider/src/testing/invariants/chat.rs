//! The OpenAI-compatible Chat Completions request's invariants.

use serde_json::Value;

use super::super::images::chat_image_problem;
use super::*;

/// A Chat message's content parts: a tool message takes text alone (a string or `text` parts);
/// a user message `text` and `image_url` parts, images checked.
fn check_chat_content(c: &mut Checker, i: usize, m: &Value) {
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
    let Some(parts) = m.get("content").and_then(Value::as_array) else {
        return;
    };
    for p in parts {
        let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
        match (role, ty) {
            (_, "text") if p.get("text").is_some_and(Value::is_string) => {}
            ("user", "image_url") => {
                if let Some(problem) = chat_image_problem(p) {
                    c.fail("image_block", format!("messages[{i}]: {problem}"));
                }
            }
            ("tool", _) => c.fail(
                "image_block",
                format!("messages[{i}] is a tool message with a {ty:?} part (text only)"),
            ),
            ("user", _) => c.fail(
                "item_shape",
                format!("messages[{i}] (user) has a {ty:?} part"),
            ),
            _ => {}
        }
    }
}

pub(super) fn check_chat(c: &mut Checker, v: &Value) {
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        check_client_only(c, &format!("messages[{i}]"), m);
        check_chat_content(c, i, m);
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        if role == "tool" {
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            c.fail(
                "result_names_known_call",
                format!("messages[{i}] answers {id}, not a call of the previous turn"),
            );
            i += 1;
            continue;
        }
        let calls: HashSet<String> = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        i += 1;
        if calls.is_empty() {
            continue;
        }
        let start = i;
        let mut results = Vec::new();
        while i < messages.len() && messages[i].get("role").and_then(Value::as_str) == Some("tool")
        {
            check_client_only(c, &format!("messages[{i}]"), &messages[i]);
            check_chat_content(c, i, &messages[i]);
            let id = messages[i]
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if !calls.contains(&id) {
                c.fail(
                    "result_names_known_call",
                    format!("messages[{i}] answers {id}, not a call of the previous turn"),
                );
            }
            results.push(id);
            i += 1;
        }
        check_pairs(c, &calls, &results, &format!("messages[{}]", start - 1));
    }
}
