//! OpenAI Responses: request body (native `tool_search` with client execution, or activeTools)
//! and SSE stream parser.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::usage::{RESPONSES, usage_of};
use super::{StreamParser, parse_arguments, parse_json, str_field};
use crate::error::{ProviderError, TransportKind, bounded};
use crate::event::{ProviderEvent, StopReason};
use crate::kind::ProviderKind;
use crate::model::{
    CallKind, ContentBlock, Message, RawContent, ResultBlock, Role, image_data_url, result_text,
};
use crate::request::{ModelRequest, Presentation, TOOL_SEARCH_NAME, ToolSpec};

fn function_def(t: &ToolSpec, defer: bool) -> Value {
    let mut o = json!({"type": "function", "name": t.name, "description": t.description,
        "parameters": t.input_schema, "strict": false});
    if defer {
        o["defer_loading"] = json!(true);
    }
    o
}

/// The request body (key-free; the key goes in the `Authorization` header), images of tool
/// results as `input_image` parts of their `function_call_output`.
pub fn build_request(req: &ModelRequest, stream: bool) -> Result<Value, ProviderError> {
    build_request_images(req, stream, true)
}

/// [`build_request`], choosing where images of tool results go: `images_in_outputs` (the API's
/// own shape) as `input_image` parts of the `function_call_output`; otherwise, for an endpoint
/// that takes only text there, the output names each image in place and the images follow the
/// outputs as a user message of `input_image` parts (each after a label naming its call).
pub fn build_request_images(
    req: &ModelRequest,
    stream: bool,
    images_in_outputs: bool,
) -> Result<Value, ProviderError> {
    let native = req.presentation == Presentation::Native;
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if !req.system.is_empty() {
        body.insert("instructions".into(), json!(req.system));
    }
    // Which calls were client tool searches (answered with `tool_search_output`).
    let mut kinds: HashMap<&str, CallKind> = HashMap::new();
    for m in &req.messages {
        for (id, _, _, kind) in m.tool_calls() {
            kinds.insert(id, kind);
        }
    }
    let mut input = Vec::new();
    for m in &req.messages {
        push_items(&mut input, m, req, &kinds, images_in_outputs)?;
    }
    body.insert("input".into(), Value::Array(input));
    let tools: Vec<Value> = req
        .sent_tools()
        .map(|t| {
            if native && t.name == TOOL_SEARCH_NAME {
                json!({"type": "tool_search", "execution": "client",
                    "description": t.description, "parameters": t.input_schema})
            } else {
                function_def(t, native && t.deferred)
            }
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("max_output_tokens".into(), json!(req.max_tokens));
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    // Nothing is kept server-side; reasoning items come back encrypted so they can be replayed.
    body.insert("store".into(), json!(false));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

fn push_items(
    input: &mut Vec<Value>,
    m: &Message,
    req: &ModelRequest,
    kinds: &HashMap<&str, CallKind>,
    images_in_outputs: bool,
) -> Result<(), ProviderError> {
    if m.role == Role::Assistant {
        if let Some(raw) = &m.raw
            && raw.format == ProviderKind::OpenAiResponses
        {
            input.extend(raw.blocks.iter().cloned());
            return Ok(());
        }
        let text = m.text();
        if !text.is_empty() {
            input.push(json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}));
        }
        for (id, name, args, kind) in m.tool_calls() {
            input.push(match kind {
                CallKind::ToolSearch => json!({"type": "tool_search_call", "call_id": id,
                    "execution": "client", "status": "completed", "arguments": args}),
                CallKind::Function => json!({"type": "function_call", "call_id": id, "name": name,
                    "arguments": arguments_string(args)}),
            });
        }
        return Ok(());
    }
    let mut text = String::new();
    // What a client tool search says besides its tools (nothing found, servers not searched):
    // `tool_search_output` has no text field, so it follows the outputs as a message of ours.
    let mut notes: Vec<String> = Vec::new();
    // The images of the outputs when they follow as a message (not `images_in_outputs`).
    let mut images: Vec<Value> = Vec::new();
    for b in &m.content {
        match b {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                if kinds.get(tool_use_id.as_str()) == Some(&CallKind::ToolSearch) {
                    let mut tools = Vec::new();
                    for c in content {
                        match c {
                            ResultBlock::ToolReference { tool_name } => {
                                let t = req.tool(tool_name).ok_or_else(|| {
                                    ProviderError::Request(format!(
                                    "tool_search result names {tool_name}, which is not in tools"
                                ))
                                })?;
                                tools.push(function_def(t, true));
                            }
                            ResultBlock::Text { text } if !text.is_empty() => {
                                notes.push(search_note(tool_use_id, text));
                            }
                            ResultBlock::Text { .. } | ResultBlock::Image { .. } => {}
                        }
                    }
                    input.push(json!({"type": "tool_search_output", "call_id": tool_use_id,
                        "execution": "client", "status": "completed", "tools": tools}));
                } else {
                    let output = if images_in_outputs {
                        call_output(content, *is_error)
                    } else {
                        json!(output_text_with_images(
                            tool_use_id,
                            content,
                            *is_error,
                            &mut images
                        ))
                    };
                    input.push(
                        json!({"type": "function_call_output", "call_id": tool_use_id,
                        "output": output}),
                    );
                }
            }
            ContentBlock::ToolUse { .. } | ContentBlock::Opaque { .. } => {}
        }
    }
    let mut parts: Vec<Value> = notes
        .into_iter()
        .map(|n| json!({"type": "input_text", "text": n}))
        .collect();
    parts.extend(images);
    if !text.is_empty() {
        parts.push(json!({"type": "input_text", "text": text}));
    }
    if !parts.is_empty() {
        input.push(json!({"type": "message", "role": "user", "content": parts}));
    }
    Ok(())
}

