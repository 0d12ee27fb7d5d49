//! What real OpenAI-compatible servers and proxies send that the reference APIs do not, and
//! hostile or broken responses, over real HTTP against the fake server: tool-call deltas without
//! `index` (Gemini) or with `index: 0` for every call (Ollama), calls without `id`, `"error": null`
//! on every chunk, error objects with a 200 status, numeric error codes (OpenRouter), SSE lines
//! split across reads with CRLF ends, block indices that do not start at 0, events nobody uses.

use crate::common;

use std::time::Duration;

use aibuddy_provider::testing::{Chunk, Reply};
use aibuddy_provider::{
    ContentBlock, HttpProvider, Message, Presentation, Provider, ProviderError, ProviderEvent,
    ProviderKind, Stage,
};
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const CHAT: ProviderKind = ProviderKind::OpenAiChat;

fn chunk(delta: Value, finish: Value) -> Chunk {
    Chunk::data(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
    )
}

fn ask(kind: ProviderKind) -> aibuddy_provider::ModelRequest {
    request(
        kind,
        Presentation::ActiveTools,
        vec![Message::user_text("hi")],
    )
}

/// (id, name, input) of each tool call of a message.
fn calls(m: &Message) -> Vec<(String, String, Value)> {
    m.tool_calls()
        .map(|(id, name, input, _)| (id.to_string(), name.to_string(), input.clone()))
        .collect()
}

async fn stream_error(p: &HttpProvider, kind: ProviderKind) -> ProviderError {
    match p.stream(&ask(kind), CancellationToken::new()).await {
        Err(e) => e,
        Ok(s) => {
            let (events, err) = collect(s).await;
            err.unwrap_or_else(|| panic!("{kind:?}: no error; events: {events:?}"))
        }
    }
}

/// Gemini's OpenAI-compatible stream: no `index` on tool-call deltas, arguments continued by
/// index-less deltas without id or name, a thought signature on the call that must go back, and
/// `finish_reason: "stop"` after calls.
#[tokio::test]
async fn chat_tool_call_deltas_without_index() {
    let server = server().await;
    let sig = json!({"google": {"thought_signature": "c2lnbmF0dXJl"}});
    server.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "tool_calls": [{"id": "function-call-1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"id": "", "type": "", "function": {"arguments": "\"a.txt\"}"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"id": "function-call-2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}, "extra_content": sig}]}), Value::Null),
            chunk(json!({}), json!("stop")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (_, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        calls(&msg),
        vec![
            (
                "function-call-1".into(),
                "read_file".into(),
                json!({"path": "a.txt"})
            ),
            (
                "function-call-2".into(),
                "get_weather".into(),
                json!({"city": "Oslo"})
            ),
        ]
    );
    // The signature goes back with its call (Gemini 3 refuses the next request without it).
    let raw = &msg.raw.as_ref().unwrap().blocks[0];
    assert_eq!(raw["tool_calls"][1]["extra_content"], sig);
    assert!(raw["tool_calls"][0].get("extra_content").is_none());
    server.assert_clean();
}

/// Ollama's stream: every call has `index: 0`, each with its own id and complete arguments.
#[tokio::test]
async fn chat_parallel_calls_all_at_index_zero() {
    let server = server().await;
    server.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"tool_calls": [{"id": "call_a1", "index": 0, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"hello.py\"}"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"id": "call_b2", "index": 0, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"world.py\"}"}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (_, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        calls(&msg),
        vec![
            (
                "call_a1".into(),
                "read_file".into(),
                json!({"path": "hello.py"})
            ),
            (
                "call_b2".into(),
                "read_file".into(),
                json!({"path": "world.py"})
            ),
        ]
    );
    server.assert_clean();
}

fn id_less_call_stream(path: &str) -> Reply {
    Reply::Stream {
        chunks: vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": json!({"path": path}).to_string()}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    }
}

/// Calls without `id` get one, unique across responses (a run stores its calls by id, so two
/// steps both answering `call_0` would collide), in the streamed and the unstreamed form, and
/// the raw message replayed later carries the same ids.
#[tokio::test]
async fn chat_calls_without_id_get_unique_ids() {
    let server = server().await;
    server.push(id_less_call_stream("a.txt"));
    server.push(id_less_call_stream("b.txt"));
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (_, first) = step(&p, &ask(CHAT)).await;
    let (_, second) = step(&p, &ask(CHAT)).await;
    let (a, b) = (calls(&first), calls(&second));
    assert_eq!((a.len(), b.len()), (1, 1));
    assert!(!a[0].0.is_empty() && !b[0].0.is_empty());
    assert_ne!(a[0].0, b[0].0, "generated ids must not repeat across steps");
    assert_eq!(a[0].2, json!({"path": "a.txt"}));
    assert_eq!(
        first.raw.as_ref().unwrap().blocks[0]["tool_calls"][0]["id"],
        json!(a[0].0)
    );

    // Unstreamed: two id-less calls in one message, and a second message.
    let mut route = route(&server, CHAT, Presentation::ActiveTools);
    route.stream = Some(false);
    let p = HttpProvider::new(route, aibuddy_provider::ApiKey::new(KEY)).unwrap();
    let body = |p1: &str, p2: &str| {
        json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": "read_file", "arguments": json!({"path": p1}).to_string()}},
                {"type": "function", "function": {"name": "read_file", "arguments": json!({"path": p2}).to_string()}}]}}]})
    };
    for (p1, p2) in [("a", "b"), ("c", "d")] {
        server.push(Reply::Json {
            body: body(p1, p2),
            served: None,
        });
    }
    let (_, m1) = step(&p, &ask(CHAT)).await;
    let (_, m2) = step(&p, &ask(CHAT)).await;
    let ids: Vec<String> = calls(&m1)
        .into_iter()
        .chain(calls(&m2))
        .map(|c| c.0)
        .collect();
    assert_eq!(ids.len(), 4);
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "{ids:?}");
    assert!(ids.iter().all(|i| !i.is_empty()));
    let raw = &m1.raw.as_ref().unwrap().blocks[0];
    assert_eq!(raw["tool_calls"][1]["id"], json!(ids[1]));
    server.assert_clean();
}

