//! What the fake server answers: scripted replies, and builders that render one assistant turn
//! as each format's SSE stream (or non-streamed JSON).

use std::time::Duration;

use serde_json::{Value, json};

use crate::kind::ProviderKind;
use crate::model::CallKind;

/// One piece of an SSE response body.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// `event: name` (when given) and `data: ...`, then a blank line.
    Event {
        name: Option<String>,
        data: String,
    },
    /// `: text` (an SSE comment, what some servers send as keep-alive).
    Comment(String),
    /// Bytes sent as they are, in one write (a line split across TCP reads, CRLF line ends, a
    /// body cut mid-event).
    Raw(String),
    /// Bytes that need not be UTF-8, in one write.
    Bytes(Vec<u8>),
    Sleep(Duration),
    /// Send nothing more and keep the connection open until the client goes away.
    Stall,
}

impl Chunk {
    pub fn event(name: &str, data: Value) -> Self {
        Chunk::Event {
            name: Some(name.to_string()),
            data: data.to_string(),
        }
    }

    pub fn data(data: impl Into<String>) -> Self {
        Chunk::Event {
            name: None,
            data: data.into(),
        }
    }
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 `text/event-stream`. `served` is the assistant content the client must send back
    /// unchanged in later requests (checked when replay checking is on); `None` for streams that
    /// do not complete.
    Stream {
        chunks: Vec<Chunk>,
        served: Option<Value>,
    },
    /// 200 `application/json` (non-streamed responses).
    Json { body: Value, served: Option<Value> },
    /// An HTTP error with extra headers (e.g. `retry-after`).
    Error {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    /// Any status, content type and body text (an HTML page from a proxy, an empty body).
    Body {
        status: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        body: String,
    },
}

impl Reply {
    /// An Anthropic stream that sends `token` `count` times, one every `every`, and never
    /// finishes the message: each token arrives well within an idle timeout, so only a cap on the
    /// whole response ends it early (a provider or proxy trickling forever).
    pub fn anthropic_trickle(token: &str, count: usize, every: Duration) -> Reply {
        let mut chunks = vec![
            Chunk::event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_trickle",
                    "type": "message", "role": "assistant", "content": [], "model": "fake",
                    "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ),
            Chunk::event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            ),
        ];
        for _ in 0..count {
            chunks.push(Chunk::event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": token}}),
            ));
            chunks.push(Chunk::Sleep(every));
        }
        Reply::Stream {
            chunks,
            served: None,
        }
    }
}

/// A tool call in a scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub kind: CallKind,
}

/// One assistant turn, rendered per format by [`Turn::reply`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub text: Option<String>,
    pub calls: Vec<ScriptCall>,
    /// Interleave keep-alives (Anthropic `ping` events; SSE comments elsewhere).
    pub pings: bool,
    /// Stop after the first text delta and stall (a stream that stops sending).
    pub stall_after_first_delta: bool,
    /// The reply to a side request (a conversation summary), not a turn of the conversation:
    /// it is never replayed, so the replay check does not expect it back.
    pub aside: bool,
    /// The stop reason in the format's own word, instead of the normal one: Anthropic
    /// `stop_reason` (`max_tokens`, `refusal`, `pause_turn`, ...), Chat `finish_reason`
    /// (`length`, ...), Responses `response.incomplete` with this `incomplete_details.reason`
    /// (`max_output_tokens`, ...).
    pub stop: Option<String>,
}

impl Turn {
    pub fn text(t: &str) -> Self {
        Self {
            text: Some(t.to_string()),
            ..Self::default()
        }
    }

    pub fn call(mut self, id: &str, name: &str, input: Value) -> Self {
        self.calls.push(ScriptCall {
            id: id.into(),
            name: name.into(),
            input,
            kind: CallKind::Function,
        });
        self
    }

    /// An OpenAI Responses client `tool_search_call` (other formats render it as a call of the
    /// `tool_search` function).
    pub fn search_call(mut self, id: &str, input: Value) -> Self {
        self.calls.push(ScriptCall {
            id: id.into(),
            name: crate::request::TOOL_SEARCH_NAME.into(),
            input,
            kind: CallKind::ToolSearch,
        });
        self
    }

