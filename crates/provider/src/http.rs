//! The HTTP driver shared by the three formats: send, classify failures, and turn an SSE body into
//! [`ProviderEvent`]s with cancellation. Every body chunk yields at least one event (a
//! [`ProviderEvent::Ping`] when it completed nothing), so an idle watchdog re-arms on each chunk.

use std::pin::Pin;

use aibuddy_common::sse::SseDecoder;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{ProviderError, bounded};
use crate::event::ProviderEvent;
use crate::retry::parse_retry_after;
use crate::wire::StreamParser;

/// A stream of provider events; it ends after [`ProviderEvent::MessageEnd`] or an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ProviderError>> + Send>>;

/// Largest error body read (the rest is dropped).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Largest non-streamed response body accepted, and largest streamed body.
const MAX_JSON_BODY: usize = 64 * 1024 * 1024;
const MAX_STREAM_BODY: usize = 256 * 1024 * 1024;

/// POSTs `body` and returns the response when its status is a success.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    cancel: &CancellationToken,
) -> Result<reqwest::Response, ProviderError> {
    let fut = client.post(url).headers(headers).json(body).send();
    let resp = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
        r = fut => r.map_err(|e| ProviderError::from_reqwest(&e))?,
    };
    if resp.status().is_success() {
        return Ok(resp);
    }
    Err(error_from_response(resp, cancel).await)
}

async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, ProviderError> {
    let mut buf = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            c = resp.chunk() => c.map_err(|e| ProviderError::from_reqwest(&e))?,
        };
        let Some(chunk) = chunk else { return Ok(buf) };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= cap {
            return Ok(buf);
        }
    }
}

/// The typed error for a non-success response: status, the provider's error type and message
/// (Anthropic `{"error":{"type","message"}}`, OpenAI `{"error":{"message","type","code"}}`), and
/// `retry-after`.
pub(crate) async fn error_from_response(
    resp: reqwest::Response,
    cancel: &CancellationToken,
) -> ProviderError {
    let status = resp.status().as_u16();
    let h = |k: &str| {
        resp.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let retry_after =
        parse_retry_after(h("retry-after").as_deref(), h("retry-after-ms").as_deref());
    let body = match read_capped(resp, MAX_ERROR_BODY, cancel).await {
        Ok(b) => b,
        Err(ProviderError::Cancelled) => return ProviderError::Cancelled,
        Err(_) => Vec::new(),
    };
    let (error_type, message) = error_fields(&body);
    ProviderError::Http {
        status,
        error_type,
        message,
        retry_after,
    }
}

/// Pure: the provider's error type and message from an error body.
pub fn error_fields(body: &[u8]) -> (Option<String>, String) {
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        return (None, "(empty response body)".into());
    }
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return (None, bounded(text.trim()));
    };
    let e = v.get("error").unwrap_or(&v);
    if let Some(s) = e.as_str() {
        return (None, bounded(s));
    }
    let ty = ["type", "code"]
        .iter()
        .find_map(|k| e.get(*k).and_then(Value::as_str))
        .map(bounded);
    let msg = e
        .get("message")
        .and_then(Value::as_str)
        .map(bounded)
        .unwrap_or_else(|| bounded(text.trim()));
    (ty, msg)
}

fn content_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
}

fn is_json(resp: &reqwest::Response) -> bool {
    content_type(resp).is_some_and(|v| v.starts_with("application/json"))
}

/// Reads a non-streamed JSON response body.
pub(crate) async fn read_json(
    resp: reqwest::Response,
    cancel: &CancellationToken,
) -> Result<Value, ProviderError> {
    let body = read_capped(resp, MAX_JSON_BODY, cancel).await?;
    serde_json::from_slice(&body)
        .map_err(|e| ProviderError::Protocol(format!("response body is not JSON: {e}")))
}

/// Events as a stream, for non-streamed responses.
pub(crate) fn ready_stream(events: Vec<ProviderEvent>) -> EventStream {
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
}

/// Turns a successful response into events. A JSON body (a server that ignored `stream`) is
/// converted with `from_json`; an SSE body is parsed incrementally by `parser`.
pub(crate) async fn events<P: StreamParser>(
    resp: reqwest::Response,
    parser: P,
    from_json: fn(&Value) -> Result<Vec<ProviderEvent>, ProviderError>,
    cancel: CancellationToken,
) -> Result<EventStream, ProviderError> {
    // A web page where an event stream belongs: a base URL that names a site, not the API.
    if let Some(ct) = content_type(&resp).filter(|ct| ct.starts_with("text/html")) {
        return Err(ProviderError::Protocol(format!(
            "the provider answered with a web page ({}), not an event stream; check the base URL",
            bounded(&ct)
        )));
    }
    if is_json(&resp) {
        let v = read_json(resp, &cancel).await?;
        // An error object with a success status (some proxies) is the error, not an answer.
        if let Some(e) = crate::wire::error_in_body(&v) {
            return Err(e);
        }
        return Ok(ready_stream(from_json(&v)?));
    }
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(drive(resp, parser, cancel, tx));
    Ok(Box::pin(futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
    })))
}

