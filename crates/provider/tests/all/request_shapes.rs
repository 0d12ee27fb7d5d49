//! Pure request builders and stream parsers, checked on exact JSON.

use aibuddy_provider::wire::{StreamParser, anthropic, chat, responses};
use aibuddy_provider::{
    CallKind, ContentBlock, Message, ModelRequest, Presentation, ProviderEvent, ProviderKind,
    RawContent, ResultBlock, Role, ToolSpec,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn schema() -> Value {
    json!({"type": "object", "properties": {"q": {"type": "string"}}})
}

fn req(presentation: Presentation, kind_of_search: CallKind) -> ModelRequest {
    let tool = |name: &str, deferred| ToolSpec {
        name: name.into(),
        description: format!("d-{name}"),
        input_schema: schema(),
        deferred,
    };
    let mut r = ModelRequest::new(
        "m",
        vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: "searching".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "tool_search".into(),
                        input: json!({"q": "w"}),
                        kind: kind_of_search,
                    },
                ],
                raw: None,
            },
            Message::tool_results(vec![ContentBlock::ToolResult {
                tool_use_id: "c1".into(),
                content: vec![ResultBlock::ToolReference {
                    tool_name: "weather".into(),
                }],
                is_error: false,
            }]),
        ],
    );
    r.system = "sys".into();
    r.tools = vec![tool("tool_search", false), tool("weather", true)];
    r.presentation = presentation;
    r.max_tokens = 100;
    r
}

#[test]
fn anthropic_native_exact() {
    let got =
        anthropic::build_request(&req(Presentation::Native, CallKind::Function), true).unwrap();
    assert_eq!(
        got,
        json!({
            "model": "m", "max_tokens": 100, "system": "sys", "stream": true,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "searching"},
                    {"type": "tool_use", "id": "c1", "name": "tool_search", "input": {"q": "w"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                    "content": [{"type": "tool_reference", "tool_name": "weather"}]}]}],
            "tools": [
                {"name": "tool_search", "description": "d-tool_search", "input_schema": schema()},
                {"name": "weather", "description": "d-weather", "input_schema": schema(), "defer_loading": true}]
        })
    );
}

#[test]
fn anthropic_active_tools_exact() {
    let got = anthropic::build_request(&req(Presentation::ActiveTools, CallKind::Function), false)
        .unwrap();
    assert_eq!(
        got["tools"],
        json!([{"name": "tool_search", "description": "d-tool_search", "input_schema": schema()}])
    );
    assert_eq!(
        got["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": "Tools found (now available): weather"})
    );
    assert!(got.get("stream").is_none());
}

#[test]
fn responses_native_exact() {
    let got =
        responses::build_request(&req(Presentation::Native, CallKind::ToolSearch), true).unwrap();
    assert_eq!(
        got,
        json!({
            "model": "m", "instructions": "sys", "max_output_tokens": 100, "store": false,
            "include": ["reasoning.encrypted_content"], "stream": true,
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "searching"}]},
                {"type": "tool_search_call", "call_id": "c1", "execution": "client", "status": "completed", "arguments": {"q": "w"}},
                {"type": "tool_search_output", "call_id": "c1", "execution": "client", "status": "completed",
                    "tools": [{"type": "function", "name": "weather", "description": "d-weather", "parameters": schema(), "strict": false, "defer_loading": true}]}],
            "tools": [
                {"type": "tool_search", "execution": "client", "description": "d-tool_search", "parameters": schema()},
                {"type": "function", "name": "weather", "description": "d-weather", "parameters": schema(), "strict": false, "defer_loading": true}]
        })
    );
}

#[test]
fn responses_active_tools_exact() {
    let got = responses::build_request(&req(Presentation::ActiveTools, CallKind::Function), true)
        .unwrap();
    assert_eq!(
        got["tools"],
        json!([{"type": "function", "name": "tool_search", "description": "d-tool_search", "parameters": schema(), "strict": false}])
    );
    assert_eq!(
        got["input"][2],
        json!({"type": "function_call", "call_id": "c1", "name": "tool_search", "arguments": "{\"q\":\"w\"}"})
    );
    assert_eq!(
        got["input"][3],
        json!({"type": "function_call_output", "call_id": "c1", "output": "Tools found (now available): weather"})
    );
}

#[test]
fn chat_exact() {
    let got =
        chat::build_request(&req(Presentation::ActiveTools, CallKind::Function), true).unwrap();
    assert_eq!(
        got,
        json!({
            "model": "m", "max_tokens": 100, "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "searching", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "tool_search", "arguments": "{\"q\":\"w\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Tools found (now available): weather"}],
            "tools": [{"type": "function", "function": {"name": "tool_search", "description": "d-tool_search", "parameters": schema()}}]
        })
    );
}