/// Arguments sent as a JSON object instead of a string (some compatible servers).
#[tokio::test]
async fn chat_arguments_as_an_object() {
    let server = server().await;
    server.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "x.txt"}}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (_, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        calls(&msg),
        vec![("c1".into(), "read_file".into(), json!({"path": "x.txt"}))]
    );
}

/// `"error": null`, `"usage": null`, `content: null`, empty `choices` and no `id`: an ordinary
/// answer.
#[tokio::test]
async fn chat_null_fields_and_empty_choices_are_an_ordinary_answer() {
    let server = server().await;
    let c = |delta: Value, finish: Value| {
        Chunk::data(
            json!({"error": null, "usage": null, "choices": [{"delta": delta, "finish_reason": finish}]})
                .to_string(),
        )
    };
    server.push(Reply::Stream {
        chunks: vec![
            c(json!({"role": "assistant", "content": null}), Value::Null),
            c(json!({"content": "Hel"}), Value::Null),
            Chunk::data(json!({"choices": []}).to_string()),
            c(
                json!({"content": "lo", "reasoning_content": "hm"}),
                Value::Null,
            ),
            c(json!({"content": null}), json!("stop")),
            Chunk::data(
                json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": null}})
                    .to_string(),
            ),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(text_of(&events), "Hello");
    assert_eq!(msg.text(), "Hello");
    assert!(
        events.contains(&ProviderEvent::Usage(aibuddy_provider::Usage {
            input_tokens: 3,
            ..Default::default()
        }))
    );
}

/// OpenRouter reports an upstream failure mid-stream as `{"error": {"code": 502, ...}}`: a
/// stream error that is retried like the HTTP status it names.
#[tokio::test]
async fn chat_numeric_error_code_mid_stream_is_retryable() {
    let server = server().await;
    server.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"content": "partial"}), Value::Null),
            Chunk::data(json!({"error": {"code": 502, "message": "Provider returned error"}, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}).to_string()),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let err = stream_error(&p, CHAT).await;
    match &err {
        ProviderError::Stream {
            error_type,
            message,
        } => assert_eq!(
            (error_type.as_str(), message.as_str()),
            ("502", "Provider returned error")
        ),
        other => panic!("{other:?}"),
    }
    assert!(err.is_retryable());
    assert_eq!(err.stage(), Stage::Execution);
}

