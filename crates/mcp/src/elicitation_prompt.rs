//! A line-based elicitation broker for terminals (the CLI): shows the server's message, asks
//! whether to answer, then asks each field with its type and default. An empty answer keeps the
//! default (or leaves an optional field out); end of input cancels.
//!
//! Everything shown comes from the server (its name as configured, the message, field names,
//! descriptions, defaults, enum choices) and is escaped with [`aibuddy_common::term`]: a server
//! cannot redraw the prompt or make one question look like another.

use std::io::{BufRead, Write};

use aibuddy_common::term;
use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::elicitation::{
    ElicitationBroker, ElicitationRequest, ElicitationResponse, schema_defaults,
};

/// Turns one typed answer into a JSON value for a property schema. `Ok(None)`: left empty. Pure.
pub fn coerce_answer(prop: &Value, answer: &str) -> Result<Option<Value>, String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return Ok(None);
    }
    if let Some(options) = prop.get("enum").and_then(Value::as_array) {
        let allowed: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
        return if allowed.contains(&answer) {
            Ok(Some(Value::String(answer.to_owned())))
        } else {
            Err(format!(
                "choose one of: {}",
                term::line(&allowed.join(", "))
            ))
        };
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("integer") => answer
            .parse::<i64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| "expected a whole number".to_owned()),
        Some("number") => match answer.parse::<f64>() {
            Ok(n) if n.is_finite() => serde_json::Number::from_f64(n)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| "expected a number".to_owned()),
            _ => Err("expected a number".to_owned()),
        },
        Some("boolean") => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
            "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
            _ => Err("expected yes or no".to_owned()),
        },
        _ => Ok(Some(Value::String(answer.to_owned()))),
    }
}

/// Runs one form over any line input and text output. Pure apart from the given streams.
pub fn run_form(
    request: &ElicitationRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> ElicitationResponse {
    let mut line = String::new();
    let read = |line: &mut String, input: &mut dyn BufRead| -> bool {
        line.clear();
        matches!(input.read_line(line), Ok(n) if n > 0)
    };
    let _ = writeln!(
        output,
        "MCP server \"{}\" asks: {}",
        term::line(&request.server),
        term::block(&request.message)
    );
    let _ = write!(output, "Answer? [y]es / [n]o (decline) / [c]ancel: ");
    let _ = output.flush();
    if !read(&mut line, input) {
        return ElicitationResponse::Cancel;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "" => {}
        "n" | "no" => return ElicitationResponse::Decline,
        _ => return ElicitationResponse::Cancel,
    }
    let defaults = schema_defaults(&request.schema);
    let required: Vec<&str> = request
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(props) = request.schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let kind = term::line(prop.get("type").and_then(Value::as_str).unwrap_or("string"));
            let default = defaults
                .get(name)
                .map(|d| format!(" [{}]", term::line(&d.to_string())))
                .unwrap_or_default();
            let description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!(" - {}", term::line(d)))
                .unwrap_or_default();
            let shown_name = term::line(name);
            loop {
                let _ = write!(output, "  {shown_name} ({kind}){description}{default}: ");
                let _ = output.flush();
                if !read(&mut line, input) {
                    return ElicitationResponse::Cancel;
                }
                match coerce_answer(prop, &line) {
                    Ok(Some(value)) => {
                        content.insert(name.clone(), value);
                        break;
                    }
                    Ok(None)
                        if required.contains(&name.as_str()) && !defaults.contains_key(name) =>
                    {
                        let _ = writeln!(output, "    required");
                    }
                    Ok(None) => break,
                    Err(problem) => {
                        let _ = writeln!(output, "    {problem}");
                    }
                }
            }
        }
    }
    ElicitationResponse::Accept(content)
}

/// Asks on the process's stdin/stderr. Use only where a person sits at the terminal.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalElicitation;

