//! Failures over real HTTP: rate limits with retry-after, fatal 4xx with the provider's message,
//! in-stream errors, a stalled stream, cancellation mid-stream, and the unstreamed Chat fallback.

use crate::common;

use std::time::Duration;

use aibuddy_provider::retry::{BackoffPolicy, RetryDecision};
use aibuddy_provider::testing::{Chunk, Reply, Turn};
use aibuddy_provider::{
    HttpProvider, Message, Presentation, Provider, ProviderError, ProviderEvent, ProviderKind,
    Stage,
};
use common::*;
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn wait_for_disconnect(server: &aibuddy_provider::testing::FakeServer) {
    for _ in 0..200 {
        if server.disconnects() > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server never saw the client go away");
}

#[tokio::test]
async fn rate_limit_then_success_on_each_route() {
    for kind in KINDS {
        let server = server().await;
        server.push(Reply::rate_limited(2));
        server.push(Turn::text("after the wait").reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let req = request(
            kind,
            Presentation::ActiveTools,
            vec![Message::user_text("hi")],
        );
        let err = match p.stream(&req, CancellationToken::new()).await {
            Err(e) => e,
            Ok(_) => panic!("{kind:?}: a 429 must fail the attempt"),
        };
        assert!(
            matches!(&err, ProviderError::Http { status: 429, .. }),
            "{kind:?}: {err:?}"
        );
        assert!(err.is_retryable());
        assert_eq!(err.stage(), Stage::Execution);
        assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            BackoffPolicy::default().decide(1, &err, 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(2))
        );
        // The loop would sleep for retry-after here; the retry then succeeds.
        let (events, _) = step(&p, &req).await;
        assert_eq!(text_of(&events), "after the wait");
        assert_eq!(server.requests().len(), 2);
        server.assert_clean();
    }
}

#[tokio::test]
async fn other_4xx_is_fatal_with_the_providers_message() {
    for kind in KINDS {
        let server = server().await;
        let body = match kind {
            ProviderKind::Anthropic => {
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}})
            }
            _ => {
                json!({"error": {"message": "max_tokens: too large", "type": "invalid_request_error", "code": null}})
            }
        };
        server.push(Reply::Error {
            status: 400,
            headers: vec![],
            body,
        });
        let p = provider(&server, kind, Presentation::ActiveTools);
        let req = request(
            kind,
            Presentation::ActiveTools,
            vec![Message::user_text("hi")],
        );
        let err = p
            .stream(&req, CancellationToken::new())
            .await
            .err()
            .unwrap();
        match &err {
            ProviderError::Http {
                status,
                error_type,
                message,
                ..
            } => {
                assert_eq!(
                    (*status, error_type.as_deref(), message.as_str()),
                    (400, Some("invalid_request_error"), "max_tokens: too large"),
                    "{kind:?}"
                );
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        assert!(!err.is_retryable());
        assert_eq!(err.stage(), Stage::Parameters);
        assert_eq!(
            BackoffPolicy::default().decide(1, &err, 0.5),
            RetryDecision::GiveUp
        );
    }
}