/// An error object answered with status 200 (proxies do) is the error, on every format, and a
/// JSON body without the answer's content is malformed, not an empty answer.
#[tokio::test]
async fn a_200_error_body_is_an_error_not_an_empty_answer() {
    for kind in KINDS {
        let server = server().await;
        let body = match kind {
            ProviderKind::Anthropic => {
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            }
            _ => json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        };
        server.push(Reply::Json { body, served: None });
        let p = provider(&server, kind, Presentation::ActiveTools);
        let err = stream_error(&p, kind).await;
        assert!(
            matches!(&err, ProviderError::Stream { error_type, message }
                if error_type == "overloaded_error" && message == "Overloaded"),
            "{kind:?}: {err:?}"
        );
        assert!(err.is_retryable(), "{kind:?}");

        server.push(Reply::Json {
            body: json!({"id": "x", "object": "something"}),
            served: None,
        });
        let err = stream_error(&p, kind).await;
        assert!(
            matches!(err, ProviderError::Protocol(_)),
            "{kind:?}: {err:?}"
        );
        assert_eq!(err.stage(), Stage::Projection);
    }
}

/// An SSE line split across TCP reads, CRLF line ends, and an event split between its `event:`
/// and `data:` lines are reassembled.
#[tokio::test]
async fn sse_lines_split_across_reads_with_crlf() {
    let server = server().await;
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "content": [], "usage": {"input_tokens": 5}}}).to_string();
    let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "split \u{e9}t\u{e9}"}}).to_string();
    let (d1, d2) = delta.split_at(delta.find("split").unwrap() + 3);
    let pause = Chunk::Sleep(Duration::from_millis(30));
    server.push(Reply::Stream {
        chunks: vec![
            Chunk::Raw(format!("event: message_start\r\ndata: {start}\r\n\r\n")),
            pause.clone(),
            Chunk::Raw("event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\nevent: content_block_delta\r\n".into()),
            pause.clone(),
            Chunk::Raw(format!("data: {d1}")),
            pause.clone(),
            Chunk::Raw(format!("{d2}\r")),
            pause.clone(),
            Chunk::Raw("\n\r\n".into()),
            Chunk::Raw("event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n".into()),
            Chunk::Raw("event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":null}}\r\n\r\n".into()),
            Chunk::Raw("event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n".into()),
        ],
        served: None,
    });
    let kind = ProviderKind::Anthropic;
    let p = provider(&server, kind, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(kind)).await;
    assert_eq!(text_of(&events), "split \u{e9}t\u{e9}");
    assert_eq!(msg.text(), "split \u{e9}t\u{e9}");
}

/// Anthropic-compatible servers that number blocks from 1, and event types and delta types the
/// client does not use (they are ignored, not failures); a tool block whose
/// `content_block_stop` never comes still gets its streamed input.
#[tokio::test]
async fn anthropic_block_numbering_unknown_events_and_a_missing_block_stop() {
    let server = server().await;
    let ev = |name: &str, data: Value| Chunk::event(name, data);
    server.push(Reply::Stream {
        chunks: vec![
            ev("message_start", json!({"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": null}}})),
            ev("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
            ev("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Reading."}})),
            ev("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "some_future_delta", "x": 1}})),
            ev("some_future_event", json!({"type": "some_future_event"})),
            ev("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
            ev("content_block_start", json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}})),
            ev("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}})),
            ev("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"a.txt\"}"}})),
            ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})),
            ev("message_stop", json!({"type": "message_stop"})),
        ],
        served: None,
    });
    let kind = ProviderKind::Anthropic;
    let p = provider(&server, kind, Presentation::ActiveTools);
    let (_, msg) = step(&p, &ask(kind)).await;
    assert_eq!(msg.text(), "Reading.");
    assert_eq!(
        calls(&msg),
        vec![(
            "toolu_1".into(),
            "read_file".into(),
            json!({"path": "a.txt"})
        )]
    );
    assert!(matches!(msg.content[0], ContentBlock::Text { .. }));
}

