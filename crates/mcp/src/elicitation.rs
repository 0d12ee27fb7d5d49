//! Elicitation: a server asks the person for structured input during a call. Requests go to an
//! [`ElicitationBroker`] supplied by the host: aibuddy adapts its one broker for human questions
//! (`aibuddy::human`, shared with `ask_user_question`), so the terminal prompt and the desktop
//! dialog live with the host, not here. Defaults that the
//! requested schema declares are applied to accepted content for fields the person left out
//! (SEP-1034), so a bare "accept" sends the documented defaults.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};

/// One elicitation request as the broker sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitationRequest {
    /// Configured name of the server asking.
    pub server: String,
    /// Human-readable message from the server.
    pub message: String,
    /// The requested JSON Schema (an object of primitive properties).
    pub schema: Value,
    /// The defaults declared in `schema`, for pre-filling a form.
    pub defaults: Map<String, Value>,
}

/// What the person decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
pub enum ElicitationResponse {
    /// Submit these values (omitted fields receive the schema's defaults).
    Accept(Map<String, Value>),
    /// Explicitly refuse.
    Decline,
    /// Dismiss without choosing.
    Cancel,
}

/// Asks a person on behalf of an MCP server.
#[async_trait]
pub trait ElicitationBroker: Send + Sync {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse;
}

/// A broker for hosts that cannot ask anyone: declines every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclineElicitation;

#[async_trait]
impl ElicitationBroker for DeclineElicitation {
    async fn elicit(&self, _request: ElicitationRequest) -> ElicitationResponse {
        ElicitationResponse::Decline
    }
}

/// The `default` of every property in an object schema. Pure.
pub fn schema_defaults(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                out.insert(name.clone(), default.clone());
            }
        }
    }
    out
}

/// Fills every property missing from `content` with its schema default. Pure.
pub fn apply_schema_defaults(schema: &Value, content: &mut Map<String, Value>) {
    for (name, default) in schema_defaults(schema) {
        content.entry(name).or_insert(default);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }})
    }

    #[test]
    fn defaults_fill_only_missing_fields() {
        let mut content = Map::new();
        content.insert("name".into(), json!("Ada"));
        apply_schema_defaults(&schema(), &mut content);
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
    }

    #[test]
    fn schema_without_properties_has_no_defaults() {
        assert!(schema_defaults(&json!({"type": "object"})).is_empty());
        assert_eq!(schema_defaults(&schema()).len(), 5);
    }
}
