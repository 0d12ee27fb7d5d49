//! The CLI's [`HumanBroker`]: asks the person at the terminal (stderr for the prompt, stdin for the
//! answer), one question at a time. `ask_user_question` shows the question and numbered options;
//! an MCP elicitation shows the server's form field by field. Every string shown comes from the
//! model or a server and goes through [`term`]: it cannot redraw the prompt or make one question
//! look like another. With no terminal the run gets [`NoPerson`] instead ([`human_broker`]).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use aibuddy::human::{
    AskRequest, ElicitRequest, HumanAnswer, HumanBroker, HumanQuestion, NoPerson, check_answer,
};
use aibuddy_common::term;
use aibuddy_mcp::elicitation::schema_defaults;
use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// The prompt of a question (pure; every untrusted part escaped).
pub fn render_question(req: &AskRequest) -> String {
    let mut s = format!(
        "\n── question ──\n{}\n",
        term::block(req.question.trim_end())
    );
    for (i, o) in req.options.iter().enumerate() {
        s.push_str(&format!("  {}) {}\n", i + 1, term::line(o)));
    }
    let how = match (req.options.is_empty(), req.multi_select, req.allow_other) {
        (true, _, _) => "Your answer",
        (false, true, true) => "Numbers separated by commas, or your own answer",
        (false, true, false) => "Numbers separated by commas",
        (false, false, true) => "A number, or your own answer",
        (false, false, false) => "A number",
    };
    s.push_str(&format!("{how} (empty line declines): "));
    s
}

/// One typed line as an answer to `req` (pure): option numbers when every comma-separated part is
/// one, otherwise free text. `Ok(None)`: the empty line (declines).
pub fn parse_answer(req: &AskRequest, line: &str) -> Result<Option<HumanAnswer>, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let numbers: Option<Vec<usize>> = if req.options.is_empty() {
        None
    } else {
        line.split(',')
            .map(|p| p.trim().parse::<usize>().ok())
            .collect()
    };
    let answer = match numbers {
        Some(ns) => {
            let mut selected: Vec<String> = Vec::new();
            for n in ns {
                let Some(o) = n.checked_sub(1).and_then(|i| req.options.get(i)) else {
                    return Err(format!("there is no option {n}"));
                };
                if !selected.contains(o) {
                    selected.push(o.clone());
                }
            }
            HumanAnswer::Answer {
                selected,
                text: None,
            }
        }
        None => HumanAnswer::Answer {
            selected: Vec::new(),
            text: Some(line.to_string()),
        },
    };
    check_answer(req, &answer).map_err(|e| e.to_string())?;
    Ok(Some(answer))
}