type Tx = mpsc::Sender<Result<ProviderEvent, ProviderError>>;

/// Decodes body bytes as UTF-8 piece by piece, lossily: a sequence split between two chunks is
/// decoded whole, an invalid byte becomes U+FFFD. (The SSE parser keeps an invalid byte pending
/// for ever and parses nothing after it: one bad byte from a server would wedge the stream.)
#[derive(Default)]
struct LossyUtf8 {
    pending: Vec<u8>,
}

impl LossyUtf8 {
    fn push(&mut self, chunk: &[u8]) -> Bytes {
        self.pending.extend_from_slice(chunk);
        let mut out = String::new();
        let mut start = 0;
        while start < self.pending.len() {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    out.push_str(s);
                    start = self.pending.len();
                }
                Err(e) => {
                    let valid = start + e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[start..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            start = valid + bad;
                        }
                        // An incomplete sequence at the end: wait for the next chunk.
                        None => {
                            start = valid;
                            break;
                        }
                    }
                }
            }
        }
        self.pending.drain(..start);
        Bytes::from(out)
    }

    fn finish(&mut self) -> Bytes {
        let rest = std::mem::take(&mut self.pending);
        Bytes::from(String::from_utf8_lossy(&rest).into_owned())
    }
}

/// Sends one item unless the run was cancelled or the consumer went away; `false` means stop.
async fn emit(
    tx: &Tx,
    cancel: &CancellationToken,
    item: Result<ProviderEvent, ProviderError>,
) -> bool {
    let last = item.is_err();
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            let _ = tx.try_send(Err(ProviderError::Cancelled));
            false
        }
        r = tx.send(item) => r.is_ok() && !last,
    }
}

async fn drive<P: StreamParser>(
    resp: reqwest::Response,
    mut parser: P,
    cancel: CancellationToken,
    tx: Tx,
) {
    let mut body = resp.bytes_stream();
    // One event may be as large as the whole stream may be (a final `response.completed`
    // repeats the whole answer); the stream's own bound is checked on every chunk.
    let mut sse = SseDecoder::new(MAX_STREAM_BODY);
    let mut total = 0usize;
    let mut utf8 = LossyUtf8::default();
    let mut events = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                let _ = tx.try_send(Err(ProviderError::Cancelled));
                return;
            }
            // The consumer dropped the stream (e.g. its watchdog fired): close the connection.
            _ = tx.closed() => return,
            c = body.next() => c,
        };
        let (text, ended) = match chunk {
            Some(Err(e)) => {
                let _ = emit(&tx, &cancel, Err(ProviderError::from_reqwest(&e))).await;
                return;
            }
            Some(Ok(bytes)) if bytes.is_empty() => continue,
            Some(Ok(bytes)) => {
                total = total.saturating_add(bytes.len());
                if total > MAX_STREAM_BODY {
                    let too_big =
                        ProviderError::Protocol("the response stream is too large".into());
                    let _ = emit(&tx, &cancel, Err(too_big)).await;
                    return;
                }
                (utf8.push(&bytes), false)
            }
            // An event not ended by its blank line when the stream ends is not dispatched.
            None => (utf8.finish(), true),
        };
        // Everything the parser can complete from what it has, without waiting for more.
        events.clear();
        if let Err(e) = sse.feed(&text, &mut events) {
            let bad = ProviderError::Protocol(format!("bad event stream: {e}"));
            let _ = emit(&tx, &cancel, Err(bad)).await;
            return;
        }
        let mut produced = false;
        for ev in events.drain(..) {
            // An event with no `event:` field is a `message` event.
            let name = if ev.event.is_empty() {
                "message"
            } else {
                ev.event.as_str()
            };
            match parser.on_event(name, &ev.data) {
                Ok(out) => {
                    for e in out {
                        produced = true;
                        if !emit(&tx, &cancel, Ok(e)).await {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = emit(&tx, &cancel, Err(e)).await;
                    return;
                }
            }
            if parser.is_done() {
                return;
            }
        }
        if ended {
            match parser.on_end() {
                Ok(events) => {
                    for e in events {
                        if !emit(&tx, &cancel, Ok(e)).await {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = emit(&tx, &cancel, Err(e)).await;
                }
            }
            return;
        }
        if !produced && !emit(&tx, &cancel, Ok(ProviderEvent::Ping)).await {
            return;
        }
    }
}
