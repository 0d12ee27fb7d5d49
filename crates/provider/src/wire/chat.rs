//! OpenAI-compatible Chat Completions: request body, SSE stream parser, and the non-streamed
//! response (the fallback for endpoints that break streaming with tools).

use serde_json::{Map, Value, json};

use super::responses::arguments_string;
use super::usage::{CHAT, usage_of};
use super::{StreamParser, error_in_body, parse_arguments, parse_json, str_field};
use crate::error::{ProviderError, TransportKind, bounded};
use crate::event::{ProviderEvent, StopReason, Usage};
use crate::kind::ProviderKind;
use crate::model::{
    CallKind, ContentBlock, Message, RawContent, ResultBlock, Role, image_data_url, result_text,
};
use crate::request::ModelRequest;

/// The request body. Chat Completions has no native deferral: only sent (active) tools go out.
/// Images of tool results are described in text (see [`build_request_images`]).
pub fn build_request(req: &ModelRequest, stream: bool) -> Result<Value, ProviderError> {
    build_request_images(req, stream, false)
}

/// The request body; with `images`, the images of tool results follow the tool messages as one
/// user message of `image_url` parts (`data:` URLs), since tool messages take only text.
pub fn build_request_images(
    req: &ModelRequest,
    stream: bool,
    images: bool,
) -> Result<Value, ProviderError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        push_messages(&mut messages, m, images);
    }
    body.insert("messages".into(), Value::Array(messages));
    let tools: Vec<Value> = req
        .tools
        .iter()
        .filter(|t| !t.deferred)
        .map(|t| {
            json!({"type": "function", "function": {"name": t.name, "description": t.description,
                "parameters": t.input_schema}})
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("max_tokens".into(), json!(req.max_tokens));
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

fn push_messages(out: &mut Vec<Value>, m: &Message, images: bool) {
    if m.role == Role::Assistant {
        if let Some(raw) = &m.raw
            && raw.format == ProviderKind::OpenAiChat
            && raw.blocks.len() == 1
        {
            out.push(raw.blocks[0].clone());
            return;
        }
        out.push(assistant_message(m));
        return;
    }
    let mut text = String::new();
    // The image parts of the results, sent after the tool messages (`images` only).
    let mut parts: Vec<Value> = Vec::new();
    for b in &m.content {
        match b {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let mut c = if images {
                    tool_text_with_images(tool_use_id, content, &mut parts)
                } else {
                    result_text(content)
                };
                if *is_error {
                    c = format!("Error: {c}");
                }
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": c}));
            }
            ContentBlock::ToolUse { .. } | ContentBlock::Opaque { .. } => {}
        }
    }
    if parts.is_empty() {
        if !text.is_empty() {
            out.push(json!({"role": "user", "content": text}));
        }
        return;
    }
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    out.push(json!({"role": "user", "content": parts}));
}

/// A tool message's text when images travel in the following user message: the images are
/// named in place, and their parts (a label, then the `data:` URL) appended to `parts`.
fn tool_text_with_images(call_id: &str, content: &[ResultBlock], parts: &mut Vec<Value>) -> String {
    let mut kept = Vec::new();
    for c in content {
        match c {
            ResultBlock::Image { media_type, data } => {
                let n = parts.len() / 2 + 1;
                kept.push(ResultBlock::Text {
                    text: format!("[image {n}, {media_type}: attached in the next user message]"),
                });
                parts.push(json!({"type": "text",
                    "text": format!("[aibuddy: image {n}, returned by tool call {call_id}]")}));
                parts.push(json!({"type": "image_url",
                    "image_url": {"url": image_data_url(media_type, data)}}));
            }
            other => kept.push(other.clone()),
        }
    }
    result_text(&kept)
}

fn assistant_message(m: &Message) -> Value {
    let text = m.text();
    let mut o = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    let calls: Vec<Value> = m
        .tool_calls()
        .map(|(id, name, input, _)| {
            json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments_string(input)}})
        })
        .collect();
    if !calls.is_empty() {
        o["tool_calls"] = Value::Array(calls);
    }
    o
}

/// The neutral view of one assistant message object.
pub fn parse_message(msg: &Value) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let mut text = content_text(msg.get("content"));
    if let Some(r) = msg.get("refusal").and_then(Value::as_str) {
        text.push_str(r);
    }
    if !text.is_empty() {
        out.push(ContentBlock::Text { text });
    }
    for c in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push(ContentBlock::ToolUse {
            id: str_field(c, "id").to_string(),
            name: c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            input: parse_arguments(&arguments_text(c.pointer("/function/arguments"))),
            kind: CallKind::Function,
        });
    }
    out
}

