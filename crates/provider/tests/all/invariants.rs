//! The fake server catches protocol violations: bad conversations sent over HTTP are reported
//! with their rule and request body, and each rule is exercised on hand-made bodies.

use crate::common;

use aibuddy_provider::testing::{Turn, check_request, valid_tool_name};
use aibuddy_provider::{ContentBlock, Message, Presentation, ProviderKind, ResultBlock};
use common::*;
use serde_json::{Value, json};

fn rules(kind: ProviderKind, body: Value) -> Vec<&'static str> {
    let headers = match kind {
        ProviderKind::Anthropic => vec![("x-api-key".to_string(), KEY.to_string())],
        _ => vec![("authorization".to_string(), format!("Bearer {KEY}"))],
    };
    let mut r: Vec<_> = check_request(kind, &headers, &body.to_string(), Some(KEY))
        .into_iter()
        .map(|v| v.rule)
        .collect();
    r.sort();
    r.dedup();
    r
}

/// Sends `messages` through the real client and returns the rules the server reported.
async fn send_bad(
    kind: ProviderKind,
    presentation: Presentation,
    messages: Vec<Message>,
) -> Vec<&'static str> {
    let server = server().await;
    server.check_replay(false);
    server.push(Turn::text("ok").reply(kind));
    let p = provider(&server, kind, presentation);
    let _ = step(&p, &request(kind, presentation, messages)).await;
    let v = server.violations();
    assert!(
        v.iter()
            .all(|v| v.body.contains("\"messages\"") || v.body.contains("\"input\"")),
        "violations carry the request body"
    );
    let mut r: Vec<_> = v.into_iter().map(|v| v.rule).collect();
    r.sort();
    r.dedup();
    r
}

fn assistant_call(id: &str) -> Message {
    Message {
        role: aibuddy_provider::Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: json!({}),
            kind: Default::default(),
        }],
        raw: None,
    }
}

#[tokio::test]
async fn a_missing_or_unknown_tool_result_is_reported_on_each_route() {
    for kind in KINDS {
        let messages = vec![
            Message::user_text("go"),
            assistant_call("call_1"),
            Message::tool_results(vec![ContentBlock::tool_result_text("call_zzz", "stray")]),
        ];
        let got = send_bad(kind, Presentation::ActiveTools, messages).await;
        assert_eq!(
            got,
            vec!["one_result_per_call", "result_names_known_call"],
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_duplicated_result_is_reported() {
    for kind in KINDS {
        let messages = vec![
            Message::user_text("go"),
            assistant_call("call_1"),
            Message::tool_results(vec![
                ContentBlock::tool_result_text("call_1", "a"),
                ContentBlock::tool_result_text("call_1", "b"),
            ]),
        ];
        let got = send_bad(kind, Presentation::ActiveTools, messages).await;
        assert_eq!(got, vec!["one_result_per_call"], "{kind:?}");
    }
}

#[tokio::test]
async fn an_unknown_tool_reference_is_reported_on_native_anthropic() {
    let messages = vec![
        Message::user_text("go"),
        Message {
            role: aibuddy_provider::Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "tool_search".into(),
                input: json!({}),
                kind: Default::default(),
            }],
            raw: None,
        },
        Message::tool_results(vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: vec![ResultBlock::ToolReference {
                tool_name: "no_such_tool".into(),
            }],
            is_error: false,
        }]),
    ];
    let got = send_bad(ProviderKind::Anthropic, Presentation::Native, messages).await;
    assert_eq!(got, vec!["tool_reference_known"]);
}

#[tokio::test]
async fn assistant_content_altered_before_replay_is_reported() {
    let kind = ProviderKind::Anthropic;
    let server = server().await;
    server.push(Turn::text("original words").reply(kind));
    server.push(Turn::text("ok").reply(kind));
    let p = provider(&server, kind, Presentation::ActiveTools);
    let mut messages = vec![Message::user_text("hi")];
    let (_, mut m) = step(
        &p,
        &request(kind, Presentation::ActiveTools, messages.clone()),
    )
    .await;
    server.assert_clean();
    m.raw = None;
    m.content = vec![ContentBlock::Text {
        text: "edited words".into(),
    }];
    messages.push(m);
    messages.push(Message::user_text("and?"));
    step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
    let v = server.violations();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].rule, "assistant_content_as_received");
    assert!(v[0].body.contains("edited words"));
}

#[test]
#[should_panic(expected = "protocol violation")]
fn assert_clean_fails_the_test_with_the_body() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let kind = ProviderKind::OpenAiChat;
        let server = server().await;
        server.push(Turn::text("ok").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let mut req = request(
            kind,
            Presentation::ActiveTools,
            vec![Message::user_text("hi")],
        );
        req.tools[0].name = "bad name!".into();
        step(&p, &req).await;
        server.assert_clean();
    });
}

