//! The three wire formats: a pure request builder and an incremental stream parser for each.

pub mod anthropic;
pub mod chat;
pub mod responses;
mod usage;

use serde_json::Value;

use crate::error::{ProviderError, bounded};
use crate::event::ProviderEvent;

/// Turns one format's SSE events into [`ProviderEvent`]s. Implementations are pure state machines
/// (no I/O), fed by the HTTP driver.
pub trait StreamParser: Send + 'static {
    /// One SSE event (`event:` name, possibly empty, and its `data:`).
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, ProviderError>;
    /// The body ended. Returns the final events, or an error if the response was cut short.
    fn on_end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError>;
    /// The message is complete; later bytes are ignored.
    fn is_done(&self) -> bool;
}

pub(crate) fn parse_json(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data)
        .map_err(|e| ProviderError::Protocol(format!("event data is not JSON: {e}")))
}

/// Arguments as JSON: `{}` for empty, the raw text as a JSON string when it is not valid JSON.
pub(crate) fn parse_arguments(s: &str) -> Value {
    if s.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// The error a body carries instead of an answer: `{"error": {...}}` (OpenAI and compatible
/// servers, sometimes with a 200 status or inside a stream), `{"type": "error", "error": {...}}`
/// (Anthropic), or `{"error": "text"}`. `"error": null` (Responses objects) is no error.
pub(crate) fn error_in_body(v: &Value) -> Option<ProviderError> {
    let e = match v.get("error") {
        Some(Value::Null) | None if str_field(v, "type") == "error" => v,
        Some(Value::Null) | None => return None,
        Some(e) => e,
    };
    if let Some(text) = e.as_str() {
        return Some(ProviderError::Stream {
            error_type: "error".into(),
            message: bounded(text),
        });
    }
    let error_type = match (e.get("type"), e.get("code")) {
        (Some(Value::String(t)), _) if !t.is_empty() && t != "error" => t.clone(),
        (_, Some(Value::String(c))) if !c.is_empty() => c.clone(),
        (_, Some(Value::Number(n))) => n.to_string(),
        _ => "error".to_string(),
    };
    let message = match e.get("message").and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None => e.to_string(),
    };
    Some(ProviderError::Stream {
        error_type: bounded(&error_type),
        message: bounded(&message),
    })
}

pub(crate) fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(n) => cur = n,
            None => return 0,
        }
    }
    cur.as_u64().unwrap_or(0)
}