/// A message's `content` as text: a string, or (Mistral's reasoning models, some proxies) an
/// array of parts whose `text` parts are the answer (`thinking` and other parts are not).
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| matches!(str_field(p, "type"), "text" | "output_text"))
            .map(|p| str_field(p, "text"))
            .collect(),
        _ => String::new(),
    }
}

/// A call's `function.arguments` as text. The API sends a string; some compatible servers send
/// the object itself.
fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A fresh call id for a server that sent none: unique per response (`nonce`) and per call, so
/// the ids of one run never repeat (the store keys a run's calls by id).
fn generated_id(nonce: u64, slot: usize) -> String {
    format!("call_{nonce:016x}_{slot}")
}

/// Gives every tool call of a non-streamed message an id when the server left it out (or sent
/// the same one twice), in the message itself so that the stored raw message and the results
/// agree.
fn fill_missing_ids(msg: &mut Value) {
    let Some(calls) = msg.get_mut("tool_calls").and_then(Value::as_array_mut) else {
        return;
    };
    let nonce = fastrand::u64(..);
    let mut seen = std::collections::HashSet::new();
    for (i, c) in calls.iter_mut().enumerate() {
        let id = str_field(c, "id").to_string();
        if id.is_empty() || !seen.insert(id) {
            let fresh = generated_id(nonce, i);
            seen.insert(fresh.clone());
            if let Some(o) = c.as_object_mut() {
                o.insert("id".into(), Value::String(fresh));
            }
        }
    }
}

/// OpenAI finishes a refusal as `stop`, with the text in `refusal`: that is a refusal.
fn refusal_or(stop: StopReason, refused: bool) -> StopReason {
    if refused && stop == StopReason::EndTurn {
        StopReason::Refusal
    } else {
        stop
    }
}

