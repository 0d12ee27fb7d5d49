//! The legacy HTTP+SSE client transport (protocol 2024-11-05), for servers that speak only it:
//! GET the server's URL as an event stream, wait for the `endpoint` event naming where to POST,
//! then POST each JSON-RPC message there and read every answer from the stream's `message`
//! events. rmcp 3.11 has no client for it, so this is the small one the spec describes, on
//! `reqwest` and the bounded event-stream decoder ([`SseDecoder`], `aibuddy_common::sse`).
//!
//! The endpoint must have the stream's origin (scheme, host and port): a server cannot send the
//! client's messages, and the headers configured for it (tokens), to another host.
//! [`endpoint_url`] is that decision, pure. Its query (the session id) is kept as given.
//!
//! The stream is untrusted: one event may be at most `max_message_bytes` (it is refused while
//! it is read, never held whole), a `message` event that is not JSON-RPC breaks the session
//! (as a non-JSON-RPC stdout line breaks a stdio server), and a stream that ends or fails ends
//! the session with its reason ([`SseOptions::on_end`]), so calls in flight fail at once.
//!
//! OAuth: with [`SseOptions::auth`] every request (the GET and each POST) carries the
//! server's bearer token (refreshed by rmcp when it expires). A 401 with `WWW-Authenticate`
//! is [`SseError::Unauthorized`] and a 403 `insufficient_scope` is
//! [`SseError::InsufficientScope`], with rmcp's challenge types as their sources, so
//! [`crate::oauth::find_challenge`] reads them as it does for streamable HTTP.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use url::Url;

pub use aibuddy_common::sse::{FrameError, SseDecoder, SseEvent};

use crate::bearer::{AuthorizedClient, scope_of};

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
    EndpointTimeout(f64),
    #[error("the `endpoint` event is not a URL reference")]
    BadEndpoint,
    #[error("the `endpoint` event points to another origin than the SSE stream; refused")]
    CrossOrigin,
    #[error("the SSE stream broke: {0}")]
    Frame(#[from] FrameError),
    #[error("POST to the message endpoint failed: {0}")]
    Post(String),
    #[error("the message endpoint answered HTTP {0}")]
    PostStatus(u16),
    /// 401 with a `WWW-Authenticate` challenge: a login is needed.
    #[error("the server requires authorization (HTTP 401)")]
    Unauthorized(#[source] AuthRequiredError),
    /// 403 `insufficient_scope`: the token lacks a scope.
    #[error("the server refused the token's scope (HTTP 403 insufficient_scope)")]
    InsufficientScope(#[source] InsufficientScopeError),
    /// No token could be had (expired and not refreshable, store unreadable).
    #[error("no usable OAuth token: {0}")]
    Token(#[source] rmcp::transport::auth::AuthError),
    /// The session is over (the stream ended); nothing more is sent.
    #[error("the SSE session has ended: {0}")]
    Ended(String),
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

/// Called once with the reason when the stream ends after the `endpoint` event.
pub type OnEnd = Box<dyn FnOnce(String) + Send>;

/// How to open a legacy SSE session.
pub struct SseOptions {
    /// How long the `endpoint` event may take.
    pub wait: Duration,
    /// Largest event accepted (see [`crate::DEFAULT_MAX_MESSAGE_BYTES`]).
    pub max_message_bytes: usize,
    /// The server's OAuth client: its bearer token goes on every request.
    pub auth: Option<AuthorizedClient>,
    /// Told why the stream ended (the connection's breakage report).
    pub on_end: Option<OnEnd>,
}

impl SseOptions {
    pub fn new(wait: Duration) -> SseOptions {
        SseOptions {
            wait,
            max_message_bytes: crate::DEFAULT_MAX_MESSAGE_BYTES,
            auth: None,
            on_end: None,
        }
    }
}

/// Why the session ended, once it has (shared by the reader and the sender).
type EndReason = Arc<Mutex<Option<String>>>;

/// A connected legacy SSE session: the stream's reader task feeds `rx`.
pub struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    auth: Option<AuthorizedClient>,
    rx: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    ended: EndReason,
    /// Stops the reader task when the transport goes.
    _reader: DropGuard,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport").finish_non_exhaustive()
    }
}

impl SseTransport {
    /// The endpoint the server named (with its query, e.g. the session id).
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }
}

/// The bearer token, when the server has an OAuth client with a usable token. As rmcp does for
/// streamable HTTP, a token that needs a new authorization is left off, so the server's 401
/// challenge says what to do.
async fn token(auth: Option<&AuthorizedClient>) -> Result<Option<String>, SseError> {
    let Some(auth) = auth else { return Ok(None) };
    match auth.get_access_token().await {
        Ok(token) => Ok(Some(token)),
        Err(rmcp::transport::auth::AuthError::AuthorizationRequired) => Ok(None),
        Err(e) => Err(SseError::Token(e)),
    }
}

/// Sends a request with the bearer token (when there is one). A 401 to a token the client
/// believed valid (expired a moment early, revoked) gets one refresh and one retry with the new
/// token, as rmcp does for streamable HTTP; else the answer is returned as it came.
async fn send_authorized(
    build: impl Fn(Option<&str>) -> reqwest::RequestBuilder,
    auth: Option<&AuthorizedClient>,
    failed: fn(String) -> SseError,
) -> Result<reqwest::Response, SseError> {
    let sent = token(auth).await?;
    let response = build(sent.as_deref())
        .send()
        .await
        .map_err(|e| failed(without_url(&e)))?;
    let (Some(auth), Some(sent)) = (auth, sent) else {
        return Ok(response);
    };
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(response);
    }
    let refreshed = {
        let manager = auth.auth_manager.lock().await;
        manager.refresh_token().await
    };
    if let Err(e) = refreshed {
        tracing::debug!("token refresh after a 401 failed: {e}");
        return Ok(response);
    }
    match token(Some(auth)).await? {
        Some(fresh) if fresh != sent => build(Some(&fresh))
            .send()
            .await
            .map_err(|e| failed(without_url(&e))),
        _ => Ok(response),
    }
}

