//! `define_tool`: a tool's contract (name, description, input schema), checked when it is defined.
//!
//! The schema is compiled once with the `jsonschema` crate. Definition fails, naming the tool and the
//! reason, when the top level is not `"type": "object"`, the schema itself is invalid, or a `$ref`
//! cannot be resolved synchronously and offline (remote URLs and missing local definitions). At call
//! time arguments are validated against the compiled schema and every violation is reported with its
//! JSON pointer as a Parameters-stage error.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Stage, ToolError};

/// Provider-accepted tool names: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why a tool definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` cannot be defined: {reason}")]
pub struct DefineError {
    pub tool: String,
    pub reason: String,
}

/// A checked tool contract. Cloning is cheap (the compiled validator is shared).
#[derive(Clone)]
pub struct ToolSpec {
    name: String,
    description: String,
    input_schema: Value,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// A `$ref` retriever that never touches the network or the disk: anything not inside the schema
/// document itself is unresolvable, so definition stays synchronous and offline.
struct OfflineRetriever;

impl jsonschema::Retrieve for OfflineRetriever {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "external $ref `{}` is not allowed (schemas must resolve offline)",
            uri.as_str()
        )
        .into())
    }
}

/// Define a tool: validate its name and compile its input schema.
pub fn define_tool(
    name: impl Into<String>,
    description: impl Into<String>,
    input_schema: Value,
) -> Result<ToolSpec, DefineError> {
    let name = name.into();
    let fail = |reason: String| DefineError {
        tool: name.clone(),
        reason,
    };
    if !is_valid_tool_name(&name) {
        return Err(fail("name must match ^[a-zA-Z0-9_-]{1,64}$".to_string()));
    }
    let Some(obj) = input_schema.as_object() else {
        return Err(fail("input schema must be a JSON object".to_string()));
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(fail(format!(
                "top-level schema type must be \"object\", found {other}"
            )));
        }
        None => {
            return Err(fail(
                "top-level schema must declare \"type\": \"object\"".to_string(),
            ));
        }
    }
    let validator = jsonschema::options()
        .with_retriever(OfflineRetriever)
        .should_validate_formats(true)
        .build(&input_schema)
        .map_err(|e| fail(format!("invalid input schema: {e}")))?;
    Ok(ToolSpec {
        name,
        description: description.into(),
        input_schema,
        validator: Arc::new(validator),
    })
}

impl ToolSpec {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn description(&self) -> &str {
        &self.description
    }
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// Parse raw argument text (as a model emits it) and validate it.
    pub fn parse_args(&self, raw: &str) -> Result<Value, ToolError> {
        let trimmed = raw.trim();
        let value: Value = if trimmed.is_empty() {
            json!({})
        } else {
            serde_json::from_str(trimmed).map_err(|e| {
                ToolError::new(
                    Stage::Parameters,
                    "malformed_arguments",
                    format!(
                        "arguments for `{}` are not valid JSON: {e} (line {}, column {})",
                        self.name,
                        e.line(),
                        e.column()
                    ),
                )
            })?
        };
        self.validate(&value)?;
        Ok(value)
    }

    /// Validate parsed arguments, listing every violation with its JSON pointer.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let violations: Vec<Value> = self
            .validator
            .iter_errors(args)
            .map(|e| {
                let pointer = e.instance_path().to_string();
                json!({
                    "pointer": if pointer.is_empty() { "/".to_string() } else { pointer },
                    "message": e.to_string(),
                })
            })
            .collect();
        if violations.is_empty() {
            return Ok(());
        }
        let listing = violations
            .iter()
            .map(|v| {
                format!(
                    "  {}: {}",
                    v["pointer"].as_str().unwrap_or("/"),
                    v["message"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        Err(ToolError::new(
            Stage::Parameters,
            "invalid_arguments",
            format!(
                "arguments for `{}` violate its schema ({} problem{}):\n{listing}",
                self.name,
                violations.len(),
                if violations.len() == 1 { "" } else { "s" }
            ),
        )
        .with_details(Value::Array(violations)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_object_schema() {
        let spec = define_tool("read_file", "Read a file", obj_schema()).unwrap();
        assert_eq!(spec.name(), "read_file");
        assert!(spec.parse_args(r#"{"path":"a.txt","limit":3}"#).is_ok());
    }

    #[test]
    fn rejects_non_object_top_level() {
        let err = define_tool("t", "d", json!({"type": "array"})).unwrap_err();
        assert_eq!(err.tool, "t");
        assert!(err.reason.contains("\"object\""), "{}", err.reason);
        let err = define_tool("t", "d", json!({"properties": {}})).unwrap_err();
        assert!(err.reason.contains("type"), "{}", err.reason);
        let err = define_tool("t", "d", json!(true)).unwrap_err();
        assert!(err.reason.contains("JSON object"), "{}", err.reason);
    }

    #[test]
    fn rejects_invalid_schema() {
        let err = define_tool(
            "t",
            "d",
            json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}),
        )
        .unwrap_err();
        assert!(
            err.reason.starts_with("invalid input schema"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn rejects_remote_ref() {
        let err = define_tool(
            "t",
            "d",
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
        )
        .unwrap_err();
        assert!(
            err.reason.contains("invalid input schema"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn rejects_missing_local_ref() {
        let err = define_tool(
            "t",
            "d",
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
        )
        .unwrap_err();
        assert!(
            err.reason.contains("invalid input schema"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn accepts_resolvable_local_ref() {
        let spec = define_tool(
            "t",
            "d",
            json!({"type": "object", "$defs": {"p": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/p"}}}),
        )
        .unwrap();
        assert!(spec.parse_args(r#"{"a": 3}"#).is_err());
        assert!(spec.parse_args(r#"{"a": "x"}"#).is_ok());
    }

    #[test]
    fn rejects_bad_names() {
        assert!(define_tool("", "d", obj_schema()).is_err());
        assert!(define_tool("has space", "d", obj_schema()).is_err());
        assert!(define_tool("x".repeat(65), "d", obj_schema()).is_err());
        assert!(define_tool("ok-name_1", "d", obj_schema()).is_ok());
    }

    #[test]
    fn lists_every_violation_with_pointer() {
        let spec = define_tool("read_file", "Read a file", obj_schema()).unwrap();
        let err = spec.parse_args(r#"{"limit": 0, "extra": 1}"#).unwrap_err();
        assert_eq!(err.stage, Stage::Parameters);
        assert_eq!(err.code, "invalid_arguments");
        let details = err.details.unwrap();
        let pointers: Vec<&str> = details
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["pointer"].as_str().unwrap())
            .collect();
        assert!(pointers.contains(&"/limit"), "{pointers:?}");
        assert!(pointers.contains(&"/"), "{pointers:?}");
        assert!(pointers.len() >= 3, "{pointers:?}");
    }

    #[test]
    fn malformed_json_is_parameters_error() {
        let spec = define_tool("read_file", "Read a file", obj_schema()).unwrap();
        for bad in ["{", "[1,2", "{\"path\": }", "\u{0}", "nul\u{0}l"] {
            let err = spec.parse_args(bad).unwrap_err();
            assert_eq!(err.stage, Stage::Parameters, "{bad:?}");
            assert_eq!(err.code, "malformed_arguments");
        }
        // Valid JSON that is not an object is a schema violation, not a panic.
        let err = spec.parse_args("[1]").unwrap_err();
        assert_eq!(err.code, "invalid_arguments");
    }
}
