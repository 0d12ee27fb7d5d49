//! The protocol invariants the fake server checks on every request. Pure: a request (format,
//! headers, body) in, violations out. One file per wire format: `anthropic`, `responses`, `chat`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::kind::ProviderKind;

mod anthropic;
mod chat;
mod responses;

use anthropic::check_anthropic;
use chat::check_chat;
use responses::check_responses;

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

pub(super) struct Checker<'a> {
    body: &'a str,
    out: Vec<Violation>,
}

impl Checker<'_> {
    pub(super) fn fail(&mut self, rule: &'static str, detail: impl Into<String>) {
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

pub(super) fn check_client_only(c: &mut Checker, where_: &str, o: &Value) {
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

/// Each call exactly one result; results for unknown ids are reported by the caller.
pub(super) fn check_pairs(c: &mut Checker, calls: &HashSet<String>, results: &[String], at: &str) {
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

pub(super) fn answer(
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