/// A 401 or 403 answer as its challenge (with rmcp's types, so `find_challenge` reads it).
fn challenge(response: &reqwest::Response) -> Option<SseError> {
    let header = response
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())?
        .to_owned();
    match response.status().as_u16() {
        401 => Some(SseError::Unauthorized(AuthRequiredError::new(header))),
        403 if header.contains("insufficient_scope") => {
            let scope = scope_of(&header);
            Some(SseError::InsufficientScope(InsufficientScopeError::new(
                header, scope,
            )))
        }
        _ => None,
    }
}

/// Opens the stream and waits (up to `options.wait`) for its `endpoint` event.
pub async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    options: SseOptions,
) -> Result<SseTransport, SseError> {
    let stream_url = Url::parse(url).map_err(|_| SseError::BadUrl)?;
    let headers = header_map(headers);
    let client = reqwest::Client::new();
    let get = |token: Option<&str>| {
        let request = client
            .get(stream_url.clone())
            .headers(headers.clone())
            .header(http::header::ACCEPT, "text/event-stream");
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };
    let response = send_authorized(get, options.auth.as_ref(), SseError::Connect).await?;
    if let Some(challenge) = challenge(&response) {
        return Err(challenge);
    }
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
    let mut body = Box::pin(response.bytes_stream());
    let mut decoder = SseDecoder::new(options.max_message_bytes);
    let first_endpoint = async {
        loop {
            let Some(chunk) = body.next().await else {
                return Err(SseError::NoEndpoint);
            };
            let chunk = chunk.map_err(|e| SseError::Connect(without_url(&e)))?;
            let mut events = Vec::new();
            decoder.feed(&chunk, &mut events)?;
            if let Some(at) = events.iter().position(|e| e.event == "endpoint") {
                let endpoint = endpoint_url(&stream_url, &events[at].data)?;
                // Messages in the same chunk after the endpoint are read first.
                return Ok((endpoint, events.split_off(at + 1)));
            }
        }
    };
    let (endpoint, early) = tokio::time::timeout(options.wait, first_endpoint)
        .await
        .map_err(|_| SseError::EndpointTimeout(options.wait.as_secs_f64()))??;
    let (tx, rx) = mpsc::channel(64);
    let stop = CancellationToken::new();
    let ended: EndReason = Arc::new(Mutex::new(None));
    let reader = Reader {
        decoder,
        tx,
        stop: stop.clone(),
        ended: ended.clone(),
        on_end: options.on_end,
    };
    tokio::spawn(reader.run(body, early));
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        auth: options.auth,
        rx,
        ended,
        _reader: stop.drop_guard(),
    })
}