/// A `function_call_output`'s `output`: the result's text, or, when the result holds images,
/// a list of `input_text` and `input_image` parts (images as `data:` URLs).
fn call_output(content: &[ResultBlock], is_error: bool) -> Value {
    let (images, rest): (Vec<&ResultBlock>, Vec<&ResultBlock>) = content
        .iter()
        .partition(|c| matches!(c, ResultBlock::Image { .. }));
    let rest: Vec<ResultBlock> = rest.into_iter().cloned().collect();
    let mut text = result_text(&rest);
    if is_error {
        text = format!("Error: {text}");
    }
    if images.is_empty() {
        return json!(text);
    }
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"type": "input_text", "text": text}));
    }
    for i in images {
        if let ResultBlock::Image { media_type, data } = i {
            parts.push(json!({"type": "input_image", "detail": "auto",
                "image_url": image_data_url(media_type, data)}));
        }
    }
    Value::Array(parts)
}

/// A `function_call_output`'s text when its images follow as a message: each image named in
/// place, its parts (a label naming the call, then the `input_image`) appended to `images`.
fn output_text_with_images(
    call_id: &str,
    content: &[ResultBlock],
    is_error: bool,
    images: &mut Vec<Value>,
) -> String {
    let mut kept = Vec::new();
    for c in content {
        match c {
            ResultBlock::Image { media_type, data } => {
                let n = images.len() / 2 + 1;
                kept.push(ResultBlock::Text {
                    text: format!("[image {n}, {media_type}: attached in the next user message]"),
                });
                images.push(json!({"type": "input_text",
                    "text": format!("[aibuddy: image {n}, returned by tool call {call_id}]")}));
                images.push(json!({"type": "input_image", "detail": "auto",
                    "image_url": image_data_url(media_type, data)}));
            }
            other => kept.push(other.clone()),
        }
    }
    let text = result_text(&kept);
    if is_error {
        format!("Error: {text}")
    } else {
        text
    }
}

/// Whether a request holds images in tool results (the ones [`build_request_images`] places).
pub fn has_result_images(req: &ModelRequest) -> bool {
    req.messages.iter().any(|m| {
        m.content.iter().any(|b| {
            matches!(b, ContentBlock::ToolResult { content, .. }
                if content.iter().any(|c| matches!(c, ResultBlock::Image { .. })))
        })
    })
}

/// The message text carrying a client tool search's note (written by aibuddy; the caller quotes
/// any server text inside it).
pub fn search_note(call_id: &str, note: &str) -> String {
    format!("[aibuddy, about the result of tool_search call {call_id}]\n{note}")
}

pub(crate) fn arguments_string(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses one output item into the neutral view.
pub fn parse_item(item: &Value) -> Vec<ContentBlock> {
    match str_field(item, "type") {
        "message" => item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| match str_field(c, "type") {
                "output_text" => Some(ContentBlock::Text {
                    text: str_field(c, "text").to_string(),
                }),
                // A refusal is the model's answer too: shown, not dropped.
                "refusal" => Some(ContentBlock::Text {
                    text: str_field(c, "refusal").to_string(),
                }),
                _ => None,
            })
            .collect(),
        "function_call" => vec![ContentBlock::ToolUse {
            id: str_field(item, "call_id").to_string(),
            name: str_field(item, "name").to_string(),
            input: parse_arguments(str_field(item, "arguments")),
            kind: CallKind::Function,
        }],
        "tool_search_call" if str_field(item, "execution") == "client" => {
            vec![ContentBlock::ToolUse {
                id: str_field(item, "call_id").to_string(),
                name: TOOL_SEARCH_NAME.to_string(),
                input: search_arguments(item),
                kind: CallKind::ToolSearch,
            }]
        }
        _ => vec![ContentBlock::Opaque {
            id: item
                .get("call_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            block: item.clone(),
        }],
    }
}

fn search_arguments(item: &Value) -> Value {
    match item.get("arguments") {
        Some(Value::String(s)) => parse_arguments(s),
        Some(v) => v.clone(),
        None => json!({}),
    }
}

/// SSE parser for Responses streams.
#[derive(Default)]
pub struct Parser {
    items: Vec<Value>,
    /// item id -> call id, for argument deltas.
    call_ids: HashMap<String, String>,
    done: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    fn finish(&mut self, response: &Value, stop: Option<StopReason>) -> Vec<ProviderEvent> {
        self.done = true;
        let usage = usage_of(response.get("usage"), &RESPONSES);
        // `response.completed` carries the full output; prefer it over the items seen so far.
        if let Some(out) = response.get("output").and_then(Value::as_array)
            && !out.is_empty()
        {
            self.items = out.clone();
        }
        let content: Vec<ContentBlock> = self.items.iter().flat_map(parse_item).collect();
        let refused = self.items.iter().any(|i| {
            i.get("content")
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().any(|p| str_field(p, "type") == "refusal"))
        });
        let stop = stop.unwrap_or_else(|| {
            if content
                .iter()
                .any(|c| matches!(c, ContentBlock::ToolUse { .. }))
            {
                StopReason::ToolUse
            } else if refused {
                // A `refusal` content part: the model declined (the response still `completed`).
                StopReason::Refusal
            } else {
                StopReason::EndTurn
            }
        });
        let message = Message {
            role: Role::Assistant,
            content,
            raw: Some(RawContent {
                format: ProviderKind::OpenAiResponses,
                blocks: std::mem::take(&mut self.items),
            }),
        };
        vec![
            ProviderEvent::Usage(usage),
            ProviderEvent::Stop(stop),
            ProviderEvent::MessageEnd { message },
        ]
    }
}