    /// A summary: the reply to a compaction request (see [`Turn::aside`]).
    pub fn summary(t: &str) -> Self {
        Self {
            aside: true,
            ..Self::text(t)
        }
    }

    pub fn with_pings(mut self) -> Self {
        self.pings = true;
        self
    }

    /// Ends the turn with `reason` (see [`Turn::stop`]).
    pub fn stopping(mut self, reason: &str) -> Self {
        self.stop = Some(reason.to_string());
        self
    }

    pub fn stalling(mut self) -> Self {
        self.stall_after_first_delta = true;
        self
    }

    /// The streamed reply in `kind`'s wire format.
    pub fn reply(&self, kind: ProviderKind) -> Reply {
        let (mut chunks, served) = match kind {
            ProviderKind::Anthropic => self.anthropic(),
            ProviderKind::OpenAiResponses => self.responses(),
            ProviderKind::OpenAiChat => self.chat(),
        };
        if self.stall_after_first_delta {
            // Cut right after the chunk carrying the first piece of text (or the first delta).
            let needle = match self.text.as_deref().map(split2) {
                Some(pieces) if !pieces.is_empty() => {
                    let quoted = Value::String(pieces[0].clone()).to_string();
                    quoted[1..quoted.len() - 1].to_string()
                }
                _ => "delta".to_string(),
            };
            let cut = chunks
                .iter()
                .position(|c| matches!(c, Chunk::Event { data, .. } if data.contains(&needle)))
                .map_or(chunks.len(), |i| i + 1);
            chunks.truncate(cut);
            chunks.push(Chunk::Stall);
            return Reply::Stream {
                chunks,
                served: None,
            };
        }
        Reply::Stream {
            chunks,
            served: (!self.aside).then_some(served),
        }
    }

    fn keepalive(&self, kind: ProviderKind) -> Option<Chunk> {
        match (self.pings, kind) {
            (false, _) => None,
            (true, ProviderKind::Anthropic) => Some(Chunk::event("ping", json!({"type": "ping"}))),
            (true, _) => Some(Chunk::Comment("keep-alive".into())),
        }
    }