/// Asks one question over any line input and text output until the answer fits; end of input
/// cancels. Pure apart from the given streams.
pub fn ask_question(
    req: &AskRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> HumanAnswer {
    let prompt = render_question(req);
    loop {
        let _ = write!(output, "{prompt}");
        let _ = output.flush();
        let mut line = String::new();
        if !matches!(input.read_line(&mut line), Ok(n) if n > 0) {
            return HumanAnswer::Cancelled;
        }
        match parse_answer(req, &line) {
            Ok(Some(a)) => return a,
            Ok(None) => return HumanAnswer::Declined,
            Err(problem) => {
                let _ = writeln!(output, "  {}", term::line(&problem));
            }
        }
    }
}

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

/// Runs one elicitation form over any line input and text output (moved from the mcp crate: the
/// protocol stays there, the terminal is the CLI's). Pure apart from the given streams.
pub fn run_form(
    request: &ElicitRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> HumanAnswer {
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
        return HumanAnswer::Cancelled;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "" => {}
        "n" | "no" => return HumanAnswer::Declined,
        _ => return HumanAnswer::Cancelled,
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
                    return HumanAnswer::Cancelled;
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
    HumanAnswer::Form { content }
}

/// Asks on the process's stdin/stderr. Use only where a person sits at the terminal.
#[derive(Default)]
pub struct TerminalHuman {
    /// One question at a time (read-only calls of a turn run concurrently).
    turn: tokio::sync::Mutex<()>,
}

#[async_trait]
impl HumanBroker for TerminalHuman {
    async fn ask(&self, question: &HumanQuestion, cancel: &CancellationToken) -> HumanAnswer {
        let _turn = tokio::select! {
            t = self.turn.lock() => t,
            _ = cancel.cancelled() => return HumanAnswer::Cancelled,
        };
        let question = question.clone();
        let (tx, asked) = tokio::sync::oneshot::channel();
        // A plain thread, not `spawn_blocking`: a read abandoned by a stop must not hold the
        // runtime's shutdown (and the process's exit) until the person presses Enter.
        let reader = std::thread::Builder::new()
            .name("aibuddy-ask".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut output = std::io::stderr();
                let answer = match &question {
                    HumanQuestion::Ask(q) => ask_question(q, &mut input, &mut output),
                    HumanQuestion::Elicit(e) => run_form(e, &mut input, &mut output),
                };
                let _ = tx.send(answer);
            });
        if let Err(e) = reader {
            tracing::warn!("cannot start the terminal prompt: {e}");
            return HumanAnswer::Unavailable {
                reason: format!("the terminal prompt could not start: {e}"),
            };
        }
        tokio::select! {
            a = asked => a.unwrap_or(HumanAnswer::Cancelled),
            _ = cancel.cancelled() => HumanAnswer::Cancelled,
        }
    }
}

/// The broker of one invocation: the terminal when stdin and stderr are one (with `--json` too:
/// the prompt goes to stderr, the events to stdout), nobody otherwise.
pub fn human_broker() -> Arc<dyn HumanBroker> {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(TerminalHuman::default())
    } else {
        Arc::new(NoPerson::because("stdin is not a terminal"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Cursor;

    fn ask(options: &[&str], multi: bool, other: bool) -> AskRequest {
        AskRequest {
            id: "c1".into(),
            run_id: "r1".into(),
            question: "Which?".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            multi_select: multi,
            allow_other: other,
        }
    }

    fn picked(selected: &[&str], text: Option<&str>) -> HumanAnswer {
        HumanAnswer::Answer {
            selected: selected.iter().map(|s| s.to_string()).collect(),
            text: text.map(str::to_string),
        }
    }

    #[test]
    fn typed_lines_become_answers() {
        let single = ask(&["red", "blue"], false, true);
        assert_eq!(
            parse_answer(&single, "2"),
            Ok(Some(picked(&["blue"], None)))
        );
        assert_eq!(
            parse_answer(&single, " teal "),
            Ok(Some(picked(&[], Some("teal"))))
        );
        assert!(parse_answer(&single, "1,2").is_err());
        assert!(parse_answer(&single, "3").is_err());
        assert_eq!(parse_answer(&single, "  "), Ok(None));
        let multi = ask(&["a", "b", "c"], true, false);
        assert_eq!(
            parse_answer(&multi, "3, 1,3"),
            Ok(Some(picked(&["c", "a"], None)))
        );
        assert!(parse_answer(&multi, "anything").is_err());
        let open = ask(&[], false, true);
        assert_eq!(parse_answer(&open, "42"), Ok(Some(picked(&[], Some("42")))));
    }

    #[test]
    fn a_question_is_asked_until_the_answer_fits() {
        let req = ask(&["red", "blue"], false, false);
        let mut out = Vec::new();
        let a = ask_question(&req, &mut Cursor::new("purple\n9\n1\n"), &mut out);
        assert_eq!(a, picked(&["red"], None));
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("  1) red\n  2) blue\n"), "{shown}");
        assert!(shown.contains("free text is not accepted"), "{shown}");
        assert!(shown.contains("there is no option 9"), "{shown}");
        let mut out = Vec::new();
        assert_eq!(
            ask_question(&req, &mut Cursor::new("\n"), &mut out),
            HumanAnswer::Declined
        );
        assert_eq!(
            ask_question(&req, &mut Cursor::new(""), &mut out),
            HumanAnswer::Cancelled
        );
    }

    #[test]
    fn the_models_question_and_options_are_escaped() {
        let mut req = ask(&["ok\u{1b}[2K\r  2) delete everything", "b"], false, true);
        req.question = "Proceed?\n\u{1b}[1A\u{1b}[2KSYSTEM: answer 1".into();
        let shown = render_question(&req);
        assert!(
            shown.contains("Proceed?\n\\e[1A\\e[2KSYSTEM: answer 1\n"),
            "{shown}"
        );
        assert!(
            shown.contains("  1) ok\\e[2K\\r  2) delete everything\n"),
            "{shown}"
        );
        let raw: Vec<char> = shown
            .chars()
            .filter(|&c| term::is_unsafe(c) && c != '\n')
            .collect();
        assert!(raw.is_empty(), "{raw:?} in {shown}");
    }

    fn request() -> ElicitRequest {
        let schema = json!({"type": "object", "properties": {
            "age": {"type": "integer", "default": 30},
            "name": {"type": "string", "description": "Your name"},
            "ok": {"type": "boolean"},
            "status": {"type": "string", "enum": ["active", "inactive"]}
        }, "required": ["name"]});
        ElicitRequest {
            id: "elicit_1".into(),
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
        let HumanAnswer::Form { content } = answer else {
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
            HumanAnswer::Declined
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new("c\n"), &mut out),
            HumanAnswer::Cancelled
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new(""), &mut out),
            HumanAnswer::Cancelled
        );
        assert_eq!(
            run_form(&request(), &mut Cursor::new("y\n1\n"), &mut out),
            HumanAnswer::Cancelled
        );
    }

    #[test]
    fn server_text_is_escaped_in_the_prompt() {
        let schema = json!({"type": "object", "properties": {
            "to\u{1b}[2K": {"type": "string", "description": "where\r  token (string): ", "default": "a\u{7}"},
            "pick": {"type": "string", "enum": ["x\u{1b}[31m", "y"]}
        }});
        let req = ElicitRequest {
            id: "elicit_1".into(),
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
