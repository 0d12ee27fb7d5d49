//! Native deferral (Anthropic `defer_loading` + `tool_reference`; OpenAI `tool_search_output`) and
//! the activeTools shape, over real HTTP with the fake server checking every request.

use crate::common;

use aibuddy_provider::testing::{Chunk, Reply, Turn};
use aibuddy_provider::{
    CallKind, ContentBlock, Message, Presentation, ProviderEvent, ProviderKind, ResultBlock,
};
use common::*;
use serde_json::{Value, json};

fn reference_result(id: &str, name: &str) -> Message {
    Message::tool_results(vec![ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: vec![ResultBlock::ToolReference {
            tool_name: name.into(),
        }],
        is_error: false,
    }])
}

fn tool_entry<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in tools"))
}

#[tokio::test]
async fn anthropic_native_defer_loading_and_tool_reference_round_trip() {
    let kind = ProviderKind::Anthropic;
    let server = server().await;
    server.push(
        Turn::default()
            .call("toolu_s", "tool_search", json!({"query": "weather"}))
            .reply(kind),
    );
    server.push(
        Turn::default()
            .call("toolu_w", "get_weather", json!({"location": "SF"}))
            .reply(kind),
    );
    server.push(Turn::text("Sunny.").reply(kind));
    let p = provider(&server, kind, Presentation::Native);
    let mut messages = vec![Message::user_text("weather in SF?")];
    let (_, m1) = step(&p, &request(kind, Presentation::Native, messages.clone())).await;
    messages.push(m1);
    messages.push(reference_result("toolu_s", "get_weather"));
    let (_, m2) = step(&p, &request(kind, Presentation::Native, messages.clone())).await;
    assert_eq!(m2.tool_calls().next().map(|c| c.1), Some("get_weather"));
    messages.push(m2);
    messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
        "toolu_w", "sunny",
    )]));
    step(&p, &request(kind, Presentation::Native, messages)).await;

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let first = &reqs[0].body;
    assert_eq!(
        tool_entry(first, "get_weather")["defer_loading"],
        json!(true)
    );
    assert_eq!(
        tool_entry(first, "list_issues")["defer_loading"],
        json!(true)
    );
    assert!(
        tool_entry(first, "read_file")
            .get("defer_loading")
            .is_none()
    );
    assert!(
        tool_entry(first, "tool_search")
            .get("defer_loading")
            .is_none()
    );
    // The tools array stays the same for the whole run.
    for r in &reqs {
        assert_eq!(r.body["tools"], first["tools"]);
    }
    let result = &reqs[1].body["messages"][2]["content"][0];
    assert_eq!(
        result,
        &json!({"type": "tool_result", "tool_use_id": "toolu_s", "content": [{"type": "tool_reference", "tool_name": "get_weather"}]})
    );
    server.assert_clean();
}

/// Provider-side blocks (`server_tool_use`, `tool_search_tool_result`) are kept opaque, replayed
/// unchanged, and never answered.
#[tokio::test]
async fn anthropic_server_tool_blocks_go_back_unchanged_and_unanswered() {
    let kind = ProviderKind::Anthropic;
    let server = server().await;
    let srv = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_regex", "input": {"pattern": "weather"}});
    let found = json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01", "content": {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}});
    let call = json!({"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"location": "SF"}});
    let ev = |name: &str, v: Value| Chunk::event(name, v);
    let chunks = vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_regex", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"pattern\": \"weather\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": found}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"location\": \"SF\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ];
    server.push(Reply::Stream {
        chunks,
        served: Some(json!([srv, found, call])),
    });
    server.push(Turn::text("Sunny.").reply(kind));
    let p = provider(&server, kind, Presentation::Native);
    let mut messages = vec![Message::user_text("weather?")];
    let (_, m) = step(&p, &request(kind, Presentation::Native, messages.clone())).await;
    assert_eq!(
        m.tool_calls().count(),
        1,
        "only the client call needs an answer"
    );
    assert!(
        matches!(&m.content[0], ContentBlock::Opaque { id: Some(id), .. } if id == "srvtoolu_01")
    );
    messages.push(m);
    messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
        "toolu_02", "sunny",
    )]));
    step(&p, &request(kind, Presentation::Native, messages)).await;
    let second = &server.requests()[1].body;
    assert_eq!(second["messages"][1]["content"], json!([srv, found, call]));
    server.assert_clean();
}