impl StreamParser for Parser {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        let v = parse_json(data)?;
        let ty = match str_field(&v, "type") {
            "" => event,
            t => t,
        };
        let mut out = Vec::new();
        match ty {
            "response.created" => out.push(ProviderEvent::MessageStart {
                id: v
                    .pointer("/response/id")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }),
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or_default();
                match str_field(&item, "type") {
                    "function_call" => {
                        let call_id = str_field(&item, "call_id").to_string();
                        self.call_ids
                            .insert(str_field(&item, "id").to_string(), call_id.clone());
                        out.push(ProviderEvent::ToolCallStart {
                            id: call_id,
                            name: str_field(&item, "name").to_string(),
                            kind: CallKind::Function,
                        });
                    }
                    "tool_search_call" if str_field(&item, "execution") == "client" => {
                        out.push(ProviderEvent::ToolCallStart {
                            id: str_field(&item, "call_id").to_string(),
                            name: TOOL_SEARCH_NAME.to_string(),
                            kind: CallKind::ToolSearch,
                        })
                    }
                    _ => {}
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                out.push(ProviderEvent::TextDelta {
                    text: str_field(&v, "delta").to_string(),
                })
            }
            "response.function_call_arguments.delta" => {
                if let Some(id) = self.call_ids.get(str_field(&v, "item_id")) {
                    out.push(ProviderEvent::ToolCallArgsDelta {
                        id: id.clone(),
                        delta: str_field(&v, "delta").to_string(),
                    });
                }
            }
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or_default();
                for b in parse_item(&item) {
                    if let ContentBlock::ToolUse {
                        id, name, input, ..
                    } = b
                    {
                        out.push(ProviderEvent::ToolCallEnd { id, name, input });
                    }
                }
                self.items.push(item);
            }
            "response.completed" => {
                out.extend(self.finish(v.get("response").unwrap_or(&Value::Null), None))
            }
            "response.incomplete" => {
                let r = v.get("response").cloned().unwrap_or_default();
                let reason = r
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("incomplete");
                let stop = match reason {
                    "max_output_tokens" => StopReason::MaxTokens,
                    other => StopReason::Other(other.to_string()),
                };
                out.extend(self.finish(&r, Some(stop)));
            }
            "response.failed" | "error" => {
                let e = v
                    .pointer("/response/error")
                    .filter(|e| !e.is_null())
                    .or_else(|| v.get("error").filter(|e| !e.is_null()))
                    .unwrap_or(&v);
                let code = match (str_field(e, "code"), str_field(e, "type")) {
                    ("", "" | "error" | "response.failed") => "error",
                    ("", t) => t,
                    (c, _) => c,
                };
                // Without a message (`"error": null`), the event's own text says what happened.
                let message = match str_field(e, "message") {
                    "" => data,
                    m => m,
                };
                return Err(ProviderError::Stream {
                    error_type: bounded(code),
                    message: bounded(message),
                });
            }
            _ => {}
        }
        Ok(out)
    }

    fn on_end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        Err(ProviderError::Transport {
            kind: TransportKind::Body,
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// Converts a non-streamed Responses body into the events a stream would give.
pub fn events_from_response(v: &Value) -> Vec<ProviderEvent> {
    let mut p = Parser::new();
    let mut out = vec![ProviderEvent::MessageStart {
        id: v.get("id").and_then(Value::as_str).map(str::to_string),
    }];
    for item in v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for b in parse_item(item) {
            match b {
                ContentBlock::Text { text } => out.push(ProviderEvent::TextDelta { text }),
                ContentBlock::ToolUse {
                    id,
                    name,
                    input,
                    kind,
                } => {
                    out.push(ProviderEvent::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                        kind,
                    });
                    out.push(ProviderEvent::ToolCallEnd { id, name, input });
                }
                _ => {}
            }
        }
    }
    out.extend(p.finish(v, None));
    out
}
