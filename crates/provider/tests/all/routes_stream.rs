//! Each route over real HTTP against the fake server: text, one tool call, parallel tool calls,
//! the follow-up request with results, pings surfacing as events, and the key only in headers.

use crate::common;

use aibuddy_provider::testing::Turn;
use aibuddy_provider::{ContentBlock, Message, Presentation, ProviderEvent, StopReason};
use common::*;
use serde_json::json;

#[tokio::test]
async fn text_only_on_each_route() {
    for kind in KINDS {
        let server = server().await;
        server.push(Turn::text("Hello there, human.").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let req = request(
            kind,
            Presentation::ActiveTools,
            vec![Message::user_text("hi")],
        );
        let (events, msg) = step(&p, &req).await;
        assert_eq!(text_of(&events), "Hello there, human.", "{kind:?}");
        assert_eq!(msg.text(), "Hello there, human.");
        assert!(
            events.contains(&ProviderEvent::Stop(StopReason::EndTurn)),
            "{kind:?}: {events:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ProviderEvent::Usage(u) if u.output_tokens == 20)),
            "{kind:?}"
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert!(!reqs[0].raw_body.contains(KEY));
        server.assert_clean();
    }
}

/// Each format's word for why the model stopped becomes the same `StopReason`; unknown words are
/// kept verbatim.
#[tokio::test]
async fn stop_reasons_on_each_route() {
    use aibuddy_provider::ProviderKind::{Anthropic, OpenAiChat, OpenAiResponses};
    let cases = [
        (Anthropic, "max_tokens", StopReason::MaxTokens),
        (OpenAiChat, "length", StopReason::MaxTokens),
        (OpenAiResponses, "max_output_tokens", StopReason::MaxTokens),
        (Anthropic, "refusal", StopReason::Refusal),
        (Anthropic, "pause_turn", StopReason::PauseTurn),
        (Anthropic, "stop_sequence", StopReason::EndTurn),
        (
            Anthropic,
            "new_reason",
            StopReason::Other("new_reason".into()),
        ),
        (
            OpenAiChat,
            "content_filter",
            StopReason::Other("content_filter".into()),
        ),
        (
            OpenAiResponses,
            "content_filter",
            StopReason::Other("content_filter".into()),
        ),
    ];
    for (kind, word, expected) in cases {
        let server = server().await;
        server.push(Turn::text("Partial answ").stopping(word).reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let req = request(
            kind,
            Presentation::ActiveTools,
            vec![Message::user_text("hi")],
        );
        let (events, msg) = step(&p, &req).await;
        assert_eq!(msg.text(), "Partial answ", "{kind:?} {word}");
        let stops: Vec<&ProviderEvent> = events
            .iter()
            .filter(|e| matches!(e, ProviderEvent::Stop(_)))
            .collect();
        assert_eq!(stops, [&ProviderEvent::Stop(expected)], "{kind:?} {word}");
    }
    assert_eq!(StopReason::MaxTokens.as_str(), "max_tokens");
    assert_eq!(StopReason::Other("x y".into()).as_str(), "x y");
}

#[tokio::test]
async fn one_tool_call_then_result_round_trip_on_each_route() {
    for kind in KINDS {
        let server = server().await;
        server.push(
            Turn::text("Let me read it.")
                .call("call_1", "read_file", json!({"path": "a.txt"}))
                .reply(kind),
        );
        server.push(Turn::text("It says hi.").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let mut messages = vec![Message::user_text("read a.txt")];
        let (events, msg) = step(
            &p,
            &request(kind, Presentation::ActiveTools, messages.clone()),
        )
        .await;
        assert!(
            events.contains(&ProviderEvent::Stop(StopReason::ToolUse)),
            "{kind:?}"
        );
        assert!(events.iter().any(|e| matches!(e, ProviderEvent::ToolCallStart { id, name, .. } if id == "call_1" && name == "read_file")));
        assert!(
            events.iter().any(
                |e| matches!(e, ProviderEvent::ToolCallArgsDelta { id, .. } if id == "call_1")
            )
        );
        assert!(
            events.contains(&ProviderEvent::ToolCallEnd {
                id: "call_1".into(),
                name: "read_file".into(),
                input: json!({"path": "a.txt"})
            }),
            "{kind:?}: {events:?}"
        );
        let calls: Vec<_> = msg
            .tool_calls()
            .map(|(id, n, i, _)| (id.to_string(), n.to_string(), i.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![(
                "call_1".into(),
                "read_file".into(),
                json!({"path": "a.txt"})
            )]
        );
        messages.push(msg);
        messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
            "call_1", "hi",
        )]));
        let (events, _) = step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
        assert_eq!(text_of(&events), "It says hi.");
        // The server checked pairing and that the assistant turn came back exactly as served.
        assert_eq!(server.requests().len(), 2);
        server.assert_clean();
    }
}

#[tokio::test]
async fn parallel_tool_calls_on_each_route() {
    for kind in KINDS {
        let server = server().await;
        server.push(
            Turn::default()
                .call("call_a", "read_file", json!({"path": "a"}))
                .call("call_b", "read_file", json!({"path": "b"}))
                .reply(kind),
        );
        server.push(Turn::text("done").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let mut messages = vec![Message::user_text("read both")];
        let (events, msg) = step(
            &p,
            &request(kind, Presentation::ActiveTools, messages.clone()),
        )
        .await;
        let ends: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCallEnd { id, input, .. } => Some((id.clone(), input.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            ends,
            vec![
                ("call_a".into(), json!({"path": "a"})),
                ("call_b".into(), json!({"path": "b"}))
            ],
            "{kind:?}"
        );
        assert_eq!(msg.tool_calls().count(), 2);
        messages.push(msg);
        messages.push(Message::tool_results(vec![
            ContentBlock::tool_result_text("call_a", "A"),
            ContentBlock::tool_result_text("call_b", "B"),
        ]));
        step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
        server.assert_clean();
    }
}

#[tokio::test]
async fn every_keepalive_surfaces_as_an_event() {
    for kind in KINDS {
        let server = server().await;
        server.push(Turn::text("abcdef").with_pings().reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let (events, _) = step(
            &p,
            &request(
                kind,
                Presentation::ActiveTools,
                vec![Message::user_text("hi")],
            ),
        )
        .await;
        let pings = events
            .iter()
            .filter(|e| matches!(e, ProviderEvent::Ping))
            .count();
        // One keep-alive after the start and one after each of the two text deltas.
        assert!(pings >= 3, "{kind:?}: {pings} pings in {events:?}");
        server.assert_clean();
    }
}

#[tokio::test]
async fn the_key_travels_only_in_the_auth_header() {
    for kind in KINDS {
        let server = server().await;
        server.push(Turn::text("ok").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        step(
            &p,
            &request(
                kind,
                Presentation::ActiveTools,
                vec![Message::user_text("hi")],
            ),
        )
        .await;
        let r = &server.requests()[0];
        assert!(!r.raw_body.contains(KEY));
        let auth: Vec<_> = r
            .headers
            .iter()
            .filter(|(_, v)| v.contains(KEY))
            .map(|(n, _)| n.as_str())
            .collect();
        let expected = if kind == aibuddy_provider::ProviderKind::Anthropic {
            "x-api-key"
        } else {
            "authorization"
        };
        assert_eq!(auth, vec![expected], "{kind:?}");
        assert!(!format!("{p:?}").contains(KEY));
        server.assert_clean();
    }
}

/// A server that ignores `stream: true` and answers JSON still yields the same events, and the
/// message goes back exactly as received.
#[tokio::test]
async fn a_json_answer_to_a_stream_request_is_accepted() {
    let kind = aibuddy_provider::ProviderKind::Anthropic;
    let server = server().await;
    let content = json!([{"type": "text", "text": "plain"}, {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "z"}}]);
    server.push(aibuddy_provider::testing::Reply::Json {
        body: json!({"id": "msg_j", "type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}}),
        served: Some(content.clone()),
    });
    server.push(Turn::text("ok").reply(kind));
    let p = provider(&server, kind, Presentation::ActiveTools);
    let mut messages = vec![Message::user_text("go")];
    let (events, m) = step(
        &p,
        &request(kind, Presentation::ActiveTools, messages.clone()),
    )
    .await;
    assert_eq!(text_of(&events), "plain");
    assert!(events.contains(&ProviderEvent::Stop(StopReason::ToolUse)));
    assert!(events.contains(&ProviderEvent::ToolCallEnd {
        id: "toolu_9".into(),
        name: "read_file".into(),
        input: json!({"path": "z"})
    }));
    messages.push(m);
    messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
        "toolu_9", "zz",
    )]));
    step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
    server.assert_clean();
}

/// Responses reasoning items (encrypted, opaque to us) are replayed unchanged with `store: false`.
#[tokio::test]
async fn responses_reasoning_items_are_replayed_unchanged() {
    use aibuddy_provider::testing::{Chunk, Reply};
    let kind = aibuddy_provider::ProviderKind::OpenAiResponses;
    let server = server().await;
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"});
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_r", "name": "read_file", "arguments": "{\"path\":\"q\"}", "status": "completed"});
    let ev = |name: &str, v: serde_json::Value| Chunk::event(name, v);
    server.push(Reply::Stream {
        chunks: vec![
            ev("response.created", json!({"type": "response.created", "response": {"id": "resp_1"}})),
            ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning})),
            ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_r", "name": "read_file", "arguments": ""}})),
            ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"path\":\"q\"}"})),
            ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 1, "item": call})),
            ev("response.completed", json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [reasoning, call], "usage": {"input_tokens": 1, "output_tokens": 2}}})),
        ],
        served: Some(json!([reasoning, call])),
    });
    server.push(Turn::text("ok").reply(kind));
    let p = provider(&server, kind, Presentation::ActiveTools);
    let mut messages = vec![Message::user_text("go")];
    let (events, m) = step(
        &p,
        &request(kind, Presentation::ActiveTools, messages.clone()),
    )
    .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ProviderEvent::ToolCallArgsDelta { id, .. } if id == "call_r"))
    );
    assert_eq!(m.tool_calls().count(), 1);
    messages.push(m);
    messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
        "call_r", "qq",
    )]));
    step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
    let second = &server.requests()[1].body;
    assert_eq!(second["store"], json!(false));
    assert_eq!(second["input"][1], reasoning);
    server.assert_clean();
}