#[test]
fn raw_content_is_replayed_only_to_its_own_format() {
    let raw_blocks = vec![
        json!({"type": "thinking", "thinking": "hmm", "signature": "sig"}),
        json!({"type": "text", "text": "yo"}),
    ];
    let m = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Opaque {
                id: None,
                block: raw_blocks[0].clone(),
            },
            ContentBlock::Text { text: "yo".into() },
        ],
        raw: Some(RawContent {
            format: ProviderKind::Anthropic,
            blocks: raw_blocks.clone(),
        }),
    };
    let mut r = ModelRequest::new(
        "m",
        vec![Message::user_text("a"), m, Message::user_text("b")],
    );
    r.max_tokens = 10;
    let a = anthropic::build_request(&r, false).unwrap();
    assert_eq!(a["messages"][1]["content"], Value::Array(raw_blocks));
    let c = chat::build_request(&r, false).unwrap();
    assert_eq!(
        c["messages"][1],
        json!({"role": "assistant", "content": "yo"})
    );
}

fn feed(p: &mut dyn StreamParser, events: &[(&str, Value)]) -> Vec<ProviderEvent> {
    let mut out = Vec::new();
    for (name, data) in events {
        out.extend(p.on_event(name, &data.to_string()).unwrap());
    }
    out
}

#[test]
fn anthropic_parser_keeps_thinking_signature_and_handles_empty_partial_json() {
    let mut p = anthropic::Parser::new();
    let ev = feed(
        &mut p,
        &[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 7}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "let me "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ],
    );
    let Some(ProviderEvent::MessageEnd { message }) = ev.last() else {
        panic!("{ev:?}")
    };
    assert_eq!(
        message.raw.as_ref().unwrap().blocks,
        vec![
            json!({"type": "thinking", "thinking": "let me think", "signature": "EqQB"}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}),
        ]
    );
    assert!(ev.contains(&ProviderEvent::ToolCallEnd {
        id: "toolu_1".into(),
        name: "t".into(),
        input: json!({})
    }));
    assert!(ev.iter().any(
        |e| matches!(e, ProviderEvent::Usage(u) if u.input_tokens == 7 && u.output_tokens == 3)
    ));
    assert!(p.is_done());
}

#[test]
fn invalid_argument_json_is_kept_as_text_for_the_parameters_stage() {
    let mut p = chat::Parser::new();
    let ev = feed(
        &mut p,
        &[
            (
                "message",
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{not json"}}]}}]}),
            ),
            (
                "message",
                json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            ),
        ],
    );
    assert!(
        ev.iter()
            .all(|e| !matches!(e, ProviderEvent::MessageEnd { .. }))
    );
    let end = p.on_end().unwrap();
    assert!(end.contains(&ProviderEvent::ToolCallEnd {
        id: "c".into(),
        name: "t".into(),
        input: json!("{not json")
    }));
}

#[test]
fn responses_failed_event_is_a_typed_stream_error() {
    let mut p = responses::Parser::new();
    let e = p.on_event("response.failed", &json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}}).to_string()).unwrap_err();
    assert!(e.is_retryable(), "{e:?}");
    assert_eq!(e.to_string(), "provider stream error (server_error): boom");
}

/// A client tool search's note (what its references cannot say) on the native presentation: a
/// text block beside the references in the Anthropic `tool_result`; on Responses, where
/// `tool_search_output` has no text field, a user message of ours after the outputs, naming the
/// call, before the person's own text.
#[test]
fn native_search_notes_beside_the_references() {
    let note = "These MCP servers are not available now: \"slow\"";
    let with_note = |kind| {
        let mut r = req(Presentation::Native, kind);
        r.messages[2] = Message::tool_results(vec![
            ContentBlock::ToolResult {
                tool_use_id: "c1".into(),
                content: vec![
                    ResultBlock::ToolReference {
                        tool_name: "weather".into(),
                    },
                    ResultBlock::Text { text: note.into() },
                ],
                is_error: false,
            },
            ContentBlock::Text {
                text: "[The person approved x.]".into(),
            },
        ]);
        r
    };
    let a = anthropic::build_request(&with_note(CallKind::Function), false).unwrap();
    assert_eq!(
        a["messages"][2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "c1", "content": [
            {"type": "tool_reference", "tool_name": "weather"}, {"type": "text", "text": note}]},
            {"type": "text", "text": "[The person approved x.]"}])
    );
    let r = responses::build_request(&with_note(CallKind::ToolSearch), false).unwrap();
    let input = r["input"].as_array().unwrap();
    assert_eq!(input[3]["type"], "tool_search_output");
    assert_eq!(input[3]["tools"][0]["name"], "weather");
    assert!(input[3].get("text").is_none() && input[3].get("output").is_none());
    assert_eq!(
        input[4],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": responses::search_note("c1", note)},
            {"type": "input_text", "text": "[The person approved x.]"}]})
    );
    assert_eq!(input.len(), 5);
}