#[tokio::test]
async fn openai_native_client_tool_search_answers_with_tool_search_output() {
    let kind = ProviderKind::OpenAiResponses;
    let server = server().await;
    server.push(
        Turn::default()
            .search_call("search-1", json!({"query": "weather", "limit": 1}))
            .reply(kind),
    );
    server.push(
        Turn::default()
            .call("call_w", "get_weather", json!({"location": "SF"}))
            .reply(kind),
    );
    server.push(Turn::text("Sunny.").reply(kind));
    let p = provider(&server, kind, Presentation::Native);
    let mut messages = vec![Message::user_text("weather in SF?")];
    let (events, m1) = step(&p, &request(kind, Presentation::Native, messages.clone())).await;
    assert!(events.iter().any(|e| matches!(e, ProviderEvent::ToolCallStart { kind: CallKind::ToolSearch, id, .. } if id == "search-1")));
    let (id, name, input, ck) = m1.tool_calls().next().unwrap();
    assert_eq!(
        (id, name, input, ck),
        (
            "search-1",
            "tool_search",
            &json!({"query": "weather", "limit": 1}),
            CallKind::ToolSearch
        )
    );
    messages.push(m1);
    messages.push(reference_result("search-1", "get_weather"));
    let (_, m2) = step(&p, &request(kind, Presentation::Native, messages.clone())).await;
    messages.push(m2);
    messages.push(Message::tool_results(vec![ContentBlock::tool_result_text(
        "call_w", "sunny",
    )]));
    step(&p, &request(kind, Presentation::Native, messages)).await;

    let reqs = server.requests();
    let first = &reqs[0].body;
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(
        tools[1],
        json!({"type": "tool_search", "execution": "client", "description": "tool_search does things", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}})
    );
    assert_eq!(
        tool_entry(first, "get_weather")["defer_loading"],
        json!(true)
    );
    assert!(
        tool_entry(first, "read_file")
            .get("defer_loading")
            .is_none()
    );
    let output = reqs[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "tool_search_output")
        .cloned()
        .unwrap();
    assert_eq!(
        output,
        json!({"type": "tool_search_output", "call_id": "search-1", "execution": "client", "status": "completed",
        "tools": [{"type": "function", "name": "get_weather", "description": "get_weather does things",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}, "strict": false, "defer_loading": true}]})
    );
    for r in &reqs {
        assert_eq!(r.body["tools"], first["tools"]);
    }
    server.assert_clean();
}

#[tokio::test]
async fn active_tools_sends_only_active_schemas_and_plain_search_results() {
    for kind in KINDS {
        let server = server().await;
        server.push(
            Turn::default()
                .call("call_s", "tool_search", json!({"query": "weather"}))
                .reply(kind),
        );
        server.push(Turn::text("found it").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let mut messages = vec![Message::user_text("weather?")];
        let (_, m) = step(
            &p,
            &request(kind, Presentation::ActiveTools, messages.clone()),
        )
        .await;
        messages.push(m);
        messages.push(reference_result("call_s", "get_weather"));
        // The loop activates the found tool for the next step.
        let mut req = request(kind, Presentation::ActiveTools, messages);
        req.tools
            .iter_mut()
            .filter(|t| t.name == "get_weather")
            .for_each(|t| t.deferred = false);
        step(&p, &req).await;

        let reqs = server.requests();
        let names = |b: &Value| -> Vec<String> {
            b["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    t.get("name")
                        .or_else(|| t.pointer("/function/name"))
                        .and_then(Value::as_str)
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(
            names(&reqs[0].body),
            vec!["read_file", "tool_search"],
            "{kind:?}"
        );
        assert_eq!(
            names(&reqs[1].body),
            vec!["read_file", "tool_search", "get_weather"],
            "{kind:?}"
        );
        for r in &reqs {
            assert!(!r.raw_body.contains("defer_loading"), "{kind:?}");
            assert!(!r.raw_body.contains("tool_reference"), "{kind:?}");
            assert!(!r.raw_body.contains("tool_search_output"), "{kind:?}");
        }
        assert!(
            reqs[1]
                .raw_body
                .contains("Tools found (now available): get_weather"),
            "{kind:?}"
        );
        server.assert_clean();
    }
}