#[tokio::test]
async fn anthropic_overloaded_event_mid_stream_is_retryable() {
    let server = server().await;
    server.push(Reply::Stream {
        chunks: vec![
            Chunk::event("message_start", json!({"type": "message_start", "message": {"id": "m", "content": [], "usage": {}}})),
            Chunk::event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        ],
        served: None,
    });
    let kind = ProviderKind::Anthropic;
    let p = provider(&server, kind, Presentation::ActiveTools);
    let s = p
        .stream(
            &request(
                kind,
                Presentation::ActiveTools,
                vec![Message::user_text("hi")],
            ),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let (events, err) = collect(s).await;
    assert!(matches!(events[0], ProviderEvent::MessageStart { .. }));
    let err = err.expect("an error");
    assert!(
        matches!(&err, ProviderError::Stream { error_type, message } if error_type == "overloaded_error" && message == "Overloaded")
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_stream_cut_short_is_a_retryable_transport_error() {
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAiResponses] {
        let server = server().await;
        let Reply::Stream { mut chunks, .. } = Turn::text("never finished").reply(kind) else {
            unreachable!()
        };
        chunks.truncate(3);
        server.push(Reply::Stream {
            chunks,
            served: None,
        });
        let p = provider(&server, kind, Presentation::ActiveTools);
        let s = p
            .stream(
                &request(
                    kind,
                    Presentation::ActiveTools,
                    vec![Message::user_text("hi")],
                ),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        let (_, err) = collect(s).await;
        let err = err.expect("a cut-short stream must not look complete");
        assert!(
            matches!(err, ProviderError::Transport { .. }),
            "{kind:?}: {err:?}"
        );
        assert!(err.is_retryable());
    }
}

/// A stream that stops sending yields no events: the caller's idle watchdog sees silence.
#[tokio::test]
async fn a_stalled_stream_is_observed_as_no_events() {
    for kind in KINDS {
        let server = server().await;
        server.push(Turn::text("hello world").stalling().reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let mut s = p
            .stream(
                &request(
                    kind,
                    Presentation::ActiveTools,
                    vec![Message::user_text("hi")],
                ),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        let mut seen = Vec::new();
        // Read until the first text delta, then expect silence.
        loop {
            let e = tokio::time::timeout(Duration::from_secs(30), s.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let is_text = matches!(e, ProviderEvent::TextDelta { .. });
            seen.push(e);
            if is_text {
                break;
            }
        }
        let idle = tokio::time::timeout(Duration::from_millis(500), s.next()).await;
        assert!(
            idle.is_err(),
            "{kind:?}: expected silence, got {idle:?} after {seen:?}"
        );
        // The watchdog aborts by dropping the stream: the connection closes.
        drop(s);
        wait_for_disconnect(&server).await;
    }
}

#[tokio::test]
async fn cancellation_mid_stream_ends_it_promptly_and_closes_the_connection() {
    for kind in KINDS {
        let server = server().await;
        server.push(Turn::text("hello world").stalling().reply(kind));
        let p = provider(&server, kind, Presentation::ActiveTools);
        let cancel = CancellationToken::new();
        let mut s = p
            .stream(
                &request(
                    kind,
                    Presentation::ActiveTools,
                    vec![Message::user_text("hi")],
                ),
                cancel.clone(),
            )
            .await
            .unwrap();
        loop {
            let e = tokio::time::timeout(Duration::from_secs(30), s.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            if matches!(e, ProviderEvent::TextDelta { .. }) {
                break;
            }
        }
        cancel.cancel();
        // Generous bound (shared, noisy machine): the point is that it ends, not how fast.
        let end = tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .expect("the stream must end after cancel");
        assert!(
            matches!(end, Some(Err(ProviderError::Cancelled)) | None),
            "{kind:?}: {end:?}"
        );
        let after = tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .unwrap();
        assert!(after.is_none(), "{kind:?}: nothing after the end");
        wait_for_disconnect(&server).await;
    }
}

#[tokio::test]
async fn a_cancelled_token_stops_before_sending() {
    let server = server().await;
    let kind = ProviderKind::Anthropic;
    let p = provider(&server, kind, Presentation::ActiveTools);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = p
        .stream(
            &request(
                kind,
                Presentation::ActiveTools,
                vec![Message::user_text("hi")],
            ),
            cancel,
        )
        .await;
    assert!(matches!(r, Err(ProviderError::Cancelled)));
}

fn chat_route(
    server: &aibuddy_provider::testing::FakeServer,
    stream: Option<bool>,
) -> HttpProvider {
    let mut r = route(server, ProviderKind::OpenAiChat, Presentation::ActiveTools);
    r.stream = stream;
    HttpProvider::new(r, aibuddy_provider::ApiKey::new(KEY)).unwrap()
}

#[tokio::test]
async fn chat_unstreamed_when_configured() {
    let server = server().await;
    let kind = ProviderKind::OpenAiChat;
    server.push(
        Turn::text("one")
            .call("call_1", "read_file", json!({"path": "x"}))
            .chat_json(),
    );
    server.push(Turn::text("two").chat_json());
    let p = chat_route(&server, Some(false));
    let mut messages = vec![Message::user_text("go")];
    let (events, m) = step(
        &p,
        &request(kind, Presentation::ActiveTools, messages.clone()),
    )
    .await;
    assert_eq!(text_of(&events), "one");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ProviderEvent::ToolCallEnd { id, .. } if id == "call_1"))
    );
    messages.push(m);
    messages.push(Message::tool_results(vec![
        aibuddy_provider::ContentBlock::tool_result_text("call_1", "data"),
    ]));
    step(&p, &request(kind, Presentation::ActiveTools, messages)).await;
    for r in server.requests() {
        assert!(r.body.get("stream").is_none(), "{}", r.raw_body);
    }
    server.assert_clean();
}

#[tokio::test]
async fn chat_falls_back_to_unstreamed_when_streaming_with_tools_is_refused() {
    let server = server().await;
    let kind = ProviderKind::OpenAiChat;
    server.push(Reply::Error { status: 500, headers: vec![], body: json!({"error": {"code": 500, "message": "Cannot use tools with stream", "type": "server_error"}}) });
    server.push(Turn::text("fallback works").chat_json());
    server.push(Turn::text("still unstreamed").chat_json());
    let p = chat_route(&server, None);
    let req = request(
        kind,
        Presentation::ActiveTools,
        vec![Message::user_text("go")],
    );
    let (events, _) = step(&p, &req).await;
    assert_eq!(text_of(&events), "fallback works");
    assert_eq!(
        p.request_body(&req).unwrap().get("stream"),
        None,
        "the fallback is remembered"
    );
    step(&p, &req).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].body["stream"], json!(true));
    assert!(reqs[1].body.get("stream").is_none() && reqs[2].body.get("stream").is_none());
}

#[test]
fn a_first_party_route_without_a_key_is_an_authorization_error() {
    let route = aibuddy_provider::Route {
        name: "anthropic".into(),
        kind: ProviderKind::Anthropic,
        model: "claude-sonnet-4-6".into(),
        base_url: "https://api.anthropic.com".into(),
        first_party: true,
        base_url_from: aibuddy_provider::BaseUrlFrom::Default,
        presentation: Presentation::Native,
        context_window: 200_000,
        stream: None,
        images: true,
    };
    let err = HttpProvider::new(route, None).unwrap_err();
    assert_eq!(err.stage(), Stage::Authorization);
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
}