#[test]
fn tool_rules() {
    let k = ProviderKind::Anthropic;
    let ok = json!({"type": "object", "properties": {}});
    assert!(
        rules(
            k,
            json!({"messages": [], "tools": [{"name": "a", "input_schema": ok}]})
        )
        .is_empty()
    );
    assert_eq!(
        rules(
            k,
            json!({"messages": [], "tools": [{"name": "a.b", "input_schema": ok}]})
        ),
        vec!["tool_name"]
    );
    assert_eq!(
        rules(
            k,
            json!({"messages": [], "tools": [{"name": "a", "input_schema": {"type": "string"}}]})
        ),
        vec!["schema_object"]
    );
    assert_eq!(
        rules(
            k,
            json!({"messages": [], "tools": [{"name": "a", "input_schema": ok, "defer_loading": true}]})
        ),
        vec!["one_tool_not_deferred"]
    );
    let r = ProviderKind::OpenAiResponses;
    assert_eq!(
        rules(
            r,
            json!({"input": [], "tools": [{"type": "function", "name": "a", "parameters": ok, "defer_loading": true}]})
        ),
        vec!["one_tool_not_deferred"]
    );
    assert!(rules(r, json!({"input": [], "tools": [{"type": "tool_search", "execution": "client"}, {"type": "function", "name": "a", "parameters": ok, "defer_loading": true}]})).is_empty());
    assert_eq!(
        rules(
            ProviderKind::OpenAiChat,
            json!({"messages": [], "tools": [{"type": "function", "function": {"name": "x", "parameters": []}}]})
        ),
        vec!["schema_object"]
    );
    assert!(
        valid_tool_name(&"a".repeat(64))
            && !valid_tool_name(&"a".repeat(65))
            && !valid_tool_name("")
    );
}

#[test]
fn key_rules() {
    let body = json!({"messages": [{"role": "user", "content": format!("my key is {KEY}")}]});
    assert_eq!(
        rules(ProviderKind::Anthropic, body),
        vec!["key_only_in_headers"]
    );
    let missing = check_request(
        ProviderKind::OpenAiChat,
        &[],
        r#"{"messages": []}"#,
        Some(KEY),
    );
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].rule, "key_only_in_headers");
}