    fn anthropic(&self) -> (Vec<Chunk>, Value) {
        let mut c = vec![Chunk::event(
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": "fake",
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        )];
        c.extend(self.keepalive(ProviderKind::Anthropic));
        let mut served = Vec::new();
        let mut index = 0;
        if let Some(t) = &self.text {
            c.push(Chunk::event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
            for piece in split2(t) {
                c.push(Chunk::event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})));
                c.extend(self.keepalive(ProviderKind::Anthropic));
            }
            c.push(Chunk::event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            served.push(json!({"type": "text", "text": t}));
            index += 1;
        }
        for call in &self.calls {
            c.push(Chunk::event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
            c.push(Chunk::event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})));
            for piece in split2(&call.input.to_string()) {
                c.push(Chunk::event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})));
            }
            c.push(Chunk::event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            served.push(
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}),
            );
            index += 1;
        }
        let stop = match (&self.stop, self.calls.is_empty()) {
            (Some(s), _) => s.as_str(),
            (None, true) => "end_turn",
            (None, false) => "tool_use",
        };
        c.push(Chunk::event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}})));
        c.push(Chunk::event(
            "message_stop",
            json!({"type": "message_stop"}),
        ));
        (c, Value::Array(served))
    }

    fn responses(&self) -> (Vec<Chunk>, Value) {
        let mut c = vec![Chunk::event(
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress", "output": []}}),
        )];
        c.extend(self.keepalive(ProviderKind::OpenAiResponses));
        let mut items = Vec::new();
        if let Some(t) = &self.text {
            let i = items.len();
            c.push(Chunk::event("response.output_item.added", json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}})));
            for piece in split2(t) {
                c.push(Chunk::event("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": i, "content_index": 0, "delta": piece})));
                c.extend(self.keepalive(ProviderKind::OpenAiResponses));
            }
            let item = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": t, "annotations": []}]});
            c.push(Chunk::event(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            ));
            items.push(item);
        }
        for (n, call) in self.calls.iter().enumerate() {
            let i = items.len();
            let item = match call.kind {
                CallKind::ToolSearch => {
                    json!({"type": "tool_search_call", "id": format!("ts_{n}"), "call_id": call.id, "execution": "client", "status": "completed", "arguments": call.input})
                }
                CallKind::Function => {
                    let item_id = format!("fc_{n}");
                    let args = call.input.to_string();
                    c.push(Chunk::event("response.output_item.added", json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name, "arguments": "", "status": "in_progress"}})));
                    for piece in split2(&args) {
                        c.push(Chunk::event("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": i, "delta": piece})));
                    }
                    c.push(Chunk::event("response.function_call_arguments.done", json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": i, "arguments": args, "name": call.name})));
                    json!({"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name, "arguments": args, "status": "completed"})
                }
            };
            if call.kind == CallKind::ToolSearch {
                c.push(Chunk::event(
                    "response.output_item.added",
                    json!({"type": "response.output_item.added", "output_index": i, "item": item}),
                ));
            }
            c.push(Chunk::event(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            ));
            items.push(item);
        }
        let usage = json!({"input_tokens": 10, "output_tokens": 20, "input_tokens_details": {"cached_tokens": 0}});
        match &self.stop {
            Some(reason) => c.push(Chunk::event("response.incomplete", json!({"type": "response.incomplete", "response": {"id": "resp_fake", "status": "incomplete", "incomplete_details": {"reason": reason}, "output": items, "usage": usage}}))),
            None => c.push(Chunk::event("response.completed", json!({"type": "response.completed", "response": {"id": "resp_fake", "status": "completed", "output": items, "usage": usage}}))),
        }
        (c, Value::Array(items))
    }

    fn chat(&self) -> (Vec<Chunk>, Value) {
        let chunk = |delta: Value, finish: Value| {
            Chunk::data(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
        };
        let mut c = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        c.extend(self.keepalive(ProviderKind::OpenAiChat));
        if let Some(t) = &self.text {
            for piece in split2(t) {
                c.push(chunk(json!({"content": piece}), Value::Null));
                c.extend(self.keepalive(ProviderKind::OpenAiChat));
            }
        }
        let mut calls = Vec::new();
        for (i, call) in self.calls.iter().enumerate() {
            let args = call.input.to_string();
            let mut first = true;
            for piece in split2(&args) {
                let tc = if first {
                    json!({"index": i, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": piece}})
                } else {
                    json!({"index": i, "function": {"arguments": piece}})
                };
                first = false;
                c.push(chunk(json!({"tool_calls": [tc]}), Value::Null));
            }
            calls.push(json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": args}}));
        }
        let finish = match (&self.stop, self.calls.is_empty()) {
            (Some(s), _) => s.as_str(),
            (None, true) => "stop",
            (None, false) => "tool_calls",
        };
        c.push(chunk(json!({}), json!(finish)));
        c.push(Chunk::data(json!({"id": "chatcmpl-fake", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 20}}).to_string()));
        c.push(Chunk::data("[DONE]"));
        let mut served = json!({"role": "assistant", "content": self.text});
        if !calls.is_empty() {
            served["tool_calls"] = Value::Array(calls);
        }
        (c, served)
    }

    /// The non-streamed Chat Completions reply (`stream: false`).
    pub fn chat_json(&self) -> Reply {
        let (_, served) = self.chat();
        let finish = match (&self.stop, self.calls.is_empty()) {
            (Some(s), _) => s.as_str(),
            (None, true) => "stop",
            (None, false) => "tool_calls",
        };
        Reply::Json {
            body: json!({"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"index": 0, "message": served, "finish_reason": finish}], "usage": {"prompt_tokens": 10, "completion_tokens": 20}}),
            served: Some(served),
        }
    }
}

/// Splits a string into two pieces on a char boundary (to exercise delta accumulation).
fn split2(s: &str) -> Vec<String> {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    [&s[..mid], &s[mid..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

impl Reply {
    /// An HTTP error in the format's error shape.
    pub fn error(status: u16, error_type: &str, message: &str) -> Self {
        Reply::Error {
            status,
            headers: Vec::new(),
            body: json!({"type": "error", "error": {"type": error_type, "message": message}}),
        }
    }

    /// 429 with `retry-after: secs`.
    pub fn rate_limited(secs: u64) -> Self {
        Reply::Error {
            status: 429,
            headers: vec![("retry-after".into(), secs.to_string())],
            body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}),
        }
    }
}