fn finish_reason(s: &str) -> StopReason {
    match s {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

struct Call {
    id: String,
    name: String,
    args: String,
    /// Whether `id` came from the server (not generated).
    server_id: bool,
    /// Provider extras on the call (Gemini's `extra_content.google.thought_signature`, which it
    /// wants back on the next request).
    extra_content: Option<Value>,
}

/// SSE parser for Chat Completions streams.
#[derive(Default)]
pub struct Parser {
    started: bool,
    text: String,
    calls: Vec<Call>,
    /// The server's `index` of a tool-call delta -> position in `calls`.
    slots: std::collections::HashMap<u64, usize>,
    /// Makes generated call ids unique (see [`generated_id`]).
    nonce: u64,
    usage: Usage,
    finish: Option<String>,
    /// The model answered with a `refusal` (it finishes as `stop`): the step ends as a refusal.
    refused: bool,
    done: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self {
            nonce: fastrand::u64(..),
            ..Self::default()
        }
    }

    /// Which call a tool-call delta continues, `None` for a new one. Servers differ: OpenAI
    /// numbers calls with `index` and sends `id` and `name` only on a call's first delta; Gemini
    /// sends no `index`; Ollama sends `index: 0` for every call, each with its own `id`.
    fn slot_of(&self, tc: &Value) -> Option<usize> {
        let id = str_field(tc, "id");
        let same_call = |slot: usize| {
            let c = &self.calls[slot];
            id.is_empty() || !c.server_id || c.id == id
        };
        if let Some(index) = tc.get("index").and_then(Value::as_u64) {
            return self.slots.get(&index).copied().filter(|s| same_call(*s));
        }
        if !id.is_empty() {
            return self.calls.iter().position(|c| c.server_id && c.id == id);
        }
        // Neither index nor id: a continuation of the last call, unless it names a new one.
        let last = self.calls.len().checked_sub(1)?;
        let named = tc
            .pointer("/function/name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        (!named || self.calls[last].name.is_empty()).then_some(last)
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        self.done = true;
        let mut out = Vec::new();
        let mut raw = json!({"role": "assistant",
            "content": if self.text.is_empty() { Value::Null } else { json!(self.text) }});
        let mut calls = Vec::new();
        for c in &self.calls {
            out.push(ProviderEvent::ToolCallEnd {
                id: c.id.clone(),
                name: c.name.clone(),
                input: parse_arguments(&c.args),
            });
            let mut call = json!({"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.args}});
            if let Some(x) = &c.extra_content {
                call["extra_content"] = x.clone();
            }
            calls.push(call);
        }
        if !calls.is_empty() {
            raw["tool_calls"] = Value::Array(calls);
        }
        let stop = match self.finish.as_deref() {
            Some(s) => finish_reason(s),
            None if !self.calls.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        let stop = refusal_or(stop, self.refused);
        let message = Message {
            role: Role::Assistant,
            content: parse_message(&raw),
            raw: Some(RawContent {
                format: ProviderKind::OpenAiChat,
                blocks: vec![raw],
            }),
        };
        out.push(ProviderEvent::Usage(self.usage));
        out.push(ProviderEvent::Stop(stop));
        out.push(ProviderEvent::MessageEnd { message });
        out
    }
}

impl StreamParser for Parser {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        if data.trim() == "[DONE]" {
            return Ok(self.finish());
        }
        // Some servers name an error event (`event: error`) whose data is any JSON or text.
        let error_event = || ProviderError::Stream {
            error_type: "error".into(),
            message: bounded(data),
        };
        let v = match parse_json(data) {
            Ok(v) => v,
            Err(_) if event == "error" => return Err(error_event()),
            Err(e) => return Err(e),
        };
        if let Some(e) = error_in_body(&v) {
            return Err(e);
        }
        if event == "error" {
            return Err(error_event());
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(ProviderEvent::MessageStart {
                id: v.get("id").and_then(Value::as_str).map(str::to_string),
            });
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_of(Some(u), &CHAT);
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(out);
        };
        let mut t = content_text(choice.pointer("/delta/content"));
        // OpenAI streams a refusal in its own field; it is the model's answer too.
        if let Some(r) = choice.pointer("/delta/refusal").and_then(Value::as_str) {
            self.refused |= !r.is_empty();
            t.push_str(r);
        }
        if !t.is_empty() {
            self.text.push_str(&t);
            out.push(ProviderEvent::TextDelta { text: t });
        }
        for tc in choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let slot = match self.slot_of(tc) {
                Some(slot) => slot,
                None => {
                    let slot = self.calls.len();
                    let (id, server_id) = match str_field(tc, "id") {
                        "" => (generated_id(self.nonce, slot), false),
                        id => (id.to_string(), true),
                    };
                    let name = tc
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.calls.push(Call {
                        id: id.clone(),
                        name: name.to_string(),
                        args: String::new(),
                        server_id,
                        extra_content: None,
                    });
                    out.push(ProviderEvent::ToolCallStart {
                        id,
                        name: name.to_string(),
                        kind: CallKind::Function,
                    });
                    slot
                }
            };
            if let Some(index) = tc.get("index").and_then(Value::as_u64) {
                self.slots.insert(index, slot);
            }
            let call = &mut self.calls[slot];
            if call.name.is_empty()
                && let Some(n) = tc.pointer("/function/name").and_then(Value::as_str)
            {
                call.name = n.to_string();
            }
            if let Some(x) = tc.get("extra_content").filter(|x| !x.is_null()) {
                call.extra_content = Some(x.clone());
            }
            let a = arguments_text(tc.pointer("/function/arguments"));
            if !a.is_empty() {
                call.args.push_str(&a);
                out.push(ProviderEvent::ToolCallArgsDelta {
                    id: call.id.clone(),
                    delta: a,
                });
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        Ok(out)
    }

    /// Some servers close without `[DONE]`: a finish reason is enough to complete the message.
    fn on_end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_some() {
            return Ok(self.finish());
        }
        Err(ProviderError::Transport {
            kind: TransportKind::Body,
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// Converts a non-streamed Chat Completions response into the events a stream would give; the
/// message object is kept exactly as received.
pub fn events_from_response(v: &Value) -> Result<Vec<ProviderEvent>, ProviderError> {
    let mut msg = v
        .pointer("/choices/0/message")
        .cloned()
        .ok_or_else(|| ProviderError::Protocol("response has no choices[0].message".into()))?;
    fill_missing_ids(&mut msg);
    let content = parse_message(&msg);
    let mut out = vec![ProviderEvent::MessageStart {
        id: v.get("id").and_then(Value::as_str).map(str::to_string),
    }];
    for b in &content {
        match b {
            ContentBlock::Text { text } => {
                out.push(ProviderEvent::TextDelta { text: text.clone() })
            }
            ContentBlock::ToolUse {
                id,
                name,
                input,
                kind,
            } => {
                out.push(ProviderEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                    kind: *kind,
                });
                out.push(ProviderEvent::ToolCallEnd {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                });
            }
            _ => {}
        }
    }
    let has_calls = content
        .iter()
        .any(|c| matches!(c, ContentBlock::ToolUse { .. }));
    let stop = match v
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
    {
        Some(s) => finish_reason(s),
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
    };
    let refused = v
        .pointer("/choices/0/message/refusal")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.is_empty());
    let stop = refusal_or(stop, refused);
    out.push(ProviderEvent::Usage(usage_of(v.get("usage"), &CHAT)));
    out.push(ProviderEvent::Stop(stop));
    out.push(ProviderEvent::MessageEnd {
        message: Message {
            role: Role::Assistant,
            content,
            raw: Some(RawContent {
                format: ProviderKind::OpenAiChat,
                blocks: vec![msg],
            }),
        },
    });
    Ok(out)
}