/// Responses events the client does not use are ignored; a stream cut inside an event is a
/// retryable transport error on every format (Chat Completions included, with no finish reason).
#[tokio::test]
async fn unused_responses_events_and_a_body_cut_mid_event() {
    let server = server().await;
    let ev = |name: &str, data: Value| Chunk::event(name, data);
    let kind = ProviderKind::OpenAiResponses;
    server.push(Reply::Stream {
        chunks: vec![
            ev("response.created", json!({"type": "response.created", "response": {"id": "r", "output": []}})),
            ev("response.in_progress", json!({"type": "response.in_progress", "response": {"id": "r"}})),
            ev("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta", "delta": "thinking"})),
            ev("response.output_item.added", json!({"type": "response.output_item.added", "item": {"type": "message", "id": "m1", "content": []}})),
            ev("response.content_part.added", json!({"type": "response.content_part.added", "part": {"type": "output_text", "text": ""}})),
            ev("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "m1", "delta": "Hi"})),
            ev("response.output_text.done", json!({"type": "response.output_text.done", "text": "Hi"})),
            ev("response.some_future_event", json!({"type": "response.some_future_event"})),
            ev("response.output_item.done", json!({"type": "response.output_item.done", "item": {"type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}})),
            ev("response.completed", json!({"type": "response.completed", "response": {"id": "r", "output": [], "usage": null}})),
        ],
        served: None,
    });
    let p = provider(&server, kind, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(kind)).await;
    assert_eq!(
        (text_of(&events).as_str(), msg.text().as_str()),
        ("Hi", "Hi")
    );

    for kind in KINDS {
        let server = common::server().await;
        let first = match kind {
            ProviderKind::Anthropic => {
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n"
            }
            ProviderKind::OpenAiResponses => {
                "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n"
            }
            ProviderKind::OpenAiChat => {
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
            }
        };
        server.push(Reply::Stream {
            chunks: vec![
                Chunk::Raw(first.into()),
                Chunk::Raw("data: {\"choices\":[{\"index\":0,\"del".into()),
            ],
            served: None,
        });
        let p = provider(&server, kind, Presentation::ActiveTools);
        let err = stream_error(&p, kind).await;
        assert!(
            matches!(err, ProviderError::Transport { .. }),
            "{kind:?}: {err:?}"
        );
        assert!(err.is_retryable());
    }
}

/// Error events without the usual fields still say what happened (never an empty message), on
/// every format: Responses `response.failed` with `"error": null`, an Anthropic `error` event
/// without a message, and a Chat Completions `event: error` whose data is plain text.
#[tokio::test]
async fn error_events_without_the_usual_fields_still_say_what_happened() {
    let cases = [
        (
            ProviderKind::OpenAiResponses,
            Chunk::event(
                "response.failed",
                json!({"type": "response.failed", "response": {"id": "r", "status": "failed", "error": null}}),
            ),
            "\"status\":\"failed\"",
        ),
        (
            ProviderKind::Anthropic,
            Chunk::event(
                "error",
                json!({"type": "error", "error": {"type": "api_error", "details": "upstream reset"}}),
            ),
            "upstream reset",
        ),
        (
            ProviderKind::OpenAiChat,
            Chunk::Event {
                name: Some("error".into()),
                data: "model crashed: out of memory".into(),
            },
            "model crashed: out of memory",
        ),
    ];
    for (kind, event, says) in cases {
        let server = common::server().await;
        server.push(Reply::Stream {
            chunks: vec![event],
            served: None,
        });
        let p = provider(&server, kind, Presentation::ActiveTools);
        let err = stream_error(&p, kind).await;
        match &err {
            ProviderError::Stream {
                error_type,
                message,
            } => {
                assert!(!error_type.is_empty(), "{kind:?}: {err:?}");
                assert!(message.contains(says), "{kind:?}: {err:?}");
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        assert_eq!(err.stage(), Stage::Execution);
    }
}

fn body(status: u16, content_type: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Body {
        status,
        content_type: content_type.into(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.into(),
    }
}

/// HTTP errors without a JSON body: a proxy's HTML page (with `retry-after` as an HTTP date in
/// the past) keeps its status and retry class, an empty body says so, and a 200 HTML page where
/// a stream belongs (a base URL naming a web site) is a Projection error that names it, not a
/// connection failure retried five times.
#[tokio::test]
async fn error_bodies_that_are_not_json() {
    for kind in KINDS {
        let server = common::server().await;
        server.push(body(
            502,
            "text/html; charset=utf-8",
            &[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        ));
        server.push(body(503, "text/plain", &[], ""));
        server.push(body(
            200,
            "text/html",
            &[],
            "<!doctype html><title>Welcome</title>",
        ));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let err = stream_error(&p, kind).await;
        match &err {
            ProviderError::Http {
                status: 502,
                message,
                retry_after,
                ..
            } => {
                assert!(message.contains("502 Bad Gateway"), "{kind:?}: {message}");
                assert_eq!(*retry_after, Some(Duration::ZERO));
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        assert!(err.is_retryable());
        let err = stream_error(&p, kind).await;
        assert!(
            matches!(&err, ProviderError::Http { status: 503, message, .. } if message == "(empty response body)"),
            "{kind:?}: {err:?}"
        );
        let err = stream_error(&p, kind).await;
        assert!(
            matches!(&err, ProviderError::Protocol(m) if m.contains("text/html")),
            "{kind:?}: {err:?}"
        );
        assert!(!err.is_retryable());
        assert_eq!(err.stage(), Stage::Projection);
    }
}

/// A proxy's "upstream" failure is not the server refusing to stream: the error stays the
/// retryable 503 and the route keeps streaming (only a refusal switches Chat Completions to
/// unstreamed requests).
#[tokio::test]
async fn an_upstream_failure_is_not_a_streaming_refusal() {
    let server = common::server().await;
    server.push(body(
        503,
        "text/plain",
        &[],
        "upstream connect error or disconnect/reset before headers",
    ));
    server.push(id_less_call_stream("a.txt"));
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let err = stream_error(&p, CHAT).await;
    assert!(
        matches!(&err, ProviderError::Http { status: 503, .. }),
        "{err:?}"
    );
    assert!(err.is_retryable());
    let (_, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(calls(&msg).len(), 1);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.body["stream"] == json!(true)));
}

/// Bytes that are not UTF-8 inside a streamed text (a local server cutting a character between
/// tokens) become U+FFFD; the rest of the stream, a character split between two reads included,
/// is read as usual.
#[tokio::test]
async fn invalid_utf8_in_a_stream_does_not_wedge_it() {
    let server = common::server().await;
    let mut bad =
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff\xfe byte \xe2\x82"
            .to_vec();
    bad.extend_from_slice(b"\"}}]}\n\n");
    let euro = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" \u{20ac}5\"}}]}\n\n";
    let (e1, e2) = euro.as_bytes().split_at(euro.find('\u{20ac}').unwrap() + 1);
    server.push(Reply::Stream {
        chunks: vec![
            Chunk::Bytes(bad),
            Chunk::Sleep(Duration::from_millis(30)),
            Chunk::Bytes(e1.to_vec()),
            Chunk::Sleep(Duration::from_millis(30)),
            Chunk::Bytes(e2.to_vec()),
            chunk(json!({}), json!("stop")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        text_of(&events),
        "bad \u{fffd}\u{fffd} byte \u{fffd} \u{20ac}5"
    );
    assert_eq!(msg.text(), text_of(&events));
}

/// `content` as an array of parts (Mistral's reasoning models stream `thinking` and `text`
/// parts), streamed and unstreamed: the text parts are the answer.
#[tokio::test]
async fn chat_content_as_an_array_of_parts() {
    let server = common::server().await;
    server.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}]}), Value::Null),
            chunk(json!({"content": [{"type": "text", "text": "The answer"}]}), Value::Null),
            chunk(json!({"content": " is 4."}), json!("stop")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    server.push(Reply::Json {
        body: json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": [{"type": "thinking", "thinking": []}, {"type": "text", "text": "Unstreamed."}]}}]}),
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        (text_of(&events).as_str(), msg.text().as_str()),
        ("The answer is 4.", "The answer is 4.")
    );
    let (events, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        (text_of(&events).as_str(), msg.text().as_str()),
        ("Unstreamed.", "Unstreamed.")
    );
}

/// A refusal is the model's answer: streamed in its own field (Chat `delta.refusal`, Responses
/// `response.refusal.delta` and a `refusal` content part), it is shown and kept, not dropped as
/// an empty answer.
#[tokio::test]
async fn a_refusal_is_shown_not_dropped() {
    let says = "I can't help with that.";
    let server = common::server().await;
    server.push(Reply::Stream {
        chunks: vec![
            chunk(
                json!({"role": "assistant", "content": null, "refusal": "I can't "}),
                Value::Null,
            ),
            chunk(json!({"refusal": "help with that."}), json!("stop")),
            Chunk::data("[DONE]"),
        ],
        served: None,
    });
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(CHAT)).await;
    assert_eq!(
        (text_of(&events).as_str(), msg.text().as_str()),
        (says, says)
    );
    // It finishes as `stop`, but it is a refusal: the step says so.
    assert!(
        events.contains(&ProviderEvent::Stop(aibuddy_provider::StopReason::Refusal)),
        "{events:?}"
    );

    let kind = ProviderKind::OpenAiResponses;
    let server = common::server().await;
    let item = json!({"type": "message", "id": "m1", "role": "assistant", "status": "completed",
        "content": [{"type": "refusal", "refusal": says}]});
    server.push(Reply::Stream {
        chunks: vec![
            Chunk::event("response.created", json!({"type": "response.created", "response": {"id": "r"}})),
            Chunk::event("response.output_item.added", json!({"type": "response.output_item.added", "item": {"type": "message", "id": "m1", "content": []}})),
            Chunk::event("response.refusal.delta", json!({"type": "response.refusal.delta", "item_id": "m1", "delta": says})),
            Chunk::event("response.refusal.done", json!({"type": "response.refusal.done", "item_id": "m1", "refusal": says})),
            Chunk::event("response.output_item.done", json!({"type": "response.output_item.done", "item": item})),
            Chunk::event("response.completed", json!({"type": "response.completed", "response": {"id": "r", "output": [item]}})),
        ],
        served: None,
    });
    let p = provider(&server, kind, Presentation::ActiveTools);
    let (events, msg) = step(&p, &ask(kind)).await;
    assert_eq!(
        (text_of(&events).as_str(), msg.text().as_str()),
        (says, says)
    );
    assert!(
        events.contains(&ProviderEvent::Stop(aibuddy_provider::StopReason::Refusal)),
        "{events:?}"
    );
}

/// OpenAI's newer models refuse `max_tokens` on Chat Completions and ask for
/// `max_completion_tokens`: the request is sent again once with the new name, and the route keeps
/// using it (other servers keep getting `max_tokens`).
#[tokio::test]
async fn chat_max_completion_tokens_when_max_tokens_is_refused() {
    let server = common::server().await;
    server.push(Reply::Error {
        status: 400,
        headers: vec![],
        body: json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
    });
    server.push(aibuddy_provider::testing::Turn::text("first").reply(CHAT));
    server.push(aibuddy_provider::testing::Turn::text("second").reply(CHAT));
    let p = provider(&server, CHAT, Presentation::ActiveTools);
    let (events, _) = step(&p, &ask(CHAT)).await;
    assert_eq!(text_of(&events), "first");
    let (events, _) = step(&p, &ask(CHAT)).await;
    assert_eq!(text_of(&events), "second");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].body["max_tokens"], json!(1024));
    for r in &reqs[1..] {
        assert_eq!(r.body["max_completion_tokens"], json!(1024));
        assert!(r.body.get("max_tokens").is_none());
    }
    assert_eq!(
        p.request_body(&ask(CHAT)).unwrap()["max_completion_tokens"],
        json!(1024)
    );
    server.assert_clean();
}
