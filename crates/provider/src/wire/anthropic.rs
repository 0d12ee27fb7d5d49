//! Anthropic Messages: request body and SSE stream parser.

use serde_json::{Map, Value, json};

use super::usage::{ANTHROPIC, usage_of};
use super::{StreamParser, error_in_body, parse_arguments, parse_json, str_field};
use crate::error::{ProviderError, bounded};
use crate::event::{ProviderEvent, StopReason, Usage};
use crate::kind::ProviderKind;
use crate::model::{CallKind, ContentBlock, Message, RawContent, ResultBlock, Role, result_text};
use crate::request::{ModelRequest, Presentation};

pub const API_VERSION: &str = "2023-06-01";

/// The request body (key-free; the key goes in the `x-api-key` header).
pub fn build_request(req: &ModelRequest, stream: bool) -> Result<Value, ProviderError> {
    let native = req.presentation == Presentation::Native;
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(req.max_tokens));
    if !req.system.is_empty() {
        body.insert("system".into(), json!(req.system));
    }
    let messages = req
        .messages
        .iter()
        .map(|m| message(m, native))
        .collect::<Vec<_>>();
    body.insert("messages".into(), Value::Array(messages));
    let tools: Vec<Value> = req
        .sent_tools()
        .map(|t| {
            let mut o = json!({"name": t.name, "description": t.description, "input_schema": t.input_schema});
            if native && t.deferred {
                o["defer_loading"] = json!(true);
            }
            o
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

fn message(m: &Message, native: bool) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    if let Some(raw) = &m.raw
        && raw.format == ProviderKind::Anthropic
    {
        return json!({"role": role, "content": raw.blocks});
    }
    // Tool results lead a user message (the API wants them before any text).
    let (results, rest): (Vec<&ContentBlock>, Vec<&ContentBlock>) = m
        .content
        .iter()
        .partition(|b| matches!(b, ContentBlock::ToolResult { .. }));
    let content: Vec<Value> = results
        .into_iter()
        .chain(rest)
        .filter_map(|b| block(b, native))
        .collect();
    json!({"role": role, "content": content})
}

fn block(b: &ContentBlock, native: bool) -> Option<Value> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::ToolUse {
            id, name, input, ..
        } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let has_refs = content
                .iter()
                .any(|c| matches!(c, ResultBlock::ToolReference { .. }));
            let has_images = content
                .iter()
                .any(|c| matches!(c, ResultBlock::Image { .. }));
            let content = if (native && has_refs) || has_images {
                Value::Array(
                    content
                        .iter()
                        .filter_map(|c| result_block(c, native))
                        .collect(),
                )
            } else {
                json!(result_text(content))
            };
            let mut o =
                json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
            if *is_error {
                o["is_error"] = json!(true);
            }
            o
        }
        // Opaque blocks only mean something to the format they came from (replayed via `raw`).
        ContentBlock::Opaque { .. } => return None,
    })
}

/// One block of a `tool_result`'s content array (images as base64 image blocks; references
/// only on the native presentation, else their text).
fn result_block(c: &ResultBlock, native: bool) -> Option<Value> {
    Some(match c {
        ResultBlock::Text { text } if text.is_empty() => return None,
        ResultBlock::Text { text } => json!({"type": "text", "text": text}),
        ResultBlock::ToolReference { tool_name } if native => {
            json!({"type": "tool_reference", "tool_name": tool_name})
        }
        ResultBlock::ToolReference { .. } => {
            json!({"type": "text", "text": result_text(std::slice::from_ref(c))})
        }
        ResultBlock::Image { media_type, data } => json!({"type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data}}),
    })
}

/// Parses one content block as received into the neutral view.
pub fn parse_block(raw: &Value) -> Option<ContentBlock> {
    match str_field(raw, "type") {
        "text" => Some(ContentBlock::Text {
            text: str_field(raw, "text").to_string(),
        }),
        "tool_use" => Some(ContentBlock::ToolUse {
            id: str_field(raw, "id").to_string(),
            name: str_field(raw, "name").to_string(),
            input: raw.get("input").cloned().unwrap_or_else(|| json!({})),
            kind: CallKind::Function,
        }),
        _ => Some(ContentBlock::Opaque {
            id: raw.get("id").and_then(Value::as_str).map(str::to_string),
            block: raw.clone(),
        }),
    }
}

#[derive(Default)]
struct Block {
    raw: Value,
    /// Accumulated `input_json_delta` text for tool blocks.
    json: String,
}

/// SSE parser for Messages streams.
#[derive(Default)]
pub struct Parser {
    blocks: Vec<Block>,
    /// The server's block `index` -> position in `blocks` (compatible servers do not always
    /// number blocks 0, 1, 2, ...: a skipped or reused index starts a new block).
    positions: std::collections::HashMap<u64, usize>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    fn block_mut(&mut self, v: &Value) -> Result<&mut Block, ProviderError> {
        // No `index` at all: the block that started last.
        let i = match v.get("index").and_then(Value::as_u64) {
            Some(i) => self.positions.get(&i).copied().unwrap_or(usize::MAX),
            None => self.blocks.len().wrapping_sub(1),
        };
        self.blocks
            .get_mut(i)
            .ok_or_else(|| ProviderError::Protocol("delta for an unknown content block".into()))
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        self.done = true;
        // A tool block whose `content_block_stop` never came still gets the input it streamed.
        for b in &mut self.blocks {
            if !b.json.is_empty() && b.raw.get("input").is_some() {
                b.raw["input"] = parse_arguments(&b.json);
            }
        }
        let blocks: Vec<Value> = self.blocks.drain(..).map(|b| b.raw).collect();
        let content = blocks.iter().filter_map(parse_block).collect();
        let message = Message {
            role: Role::Assistant,
            content,
            raw: Some(RawContent {
                format: ProviderKind::Anthropic,
                blocks,
            }),
        };
        vec![
            ProviderEvent::Usage(self.usage),
            ProviderEvent::Stop(self.stop.clone().unwrap_or(StopReason::EndTurn)),
            ProviderEvent::MessageEnd { message },
        ]
    }
}

pub(crate) fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::PauseTurn,
        other => StopReason::Other(other.to_string()),
    }
}

