//! A stored message as people read it: its text and the tool calls it asked for, decoded from the
//! content the store keeps (provider-neutral `{"text"}` or a provider message exactly as
//! received). `aibuddy runs show` and the window's run view both ask here, so they agree.

use aibuddy_provider::Message;
use aibuddy_store::MessageRecord;
use serde_json::Value;

/// A tool call an assistant message asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedCall {
    pub tool_call_id: String,
    pub tool: String,
    /// The arguments as the model sent them (`null` when only the store's record names the call).
    pub input: Value,
}

/// The text (text blocks joined) and the tool calls of message `m`. Content that is not JSON is
/// its own text; JSON that is neither shape has no text. Calls the store records for the
/// message but the content does not show are listed too (with `null` input).
pub fn text_and_calls(m: &MessageRecord) -> (String, Vec<RequestedCall>) {
    let (text, mut calls) = decode(&m.content);
    // The content keeps the provider's call ids; the store names a call `<run id>:<provider id>`
    // (`scoped_call_id`), as its result and the live run's events do: the call is listed once,
    // by its stored id.
    for call in &mut calls {
        let scoped = aibuddy_store::scoped_call_id(&m.run_id, &call.tool_call_id);
        if m.requested_calls.iter().any(|r| r.tool_call_id == scoped) {
            call.tool_call_id = scoped;
        }
    }
    for requested in &m.requested_calls {
        if !calls
            .iter()
            .any(|c| c.tool_call_id == requested.tool_call_id)
        {
            calls.push(RequestedCall {
                tool_call_id: requested.tool_call_id.clone(),
                tool: requested.tool.clone(),
                input: Value::Null,
            });
        }
    }
    (text, calls)
}

fn decode(content: &str) -> (String, Vec<RequestedCall>) {
    let Ok(value) = serde_json::from_str::<Value>(content) else {
        return (content.to_owned(), Vec::new());
    };
    if let Some(text) = value.get("text").and_then(Value::as_str) {
        return (text.to_owned(), Vec::new());
    }
    match serde_json::from_value::<Message>(value) {
        Ok(message) => {
            let calls = message
                .tool_calls()
                .map(|(id, tool, input, _)| RequestedCall {
                    tool_call_id: id.to_owned(),
                    tool: tool.to_owned(),
                    input: input.clone(),
                })
                .collect();
            (message.text(), calls)
        }
        Err(_) => (String::new(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutral_text_raw_text_and_unknown_json() {
        assert_eq!(decode(r#"{"text":"hi"}"#).0, "hi");
        assert_eq!(decode("not json").0, "not json");
        assert_eq!(decode(r#"{"other":1}"#), (String::new(), Vec::new()));
    }

    #[test]
    fn a_call_the_store_names_by_run_is_listed_once_by_its_stored_id() {
        let mut m = Message::assistant_text("looking");
        for id in ["c1", "c2"] {
            m.content.push(aibuddy_provider::ContentBlock::ToolUse {
                id: id.into(),
                name: "ls".into(),
                input: serde_json::json!({"path": id}),
                kind: Default::default(),
            });
        }
        let recorded = |id: &str, tool: &str| aibuddy_store::RequestedCall {
            tool_call_id: id.into(),
            tool: tool.into(),
        };
        let record = MessageRecord {
            message_id: "m1".into(),
            run_id: "r1".into(),
            seq: 2,
            role: aibuddy_store::MessageRole::Assistant,
            content: serde_json::to_string(&m).unwrap(),
            provider_kind: Some("anthropic".into()),
            created_at_ms: 0,
            usage: None,
            requested_calls: vec![recorded("r1:c1", "ls"), recorded("r1:c3", "grep")],
            tool_call_id: None,
            result: None,
        };
        let (_, calls) = text_and_calls(&record);
        let ids: Vec<(&str, &Value)> = calls
            .iter()
            .map(|c| (c.tool_call_id.as_str(), &c.input))
            .collect();
        // c1 by its stored id, with its input; c2 as the content has it (no record of it); the
        // recorded c3 the content does not show, without input.
        assert_eq!(
            ids,
            vec![
                ("r1:c1", &serde_json::json!({"path": "c1"})),
                ("c2", &serde_json::json!({"path": "c2"})),
                ("r1:c3", &Value::Null),
            ]
        );
    }

    #[test]
    fn a_provider_message_gives_its_text_and_calls() {
        let mut m = Message::assistant_text("looking");
        m.content.push(aibuddy_provider::ContentBlock::ToolUse {
            id: "c1".into(),
            name: "ls".into(),
            input: serde_json::json!({"path": "."}),
            kind: Default::default(),
        });
        let (text, calls) = decode(&serde_json::to_string(&m).unwrap());
        assert_eq!(text, "looking");
        assert_eq!(
            calls,
            vec![RequestedCall {
                tool_call_id: "c1".into(),
                tool: "ls".into(),
                input: serde_json::json!({"path": "."}),
            }]
        );
    }
}