#[async_trait]
impl ElicitationBroker for TerminalElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        let answered = tokio::task::spawn_blocking(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut output = std::io::stderr();
            run_form(&request, &mut input, &mut output)
        })
        .await;
        answered.unwrap_or(ElicitationResponse::Cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Cursor;

    fn request() -> ElicitationRequest {
        let schema = json!({"type": "object", "properties": {
            "age": {"type": "integer", "default": 30},
            "name": {"type": "string", "description": "Your name"},
            "ok": {"type": "boolean"},
            "status": {"type": "string", "enum": ["active", "inactive"]}
        }, "required": ["name"]});
        ElicitationRequest {
            server: "s".into(),
            message: "Who?".into(),
            defaults: schema_defaults(&schema),
            schema,
        }
    }

    #[test]
    fn coercion_by_type() {
        assert_eq!(
            coerce_answer(&json!({"type": "integer"}), " 42 "),
            Ok(Some(json!(42)))
        );
        assert!(coerce_answer(&json!({"type": "integer"}), "4.5").is_err());
        assert_eq!(
            coerce_answer(&json!({"type": "number"}), "4.5"),
            Ok(Some(json!(4.5)))
        );
        assert_eq!(
            coerce_answer(&json!({"type": "boolean"}), "Yes"),
            Ok(Some(json!(true)))
        );
        assert!(coerce_answer(&json!({"type": "boolean"}), "maybe").is_err());
        assert_eq!(
            coerce_answer(&json!({"type": "string", "enum": ["a", "b"]}), "b"),
            Ok(Some(json!("b")))
        );
        assert!(coerce_answer(&json!({"type": "string", "enum": ["a", "b"]}), "c").is_err());
        assert_eq!(coerce_answer(&json!({"type": "string"}), ""), Ok(None));
    }

    #[test]
    fn a_form_is_filled_line_by_line_retrying_bad_answers() {
        let mut input = Cursor::new("y\n\n\nAda\nperhaps\nno\nactive\n");
        let mut output = Vec::new();
        let answer = run_form(&request(), &mut input, &mut output);
        let ElicitationResponse::Accept(content) = answer else {
            panic!("{answer:?}")
        };
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "ok": false, "status": "active"})
        );
        let shown = String::from_utf8(output).unwrap();
        assert!(shown.contains("MCP server \"s\" asks: Who?"));
        assert!(shown.contains("age (integer) [30]"));
        assert!(shown.contains("name (string) - Your name"));
        assert!(shown.contains("expected yes or no"));
        assert!(shown.contains("required"));
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let mut out = Vec::new();
        assert_eq!(
            run_form(&request(), &mut Cursor::new("n\n"), &mut out),
            ElicitationResponse::Decline
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new("c\n"), &mut out),
            ElicitationResponse::Cancel
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new(""), &mut out),
            ElicitationResponse::Cancel
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new("y\n1\n"), &mut out),
            ElicitationResponse::Cancel
        );
    }

    #[test]
    fn server_text_is_escaped_in_the_prompt() {
        let schema = json!({"type": "object", "properties": {
            "to\u{1b}[2K": {"type": "string", "description": "where\r  token (string): ", "default": "a\u{7}"},
            "pick": {"type": "string", "enum": ["x\u{1b}[31m", "y"]}
        }});
        let req = ElicitationRequest {
            server: "s\u{1b}]0;title\u{7}".into(),
            message: "Send?\n\u{1b}[1A\rApprove all: yes".into(),
            defaults: schema_defaults(&schema),
            schema,
        };
        let mut out = Vec::new();
        let _ = run_form(&req, &mut Cursor::new("y\nz\nz\ny\n\n"), &mut out);
        let shown = String::from_utf8(out).unwrap();
        assert!(
            shown.contains(
                "MCP server \"s\\e]0;title\\x07\" asks: Send?\n\\e[1A\\rApprove all: yes"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("to\\e[2K (string) - where\\r  token (string):  [\"a\\u0007\"]"),
            "{shown}"
        );
        assert!(shown.contains("choose one of: x\\e[31m, y"), "{shown}");
        let raw: Vec<char> = shown
            .chars()
            .filter(|&c| term::is_unsafe(c) && c != '\n')
            .collect();
        assert!(raw.is_empty(), "{raw:?} in {shown}");
    }
}