#[test]
fn server_tool_and_client_only_rules() {
    let k = ProviderKind::Anthropic;
    let body = json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "srvtoolu_1", "content": "x"}]}]});
    assert_eq!(rules(k, body), vec!["no_result_for_server_tool"]);
    let body = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "heartbeat": true}]}]});
    assert_eq!(rules(k, body), vec!["no_client_only_fields"]);
    let body = json!({"messages": [{"role": "user", "content": [{"type": "heartbeat"}]}]});
    assert_eq!(rules(k, body), vec!["no_client_only_fields"]);
    let r = ProviderKind::OpenAiResponses;
    let body = json!({"input": [
        {"type": "tool_search_call", "call_id": "s1", "execution": "server", "arguments": {}},
        {"type": "function_call_output", "call_id": "s1", "output": "x"}]});
    assert_eq!(rules(r, body), vec!["no_result_for_server_tool"]);
    let body = json!({"input": [
        {"type": "tool_search_call", "call_id": "s1", "execution": "client", "arguments": {}},
        {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": [{"type": "function", "name": "ghost", "parameters": {"type": "object"}}]}], "tools": []});
    assert_eq!(rules(r, body), vec!["tool_reference_known"]);
    let c = ProviderKind::OpenAiChat;
    let body = json!({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    assert_eq!(rules(c, body), vec!["result_names_known_call"]);
    let body = json!({"messages": [{"role": "user", "content": "x", "display": "card"}]});
    assert_eq!(rules(c, body), vec!["no_client_only_fields"]);
}

/// What the real APIs refuse in the places where aibuddy writes its own content: a tool_result
/// after other content in a user turn, a block type a tool_result cannot hold (Anthropic); an
/// unknown field on an input item, a user message with an `output_text` part, a tool search
/// output returning a non-function (Responses). The accepted forms pass.
#[test]
fn shapes_the_apis_refuse_are_violations() {
    let k = ProviderKind::Anthropic;
    let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]});
    let ok = json!({"messages": [{"role": "user", "content": "go"}, call,
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "tool_reference", "tool_name": "x"}, {"type": "text", "text": "note"}]},
            {"type": "text", "text": "[The person approved x.]"}]}],
        "tools": [{"name": "x", "input_schema": {"type": "object"}}]});
    assert!(rules(k, ok).is_empty());
    let late = json!({"messages": [{"role": "user", "content": "go"}, call,
        {"role": "user", "content": [{"type": "text", "text": "first"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "r"}]}]});
    assert_eq!(rules(k, late), vec!["tool_results_first"]);
    let odd = json!({"messages": [{"role": "user", "content": "go"}, call,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": [{"type": "tool_use", "id": "z", "name": "x", "input": {}}]}]}]});
    assert_eq!(rules(k, odd), vec!["result_content_type"]);

    let r = ProviderKind::OpenAiResponses;
    let search = json!({"type": "tool_search_call", "call_id": "s1", "execution": "client", "arguments": {}});
    let tools = json!([{"type": "tool_search", "execution": "client"},
        {"type": "function", "name": "x", "parameters": {"type": "object"}}]);
    let ok = json!({"input": [search,
        {"type": "tool_search_output", "call_id": "s1", "execution": "client", "status": "completed", "tools": []},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "nothing matched"}]}],
        "tools": tools});
    assert!(rules(r, ok).is_empty());
    let text_field = json!({"input": [search,
        {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": [], "output": "nothing matched"}],
        "tools": tools});
    assert_eq!(rules(r, text_field), vec!["item_shape"]);
    let wrong_part = json!({"input": [{"type": "message", "role": "user",
        "content": [{"type": "output_text", "text": "x"}]}]});
    assert_eq!(rules(r, wrong_part), vec!["item_shape"]);
    let wrong_role = json!({"input": [{"type": "message", "role": "tool", "content": "x"}]});
    assert_eq!(rules(r, wrong_role), vec!["item_shape"]);
    let not_function = json!({"input": [search,
        {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": [{"type": "note", "text": "x"}]}],
        "tools": tools});
    assert!(rules(r, not_function).contains(&"item_shape"));
}

/// The replay rule with compaction: the turns after a summary must be the served turns that
/// followed it, unchanged and in order; without a summary nothing may be left out up front.
#[test]
fn a_summarized_prefix_may_be_left_out_but_nothing_else() {
    use aibuddy_provider::testing::server::replay_violation;
    let t = |n: u32| json!([{"type": "text", "text": format!("turn {n}")}]);
    let served = vec![t(0), t(1), t(2), t(3)];
    assert_eq!(replay_violation(&[t(0), t(1)], &served, false), None);
    assert_eq!(replay_violation(&[t(2), t(3)], &served, true), None);
    assert_eq!(replay_violation(&served, &served, true), None);
    // Without a summary, the earliest turns cannot go.
    assert!(replay_violation(&[t(2), t(3)], &served, false).is_some());
    // After a summary: no gap, no reordering, no change.
    assert!(replay_violation(&[t(1), t(3)], &served, true).is_some());
    assert!(replay_violation(&[t(3), t(2)], &served, true).is_some());
    let changed = json!([{"type": "text", "text": "turn 2 (edited)"}]);
    assert!(replay_violation(&[changed, t(3)], &served, true).is_some());
}

/// A 1x1 PNG, base64.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

fn image_result(media_type: &str, data: &str) -> Vec<Message> {
    vec![
        Message::user_text("show me"),
        assistant_call("c1"),
        Message::tool_results(vec![ContentBlock::ToolResult {
            tool_use_id: "c1".into(),
            content: vec![
                ResultBlock::Text {
                    text: "[image 1: image/png, 1x1]".into(),
                },
                ResultBlock::Image {
                    media_type: media_type.into(),
                    data: data.into(),
                },
            ],
            is_error: false,
        }]),
    ]
}

/// Images of tool results go out in each route's own shape (Anthropic image blocks inside the
/// tool_result, Responses `input_image` parts of the function_call_output, Chat `image_url`
/// parts of a user message after the tool messages) and pass the server's checks; an image the
/// APIs would refuse (bytes not of its media type, not base64) is reported on every route.
#[tokio::test]
async fn images_in_results_are_checked_on_each_route() {
    use aibuddy_provider::wire::{anthropic, chat, responses};
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
        ProviderKind::OpenAiChat,
    ] {
        let p = Presentation::ActiveTools;
        assert!(
            send_bad(kind, p, image_result("image/png", PNG_1X1))
                .await
                .is_empty(),
            "{kind:?}: a good image passes"
        );
        assert_eq!(
            send_bad(kind, p, image_result("image/jpeg", PNG_1X1)).await,
            vec!["image_block"],
            "{kind:?}: PNG bytes sent as JPEG"
        );
        assert_eq!(
            send_bad(kind, p, image_result("image/png", "not base64!")).await,
            vec!["image_block"],
            "{kind:?}: data that is not base64"
        );
    }
    let req = request(
        ProviderKind::Anthropic,
        Presentation::ActiveTools,
        image_result("image/png", PNG_1X1),
    );
    let a = anthropic::build_request(&req, false).unwrap();
    assert_eq!(
        a["messages"][2]["content"][0]["content"],
        json!([{"type": "text", "text": "[image 1: image/png, 1x1]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}])
    );
    let r = responses::build_request(&req, false).unwrap();
    let url = format!("data:image/png;base64,{PNG_1X1}");
    assert_eq!(
        r["input"][2]["output"],
        json!([{"type": "input_text", "text": "[image 1: image/png, 1x1]"},
            {"type": "input_image", "detail": "auto", "image_url": url}])
    );
    // Chat: tool messages take text alone; the image follows as a user message when the
    // endpoint takes images, else it is described.
    let c = chat::build_request_images(&req, false, true).unwrap();
    let m = c["messages"].as_array().unwrap();
    // messages[0] is the system prompt.
    assert_eq!(m[3]["role"], "tool");
    assert!(
        m[3]["content"]
            .as_str()
            .unwrap()
            .contains("attached in the next user message")
    );
    assert_eq!(m[4]["role"], "user");
    assert_eq!(
        m[4]["content"][1],
        json!({"type": "image_url", "image_url": {"url": url}})
    );
    let c = chat::build_request(&req, false).unwrap();
    let m = c["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4, "{c}");
    assert_eq!(
        m[3]["content"],
        format!(
            "[image 1: image/png, 1x1]\n[image content, image/png, {} base64 chars]",
            PNG_1X1.len()
        )
    );
    // An image inside a Chat tool message is what the API refuses.
    let bad = json!({"messages": [{"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "image_url", "image_url": {"url": url}}]}]});
    assert_eq!(rules(ProviderKind::OpenAiChat, bad), vec!["image_block"]);
}

/// A Responses endpoint that takes only text as a `function_call_output` refuses the images
/// there (400): the step is sent again once with the images as a user message of `input_image`
/// parts after the outputs (the output naming each image), which passes the server's checks, and
/// the route keeps that shape; the request body a run shows (`request_body`) is the one sent.
#[tokio::test]
async fn responses_images_follow_as_a_message_when_an_endpoint_refuses_them_in_outputs() {
    use aibuddy_provider::Provider as _;
    use aibuddy_provider::testing::Reply;
    let kind = ProviderKind::OpenAiResponses;
    let server = server().await;
    // The same request is sent for both steps (the served "first" is not replayed).
    server.check_replay(false);
    server.push(Reply::Error {
        status: 400,
        headers: vec![],
        body: json!({"error": {"message": "Invalid type for 'input[2].output': expected a string, but got an array instead.", "type": "invalid_request_error", "param": "input[2].output", "code": "invalid_type"}}),
    });
    server.push(Turn::text("first").reply(kind));
    server.push(Turn::text("second").reply(kind));
    let p = provider(&server, kind, Presentation::ActiveTools);
    let req = request(
        kind,
        Presentation::ActiveTools,
        image_result("image/png", PNG_1X1),
    );
    let (events, _) = step(&p, &req).await;
    assert_eq!(text_of(&events), "first");
    let (events, _) = step(&p, &req).await;
    assert_eq!(text_of(&events), "second");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0].body["input"][2]["output"].is_array());
    let url = format!("data:image/png;base64,{PNG_1X1}");
    for r in &reqs[1..] {
        let input = r.body["input"].as_array().unwrap();
        assert_eq!(input[2]["type"], "function_call_output");
        assert_eq!(
            input[2]["output"],
            json!(
                "[image 1: image/png, 1x1]\n[image 1, image/png: attached in the next user message]"
            )
        );
        assert_eq!(
            input[3],
            json!({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "[aibuddy: image 1, returned by tool call c1]"},
                {"type": "input_image", "detail": "auto", "image_url": url}]})
        );
    }
    assert_eq!(
        p.request_body(&req).unwrap()["input"],
        reqs[2].body["input"]
    );
    assert!(server.violations().is_empty(), "{:?}", server.violations());

    // Another 400 (not about the outputs), or a request without images: no second try.
    let server = common::server().await;
    server.push(Reply::Error {
        status: 400,
        headers: vec![],
        body: json!({"error": {"message": "Invalid type for 'input[2].output': expected a string, but got an array instead.", "type": "invalid_request_error"}}),
    });
    let p = provider(&server, kind, Presentation::ActiveTools);
    let plain = request(
        kind,
        Presentation::ActiveTools,
        vec![Message::user_text("hi")],
    );
    assert!(p.stream(&plain, Default::default()).await.is_err());
    assert_eq!(server.requests().len(), 1);
}
