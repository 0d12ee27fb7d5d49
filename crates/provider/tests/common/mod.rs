//! Shared helpers for the provider tests (real HTTP against the fake server).
#![allow(dead_code)]

use std::time::Duration;

use aibuddy_provider::testing::FakeServer;
use aibuddy_provider::{
    ApiKey, EventStream, HttpProvider, Message, ModelRequest, Presentation, Provider,
    ProviderError, ProviderEvent, ProviderKind, Route, ToolSpec,
};
use futures::StreamExt;
use serde_json::json;

pub const KEY: &str = "sk-test-SECRET-0123456789abcdef";
pub const KINDS: [ProviderKind; 3] = [
    ProviderKind::Anthropic,
    ProviderKind::OpenAiResponses,
    ProviderKind::OpenAiChat,
];

pub fn model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "claude-sonnet-4-6",
        ProviderKind::OpenAiResponses => "gpt-5.4",
        ProviderKind::OpenAiChat => "qwen3:8b",
    }
}

pub fn route(server: &FakeServer, kind: ProviderKind, presentation: Presentation) -> Route {
    Route {
        name: "test".into(),
        kind,
        model: model(kind).into(),
        base_url: server.base_url(kind),
        first_party: false,
        base_url_from: aibuddy_provider::BaseUrlFrom::Env,
        presentation,
        context_window: 100_000,
        stream: None,
        images: true,
    }
}

pub async fn server() -> FakeServer {
    let s = FakeServer::start().await.unwrap();
    s.expect_key(KEY);
    s
}

pub fn provider(
    server: &FakeServer,
    kind: ProviderKind,
    presentation: Presentation,
) -> HttpProvider {
    HttpProvider::new(route(server, kind, presentation), ApiKey::new(KEY)).unwrap()
}

pub fn tool(name: &str, deferred: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} does things"),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        deferred,
    }
}

/// read_file and tool_search active; get_weather and list_issues deferred.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool("read_file", false),
        tool("tool_search", false),
        tool("get_weather", true),
        tool("list_issues", true),
    ]
}

pub fn request(
    kind: ProviderKind,
    presentation: Presentation,
    messages: Vec<Message>,
) -> ModelRequest {
    let mut r = ModelRequest::new(model(kind), messages);
    r.system = "You are a test.".into();
    r.tools = tools();
    r.presentation = presentation;
    r.max_tokens = 1024;
    r
}

/// Every event until the stream ends or errors (bounded generously so a hang fails the test).
pub async fn collect(mut s: EventStream) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(30), s.next()).await {
            Err(_) => panic!("stream produced nothing for 30 s; events so far: {events:?}"),
            Ok(None) => return (events, None),
            Ok(Some(Ok(e))) => events.push(e),
            Ok(Some(Err(e))) => return (events, Some(e)),
        }
    }
}

/// Streams one step and returns its events and the final assistant message.
pub async fn step(p: &HttpProvider, req: &ModelRequest) -> (Vec<ProviderEvent>, Message) {
    let s = p
        .stream(req, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    let (events, err) = collect(s).await;
    assert!(err.is_none(), "stream error: {err:?}; events: {events:?}");
    let msg = events
        .iter()
        .find_map(|e| match e {
            ProviderEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        })
        .expect("a MessageEnd event");
    (events, msg)
}

pub fn text_of(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