fn append_str(raw: &mut Value, key: &str, piece: &str) {
    let cur = raw.get(key).and_then(Value::as_str).unwrap_or_default();
    let next = format!("{cur}{piece}");
    raw[key] = Value::String(next);
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
            "ping" => out.push(ProviderEvent::Ping),
            "message_start" => {
                let m = v.get("message").cloned().unwrap_or_default();
                self.usage.merge_max(usage_of(m.get("usage"), &ANTHROPIC));
                out.push(ProviderEvent::MessageStart {
                    id: m.get("id").and_then(Value::as_str).map(str::to_string),
                });
            }
            "content_block_start" => {
                let raw = v.get("content_block").cloned().unwrap_or_else(|| json!({}));
                match str_field(&raw, "type") {
                    "tool_use" => out.push(ProviderEvent::ToolCallStart {
                        id: str_field(&raw, "id").to_string(),
                        name: str_field(&raw, "name").to_string(),
                        kind: CallKind::Function,
                    }),
                    "text" if !str_field(&raw, "text").is_empty() => {
                        out.push(ProviderEvent::TextDelta {
                            text: str_field(&raw, "text").to_string(),
                        })
                    }
                    _ => {}
                }
                let i = v
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.blocks.len() as u64);
                self.positions.insert(i, self.blocks.len());
                self.blocks.push(Block {
                    raw,
                    json: String::new(),
                });
            }
            "content_block_delta" => {
                let d = v.get("delta").cloned().unwrap_or_default();
                let b = self.block_mut(&v)?;
                match str_field(&d, "type") {
                    "text_delta" => {
                        let t = str_field(&d, "text");
                        append_str(&mut b.raw, "text", t);
                        out.push(ProviderEvent::TextDelta {
                            text: t.to_string(),
                        });
                    }
                    "input_json_delta" => {
                        let p = str_field(&d, "partial_json");
                        b.json.push_str(p);
                        if str_field(&b.raw, "type") == "tool_use" && !p.is_empty() {
                            out.push(ProviderEvent::ToolCallArgsDelta {
                                id: str_field(&b.raw, "id").to_string(),
                                delta: p.to_string(),
                            });
                        }
                    }
                    "thinking_delta" => {
                        append_str(&mut b.raw, "thinking", str_field(&d, "thinking"))
                    }
                    "signature_delta" => {
                        append_str(&mut b.raw, "signature", str_field(&d, "signature"))
                    }
                    "citations_delta" => {
                        let c = d.get("citation").cloned().unwrap_or_default();
                        match b.raw.get_mut("citations").and_then(Value::as_array_mut) {
                            Some(a) => a.push(c),
                            None => b.raw["citations"] = json!([c]),
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let b = self.block_mut(&v)?;
                if b.raw.get("input").is_some() && !b.json.is_empty() {
                    b.raw["input"] = parse_arguments(&b.json);
                } else if b.raw.get("input").is_some_and(Value::is_null) {
                    b.raw["input"] = json!({});
                }
                if str_field(&b.raw, "type") == "tool_use" {
                    out.push(ProviderEvent::ToolCallEnd {
                        id: str_field(&b.raw, "id").to_string(),
                        name: str_field(&b.raw, "name").to_string(),
                        input: b.raw.get("input").cloned().unwrap_or_else(|| json!({})),
                    });
                }
            }
            "message_delta" => {
                if let Some(s) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(s));
                }
                if let Some(u) = v.get("usage") {
                    self.usage.merge_max(usage_of(Some(u), &ANTHROPIC));
                }
            }
            "message_stop" => out.extend(self.finish()),
            "error" => {
                // Without the usual fields, the event's own text says what happened.
                return Err(error_in_body(&v).unwrap_or_else(|| ProviderError::Stream {
                    error_type: "error".into(),
                    message: bounded(data),
                }));
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
            kind: crate::error::TransportKind::Body,
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// Converts a non-streamed Messages response into the same events a stream would give.
pub fn events_from_response(v: &Value) -> Vec<ProviderEvent> {
    let mut p = Parser::new();
    p.usage = usage_of(v.get("usage"), &ANTHROPIC);
    p.stop = v
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(stop_reason);
    let mut out = vec![ProviderEvent::MessageStart {
        id: v.get("id").and_then(Value::as_str).map(str::to_string),
    }];
    for raw in v
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match parse_block(raw) {
            Some(ContentBlock::Text { text }) => out.push(ProviderEvent::TextDelta { text }),
            Some(ContentBlock::ToolUse {
                id,
                name,
                input,
                kind,
            }) => {
                out.push(ProviderEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                    kind,
                });
                out.push(ProviderEvent::ToolCallEnd { id, name, input });
            }
            _ => {}
        }
        p.blocks.push(Block {
            raw: raw.clone(),
            json: String::new(),
        });
    }
    out.extend(p.finish());
    out
}
