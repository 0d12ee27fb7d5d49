//! `ask_user_question`: the model asks the person a question and waits for the answer.
//!
//! Arguments (the schema below is the contract):
//! - `question` (string, required): the question, 1..=4000 characters;
//! - `options` (array of distinct non-empty strings, at most 20, optional): choices to pick from;
//! - `multi_select` (bool, default false): several options may be picked (needs `options`);
//! - `allow_other` (bool, default true): free text is accepted besides the options. With no
//!   options the answer is always free text, so `allow_other: false` then needs `options`.
//!
//! The question goes to the run's [`HumanBroker`](crate::human::HumanBroker) (found on the
//! [`HumanDesk`] by run id): the CLI asks at the terminal, the desktop shows a dialog. With nobody
//! to ask, the call fails at Execution with `no_person` and [`NO_PERSON`], which the model can act
//! on. Read-only (it changes nothing), never deferred (a core tool), always available.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::human::{
    AskRequest, HumanAnswer, HumanDesk, HumanQuestion, NO_PERSON, answer_json, check_answer,
    describe_answer,
};
use crate::registry::{
    CallContext, Compaction, RawOutput, Risk, Source, ToolConfig, ToolConfigMeta, ToolDef,
    ToolHandler,
};

pub const KEY: &str = "ask_user_question";
pub const TOOL_NAME: &str = "ask_user_question";
/// Longest question accepted.
pub const MAX_QUESTION_CHARS: usize = 4000;
/// Most options accepted.
pub const MAX_OPTIONS: usize = 20;

/// The config; asks through the brokers attached to `desk` (the plane binds its own; the default
/// desk has nobody attached, so the person cannot be reached).
pub struct AskUserConfig {
    desk: Arc<HumanDesk>,
}

impl Default for AskUserConfig {
    fn default() -> Self {
        Self::new(Arc::new(HumanDesk::default()))
    }
}

impl AskUserConfig {
    pub fn new(desk: Arc<HumanDesk>) -> Self {
        Self { desk }
    }
}

pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(
        KEY,
        "Ask the person",
        "human",
        Risk::ReadOnly,
        false,
        &[TOOL_NAME],
    )
}

/// The tool's input schema.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS,
                "description": "The question, self-contained: the person sees only this and the options"},
            "options": {"type": "array", "maxItems": MAX_OPTIONS, "uniqueItems": true,
                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                "description": "Choices to pick from (omit for a free-text answer)"},
            "multi_select": {"type": "boolean", "default": false,
                "description": "Several options may be picked"},
            "allow_other": {"type": "boolean", "default": true,
                "description": "Accept a free-text answer besides the options"}
        },
        "required": ["question"],
        "additionalProperties": false
    })
}

impl ToolConfig for AskUserConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn compaction(&self) -> Compaction {
        Compaction::None
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let spec = define_tool(
            TOOL_NAME,
            "Ask the person a question and wait for the answer. Use it only when you cannot \
proceed well without their decision or knowledge (a preference, a missing fact, a choice between \
approaches); otherwise act on your best judgement. Offer `options` when the answer is one of a few \
choices.",
            input_schema(),
        )?;
        Ok(vec![ToolDef {
            spec,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(AskHandler {
                desk: self.desk.clone(),
            }),
        }])
    }
}

/// The question of a call from its (schema-checked) arguments. Pure.
pub fn ask_request(call_id: &str, run_id: &str, args: &Value) -> Result<AskRequest, ToolError> {
    let question = args["question"].as_str().unwrap_or_default().trim();
    if question.is_empty() {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "`question` must not be empty",
        ));
    }
    let options: Vec<String> = args["options"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    if options.iter().any(String::is_empty) {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "every option must have text",
        ));
    }
    let multi_select = args["multi_select"].as_bool().unwrap_or(false);
    let allow_other = args["allow_other"].as_bool().unwrap_or(true);
    if options.is_empty() && multi_select {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "`multi_select` needs `options`",
        ));
    }
    if options.is_empty() && !allow_other {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "`allow_other: false` needs `options` (otherwise nothing could be answered)",
        ));
    }
    Ok(AskRequest {
        id: call_id.to_string(),
        run_id: run_id.to_string(),
        question: question.to_string(),
        options,
        multi_select,
        allow_other,
    })
}

struct AskHandler {
    desk: Arc<HumanDesk>,
}

#[async_trait]
impl ToolHandler for AskHandler {
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let req = ask_request(&ctx.call_id, &ctx.run_id, args)?;
        let Some(broker) = self.desk.broker(&ctx.run_id) else {
            return Err(ToolError::execution("no_person", NO_PERSON));
        };
        let answer = broker
            .ask(&HumanQuestion::Ask(req.clone()), &ctx.cancel)
            .await;
        match &answer {
            HumanAnswer::Unavailable { reason } => {
                return Err(ToolError::execution("no_person", reason.clone()));
            }
            HumanAnswer::Cancelled => {
                return Err(ToolError::execution(
                    "cancelled",
                    "the question was withdrawn before the person answered (stop or dialog closed)",
                ));
            }
            _ => {}
        }
        check_answer(&req, &answer)
            .map_err(|e| ToolError::execution("invalid_answer", format!("the answer: {e}")))?;
        let stored = answer_json(&answer).unwrap_or(Value::Null);
        Ok(RawOutput::json(json!({
            "question": req.question,
            "options": req.options,
            "multi_select": req.multi_select,
            "answer": stored,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_text(&raw.value["answer"])
    }
}

/// The model projection of an answer. Pure.
pub fn model_text(answer: &Value) -> String {
    if answer.get("declined").and_then(Value::as_bool) == Some(true) {
        return "The person declined to answer; proceed with your best judgement or stop."
            .to_string();
    }
    format!("The person answered: {}", describe_answer(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_a_question() {
        let r = ask_request(
            "c1",
            "r1",
            &json!({"question": " Which color? ", "options": ["red", " blue "], "multi_select": true}),
        )
        .unwrap();
        assert_eq!(r.question, "Which color?");
        assert_eq!(r.options, vec!["red", "blue"]);
        assert!(r.multi_select && r.allow_other);
        let open = ask_request("c1", "r1", &json!({"question": "Why?"})).unwrap();
        assert!(open.options.is_empty() && !open.multi_select && open.allow_other);
        for bad in [
            json!({"question": "  "}),
            json!({"question": "q", "multi_select": true}),
            json!({"question": "q", "allow_other": false}),
            json!({"question": "q", "options": [" "]}),
        ] {
            let e = ask_request("c1", "r1", &bad).unwrap_err();
            assert_eq!(e.code, "invalid_arguments", "{bad}");
        }
    }

    #[test]
    fn the_model_reads_the_answer() {
        assert_eq!(
            model_text(&json!({"selected": ["a", "b"], "text": null})),
            "The person answered: a, b"
        );
        assert!(model_text(&json!({"declined": true})).contains("declined"));
    }

    #[test]
    fn the_schema_is_a_valid_tool_definition() {
        let defs = AskUserConfig::default().tools().unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name(), TOOL_NAME);
        assert_eq!(defs[0].risk, Risk::ReadOnly);
        assert_eq!(defs[0].source, Source::Core);
    }
}
