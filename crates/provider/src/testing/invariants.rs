//! The protocol invariants the fake server checks on every request. Pure: a request (format,
//! headers, body) in, violations out.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::images::{anthropic_image_problem, chat_image_problem, input_image_problem};
use crate::kind::ProviderKind;

/// One broken rule, with the request body that broke it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
    pub body: String,
}

/// Message-level keys that only the client may see (heartbeats, live output, display fields).
pub const CLIENT_ONLY_KEYS: &[&str] = &[
    "heartbeat",
    "display",
    "display_only",
    "client_only",
    "live_output",
    "progress",
    "tool_output",
    "stage",
];

/// Whether a tool name matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

struct Checker<'a> {
    body: &'a str,
    out: Vec<Violation>,
}

impl Checker<'_> {
    fn fail(&mut self, rule: &'static str, detail: impl Into<String>) {
        self.out.push(Violation {
            rule,
            detail: detail.into(),
            body: self.body.to_string(),
        });
    }
}

/// Checks one request. `headers` are lower-cased names; `key` is the key the client must send.
pub fn check_request(
    kind: ProviderKind,
    headers: &[(String, String)],
    body: &str,
    key: Option<&str>,
) -> Vec<Violation> {
    let mut c = Checker {
        body,
        out: Vec::new(),
    };
    if let Some(k) = key {
        if body.contains(k) {
            c.fail(
                "key_only_in_headers",
                "the API key appears in the request body",
            );
        }
        let header_ok = headers.iter().any(|(n, v)| match kind {
            ProviderKind::Anthropic => n == "x-api-key" && v == k,
            _ => n == "authorization" && v == &format!("Bearer {k}"),
        });
        if !header_ok {
            c.fail(
                "key_only_in_headers",
                "the API key is missing from the auth header",
            );
        }
    }
    let v: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            c.fail("json", format!("body is not JSON: {e}"));
            return c.out;
        }
    };
    let tool_names = check_tools(&mut c, kind, &v);
    match kind {
        ProviderKind::Anthropic => check_anthropic(&mut c, &v, &tool_names),
        ProviderKind::OpenAiResponses => check_responses(&mut c, &v, &tool_names),
        ProviderKind::OpenAiChat => check_chat(&mut c, &v),
    }
    c.out
}

/// Names, schemas and deferral of the `tools` array; returns the function tool names.
fn check_tools(c: &mut Checker, kind: ProviderKind, v: &Value) -> HashSet<String> {
    let mut names = HashSet::new();
    let tools = v
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut non_deferred = 0;
    for t in &tools {
        let (name, schema) = match kind {
            ProviderKind::Anthropic if t.get("type").is_some() => {
                non_deferred += 1; // a typed server tool (the provider's own search)
                continue;
            }
            ProviderKind::Anthropic => (t.get("name"), t.get("input_schema")),
            ProviderKind::OpenAiResponses
                if t.get("type").and_then(Value::as_str) != Some("function") =>
            {
                non_deferred += 1;
                continue;
            }
            ProviderKind::OpenAiResponses => (t.get("name"), t.get("parameters")),
            ProviderKind::OpenAiChat => (
                t.pointer("/function/name"),
                t.pointer("/function/parameters"),
            ),
        };
        let name = name.and_then(Value::as_str).unwrap_or_default();
        if !valid_tool_name(name) {
            c.fail(
                "tool_name",
                format!("tool name {name:?} does not match ^[a-zA-Z0-9_-]{{1,64}}$"),
            );
        }
        if !names.insert(name.to_string()) {
            c.fail("tool_name", format!("tool {name} is listed twice"));
        }
        let is_object = schema.is_some_and(|s| {
            s.is_object() && s.get("type").and_then(Value::as_str) == Some("object")
        });
        if !is_object {
            c.fail(
                "schema_object",
                format!("the schema of {name} is not an object schema"),
            );
        }
        if t.get("defer_loading").and_then(Value::as_bool) != Some(true) {
            non_deferred += 1;
        }
    }
    if !tools.is_empty() && non_deferred == 0 {
        c.fail("one_tool_not_deferred", "every tool is deferred");
    }
    names
}

fn check_client_only(c: &mut Checker, where_: &str, o: &Value) {
    if let Some(map) = o.as_object() {
        for k in CLIENT_ONLY_KEYS {
            if map.contains_key(*k) {
                c.fail(
                    "no_client_only_fields",
                    format!("{where_} carries the client-only field {k:?}"),
                );
            }
        }
        let ty = map.get("type").and_then(Value::as_str).unwrap_or_default();
        if ["heartbeat", "tool_output", "progress"].contains(&ty) {
            c.fail("no_client_only_fields", format!("{where_} is a {ty} block"));
        }
    }
}

fn check_anthropic(c: &mut Checker, v: &Value, tools: &HashSet<String>) {
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

/// Each call exactly one result; results for unknown ids are reported by the caller.
fn check_pairs(c: &mut Checker, calls: &HashSet<String>, results: &[String], at: &str) {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for r in results {
        *count.entry(r.as_str()).or_default() += 1;
    }
    let mut ids: Vec<&String> = calls.iter().collect();
    ids.sort();
    for id in ids {
        match count.get(id.as_str()).copied().unwrap_or(0) {
            1 => {}
            0 => c.fail(
                "one_result_per_call",
                format!("the call {id} of {at} has no result"),
            ),
            n => c.fail(
                "one_result_per_call",
                format!("the call {id} of {at} has {n} results"),
            ),
        }
    }
}

fn check_responses(c: &mut Checker, v: &Value, tools: &HashSet<String>) {
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

fn answer(
    c: &mut Checker,
    calls: &HashSet<String>,
    server: &HashSet<String>,
    results: &mut Vec<String>,
    id: String,
) {
    if server.contains(&id) {
        c.fail(
            "no_result_for_server_tool",
            format!("an output answers the server call {id}"),
        );
    } else if !calls.contains(&id) {
        c.fail(
            "result_names_known_call",
            format!("an output names {id}, not an earlier call"),
        );
    }
    results.push(id);
}

fn check_chat(c: &mut Checker, v: &Value) {
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