/// Reads the stream after the `endpoint` event until it ends, fails or the transport goes.
struct Reader {
    decoder: SseDecoder,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    stop: CancellationToken,
    ended: EndReason,
    on_end: Option<OnEnd>,
}

impl Reader {
    async fn run<S, B>(mut self, mut body: S, early: Vec<SseEvent>)
    where
        S: futures::Stream<Item = reqwest::Result<B>> + Unpin,
        B: AsRef<[u8]>,
    {
        let mut pending = early;
        let reason = 'read: loop {
            for event in pending.drain(..) {
                if let Err(reason) = self.deliver(event).await {
                    break 'read reason;
                }
            }
            let chunk = tokio::select! {
                _ = self.stop.cancelled() => break 'read None,
                chunk = body.next() => chunk,
            };
            match chunk {
                None => break Some("the legacy SSE stream ended".to_owned()),
                Some(Err(e)) => {
                    break Some(format!("the legacy SSE stream failed: {}", without_url(&e)));
                }
                Some(Ok(bytes)) => {
                    if let Err(e) = self.decoder.feed(bytes.as_ref(), &mut pending) {
                        break Some(format!("legacy SSE stream: {e}"));
                    }
                }
            }
        };
        if let Some(reason) = reason {
            tracing::debug!("{reason}");
            *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            if let Some(on_end) = self.on_end.take() {
                on_end(reason);
            }
        }
        // Dropping `tx` ends the session: `receive` answers `None`.
    }

    /// Hands a `message` event to the session; `Err(Some(reason))` ends it (a message that is
    /// not JSON-RPC), `Err(None)` when the session is gone.
    async fn deliver(&mut self, event: SseEvent) -> Result<(), Option<String>> {
        if !(event.event.is_empty() || event.event == "message") {
            return Ok(());
        }
        match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
            Ok(message) => tokio::select! {
                _ = self.stop.cancelled() => Err(None),
                sent = self.tx.send(message) => sent.map_err(|_| None),
            },
            // The server's text is not quoted, only its size.
            Err(_) => Err(Some(format!(
                "a legacy SSE `message` event is not a JSON-RPC message ({} bytes); refused",
                event.data.len()
            ))),
        }
    }
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
        let body = serde_json::to_vec(&item);
        let (client, endpoint, headers) = (
            self.client.clone(),
            self.endpoint.clone(),
            self.headers.clone(),
        );
        let auth = self.auth.clone();
        let ended = self.ended.clone();
        async move {
            let gone = ended.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if let Some(reason) = gone {
                return Err(SseError::Ended(reason));
            }
            let body = body.map_err(|e| SseError::Post(e.to_string()))?;
            let post = |token: Option<&str>| {
                let request = client
                    .post(endpoint.clone())
                    .headers(headers.clone())
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
                match token {
                    Some(token) => request.bearer_auth(token),
                    None => request,
                }
            };
            let response = send_authorized(post, auth.as_ref(), SseError::Post).await?;
            if let Some(challenge) = challenge(&response) {
                return Err(challenge);
            }
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
