//! The legacy HTTP+SSE client transport (protocol 2024-11-05), for servers that speak only it:
//! GET the server's URL as an event stream, wait for the `endpoint` event naming where to POST,
//! then POST each JSON-RPC message there and read every answer from the stream's `message`
//! events. rmcp 3.11 has no client for it, so this is the small one the spec describes, on
//! `reqwest` and `eventsource-stream`.
//!
//! The endpoint must have the stream's origin (scheme, host and port): a server cannot send the
//! client's messages, and the headers configured for it (tokens), to another host.
//! [`endpoint_url`] is that decision, pure.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use url::Url;

/// Why the legacy SSE transport failed. Messages never quote configured values or server text
/// beyond a status code.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("not a valid URL")]
    BadUrl,
    #[error("cannot reach the SSE stream: {0}")]
    Connect(String),
    #[error("the SSE stream answered HTTP {0}")]
    Status(u16),
    #[error("the server did not answer with an event stream (content type {0})")]
    NotEventStream(String),
    #[error("the SSE stream ended before its `endpoint` event")]
    NoEndpoint,
    #[error("no `endpoint` event within {0}s")]
    EndpointTimeout(u64),
    #[error("the `endpoint` event is not a URL reference")]
    BadEndpoint,
    #[error("the `endpoint` event points to another origin than the SSE stream; refused")]
    CrossOrigin,
    #[error("POST to the message endpoint failed: {0}")]
    Post(String),
    #[error("the message endpoint answered HTTP {0}")]
    PostStatus(u16),
}

/// Resolves the `endpoint` event's data against the stream's URL; refuses another origin.
/// Pure.
pub fn endpoint_url(stream_url: &Url, data: &str) -> Result<Url, SseError> {
    let endpoint = stream_url
        .join(data.trim())
        .map_err(|_| SseError::BadEndpoint)?;
    if endpoint.origin() != stream_url.origin() || !endpoint.origin().is_tuple() {
        return Err(SseError::CrossOrigin);
    }
    Ok(endpoint)
}

/// Configured headers as a map (invalid ones were refused when the config was parsed; an inline
/// config's invalid header is skipped).
fn header_map(headers: &BTreeMap<String, String>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            map.insert(name, value);
        }
    }
    map
}

/// A connected legacy SSE session: the stream's reader task feeds `rx`.
pub struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    rx: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    /// Stops the reader task when the transport goes.
    _reader: DropGuard,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport").finish_non_exhaustive()
    }
}

/// Opens the stream and waits (up to `wait`) for its `endpoint` event.
pub async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    wait: Duration,
) -> Result<SseTransport, SseError> {
    let stream_url = Url::parse(url).map_err(|_| SseError::BadUrl)?;
    let headers = header_map(headers);
    let client = reqwest::Client::new();
    let response = client
        .get(stream_url.clone())
        .headers(headers.clone())
        .header(http::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| SseError::Connect(without_url(&e)))?;
    if !response.status().is_success() {
        return Err(SseError::Status(response.status().as_u16()));
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        return Err(SseError::NotEventStream(
            aibuddy_common::term::line(&content_type).into_owned(),
        ));
    }
    let mut events = response.bytes_stream().eventsource();
    let first_endpoint = async {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| SseError::Connect(e.to_string()))?;
            if event.event == "endpoint" {
                return endpoint_url(&stream_url, &event.data);
            }
        }
        Err(SseError::NoEndpoint)
    };
    let endpoint = tokio::time::timeout(wait, first_endpoint)
        .await
        .map_err(|_| SseError::EndpointTimeout(wait.as_secs()))??;
    let (tx, rx) = mpsc::channel(64);
    let stop = CancellationToken::new();
    let reader_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = reader_stop.cancelled() => break,
                event = events.next() => event,
            };
            let Some(Ok(event)) = event else {
                tracing::debug!("legacy SSE stream ended");
                break;
            };
            if !(event.event.is_empty() || event.event == "message") {
                continue;
            }
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
                Ok(message) => {
                    if tx.send(message).await.is_err() {
                        break;
                    }
                }
                // The server's text is not logged, only its size.
                Err(_) => tracing::warn!(
                    bytes = event.data.len(),
                    "legacy SSE message is not a JSON-RPC message; skipped"
                ),
            }
        }
    });
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        rx,
        _reader: stop.drop_guard(),
    })
}

/// A reqwest error's text without the URL (its query may hold a session id or a token).
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "the server");
    }
    text
}

impl rmcp::transport::Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "legacy-sse".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| SseError::Post(without_url(&e)))?;
            if !response.status().is_success() {
                return Err(SseError::PostStatus(response.status().as_u16()));
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.rx.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_must_keep_the_stream_origin() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let same = endpoint_url(&base, "/message?sessionId=abc").unwrap();
        assert_eq!(same.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
        let relative = endpoint_url(&base, " messages/?s=1\n").unwrap();
        assert_eq!(relative.as_str(), "http://127.0.0.1:3001/messages/?s=1");
        let absolute = endpoint_url(&base, "http://127.0.0.1:3001/m").unwrap();
        assert_eq!(absolute.path(), "/m");
        for other in [
            "http://evil.test/message",
            "//evil.test/message",
            "http://127.0.0.1:3002/message",
            "https://127.0.0.1:3001/message",
            "data:text/plain,x",
        ] {
            assert!(
                matches!(endpoint_url(&base, other), Err(SseError::CrossOrigin)),
                "{other}"
            );
        }
        assert!(matches!(
            endpoint_url(&base, "http://[::1"),
            Err(SseError::BadEndpoint)
        ));
    }
}
