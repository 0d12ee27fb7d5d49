//! The fake provider server: HTTP/1 on 127.0.0.1:0 speaking the three formats, answering from a
//! per-test script, and checking the protocol invariants on every request.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::invariants::{Violation, check_request};
use super::script::{Chunk, Reply};
use crate::kind::ProviderKind;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub kind: ProviderKind,
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub raw_body: String,
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    violations: Vec<Violation>,
    key: Option<String>,
    /// Assistant content served by completed replies, in order, with the conversation it was
    /// served to (the text of its first user message).
    served: Vec<(String, Value)>,
    /// Whether the replay check keeps conversations apart by their first user text
    /// ([`FakeServer::conversations_by_first_user_text`]).
    by_conversation: bool,
    check_replay: bool,
    /// How a conversation summary starts (`summaries_start_with`): only a request that starts with
    /// one may leave out the earliest served turns.
    summary_marker: Option<String>,
    disconnects: usize,
}

/// A scripted fake provider. Dropping it stops the server.
pub struct FakeServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeServer {
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            check_replay: true,
            ..State::default()
        }));
        let st = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                // Small SSE writes go out at once (Nagle + delayed ACK would add ~40 ms per
                // request and hide the loop's own cost in benchmarks).
                let _ = stream.set_nodelay(true);
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(req, st.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Ok(Self { addr, state, task })
    }

    /// The base URL for an Anthropic route (`/v1/messages` is appended by the client).
    pub fn anthropic_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for OpenAI routes (`/responses`, `/chat/completions` are appended).
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn base_url(&self, kind: ProviderKind) -> String {
        match kind {
            ProviderKind::Anthropic => self.anthropic_base(),
            _ => self.openai_base(),
        }
    }

    /// The key every request must carry in its auth header, and never in its body.
    pub fn expect_key(&self, key: &str) {
        lock(&self.state).key = Some(key.to_string());
    }

    /// Whether earlier served assistant content must come back unchanged (on by default).
    pub fn check_replay(&self, on: bool) {
        lock(&self.state).check_replay = on;
    }

    /// Conversation compaction: a request whose first user text starts with `marker` carries a
    /// summary of the earliest turns, so it may replay only a suffix of the served turns: the
    /// turns after the summary, exactly and in order (summary replies are scripted with
    /// [`super::Turn::summary`], which the conversation never replays).
    pub fn summaries_start_with(&self, marker: &str) {
        lock(&self.state).summary_marker = Some(marker.to_string());
    }

    /// Several conversations share this server (a run and its subagent runs): each request's
    /// replayed turns are checked against the turns served to requests whose first user message
    /// had the same text, instead of against every served turn.
    pub fn conversations_by_first_user_text(&self) {
        lock(&self.state).by_conversation = true;
    }

    pub fn push(&self, reply: Reply) {
        lock(&self.state).script.push_back(reply);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    pub fn violations(&self) -> Vec<Violation> {
        lock(&self.state).violations.clone()
    }

    /// Streams whose client went away before the stream ended (stalled or cancelled).
    pub fn disconnects(&self) -> usize {
        lock(&self.state).disconnects
    }

    /// Panics with every violation and the request body that caused it.
    pub fn assert_clean(&self) {
        let v = self.violations();
        if !v.is_empty() {
            let report: Vec<String> = v
                .iter()
                .map(|v| format!("[{}] {}\n  request body: {}", v.rule, v.detail, v.body))
                .collect();
            panic!(
                "fake provider saw {} protocol violation(s):\n{}",
                v.len(),
                report.join("\n")
            );
        }
    }
}

fn kind_of(path: &str) -> Option<ProviderKind> {
    if path.ends_with("/messages") {
        Some(ProviderKind::Anthropic)
    } else if path.ends_with("/responses") {
        Some(ProviderKind::OpenAiResponses)
    } else if path.ends_with("/chat/completions") {
        Some(ProviderKind::OpenAiChat)
    } else {
        None
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: String,
) -> Response<Body> {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", content_type);
    for (k, v) in headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = http_body_util::Full::new(Bytes::from(body)).boxed();
    b.body(body)
        .unwrap_or_else(|_| Response::new(http_body_util::Empty::new().boxed()))
}

/// Assistant content in the request, in order, in the same shape as `served`.
fn replayed(kind: ProviderKind, body: &Value) -> Vec<Value> {
    match kind {
        ProviderKind::Anthropic => body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .map(|m| m.get("content").cloned().unwrap_or_default())
            .collect(),
        ProviderKind::OpenAiChat => body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .cloned()
            .collect(),
        // Output items are flat in `input`: group consecutive non-input items into one turn.
        ProviderKind::OpenAiResponses => {
            let mut turns: Vec<Vec<Value>> = Vec::new();
            let mut open = false;
            for it in body
                .get("input")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let ty = it.get("type").and_then(Value::as_str).unwrap_or_default();
                let is_output = matches!(ty, "function_call" | "tool_search_call" | "reasoning")
                    || (ty == "message"
                        && it.get("role").and_then(Value::as_str) == Some("assistant"));
                if is_output {
                    if !open {
                        turns.push(Vec::new());
                        open = true;
                    }
                    if let Some(t) = turns.last_mut() {
                        t.push(it.clone());
                    }
                } else {
                    open = false;
                }
            }
            turns.into_iter().map(Value::Array).collect()
        }
    }
}

/// The text the first non-system message of a request starts with.
fn first_user_text(kind: ProviderKind, body: &Value) -> String {
    let items = match kind {
        ProviderKind::OpenAiResponses => body.get("input"),
        _ => body.get("messages"),
    };
    let first = items
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|m| {
            !matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        });
    match first.and_then(|m| m.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .find_map(|p| p.get("text").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// The replay rule. Pure. The replayed assistant turns must equal served turns exactly, in order,
/// with none left out in between: from the first served turn, or, when the request starts with a
/// summary, from a later one (the turns before it were summarized). Replayed turns past the last
/// served one may only be content never served (e.g. a partial answer kept after a stop).
pub fn replay_violation(
    replayed: &[Value],
    served: &[Value],
    summarized: bool,
) -> Option<(&'static str, String)> {
    let first = replayed.first()?;
    let aligned = |k: usize| {
        let n = served.len() - k;
        replayed
            .iter()
            .zip(&served[k..])
            .all(|(got, want)| got == want)
            && replayed.iter().skip(n).all(|extra| !served.contains(extra))
    };
    let start = if summarized {
        (0..served.len()).find(|&k| served[k] == *first && aligned(k))
    } else {
        aligned(0).then_some(0)
    };
    match start {
        Some(_) => None,
        None if summarized => Some((
            "assistant_content_as_received",
            format!(
                "the turns after the summary (first {first}) are not the served turns in order, unchanged"
            ),
        )),
        None => {
            let i = replayed
                .iter()
                .zip(served)
                .position(|(got, want)| got != want)
                .unwrap_or(0);
            let want = served.get(i).cloned().unwrap_or_default();
            Some((
                "assistant_content_as_received",
                format!(
                    "assistant turn {i} differs from what was served: served {want}, got {}",
                    replayed[i]
                ),
            ))
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let raw = match req.into_body().collect().await {
        Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    let Some(kind) = kind_of(&path) else {
        return Ok(full(
            404,
            &[],
            "application/json",
            r#"{"error":{"type":"not_found_error","message":"unknown path"}}"#.into(),
        ));
    };
    let reply = {
        let mut st = lock(&state);
        let mut violations = check_request(kind, &headers, &raw, st.key.as_deref());
        let body: Value = serde_json::from_str(&raw).unwrap_or_default();
        let conversation = first_user_text(kind, &body);
        if st.check_replay {
            let summarized = st
                .summary_marker
                .as_deref()
                .is_some_and(|m| conversation.starts_with(m));
            let served: Vec<Value> = st
                .served
                .iter()
                .filter(|(c, _)| !st.by_conversation || *c == conversation)
                .map(|(_, v)| v.clone())
                .collect();
            if let Some((rule, detail)) =
                replay_violation(&replayed(kind, &body), &served, summarized)
            {
                violations.push(Violation {
                    rule,
                    detail,
                    body: raw.clone(),
                });
            }
        }
        for v in &violations {
            tracing::error!(rule = v.rule, detail = %v.detail, "fake provider: protocol violation");
        }
        st.violations.extend(violations);
        st.requests.push(RecordedRequest {
            kind,
            path,
            headers,
            body,
            raw_body: raw,
        });
        let reply = st.script.pop_front();
        match &reply {
            Some(Reply::Stream {
                served: Some(s), ..
            })
            | Some(Reply::Json {
                served: Some(s), ..
            }) => st.served.push((conversation, s.clone())),
            _ => {}
        }
        reply
    };
    Ok(match reply {
        None => full(
            500,
            &[],
            "application/json",
            r#"{"error":{"type":"api_error","message":"fake provider: no scripted reply left"}}"#
                .into(),
        ),
        Some(Reply::Json { body, .. }) => full(200, &[], "application/json", body.to_string()),
        Some(Reply::Body {
            status,
            content_type,
            headers,
            body,
        }) => full(status, &headers, &content_type, body),
        Some(Reply::Error {
            status,
            headers,
            body,
        }) => full(status, &headers, "application/json", body.to_string()),
        Some(Reply::Stream { chunks, .. }) => {
            let (tx, mut rx) = mpsc::channel::<Bytes>(16);
            tokio::spawn(play(chunks, tx, state));
            let stream = futures::StreamExt::map(
                futures::stream::poll_fn(move |cx| rx.poll_recv(cx)),
                |b| Ok::<_, Infallible>(Frame::data(b)),
            );
            let mut resp = Response::new(StreamBody::new(stream).boxed());
            resp.headers_mut().insert(
                "content-type",
                hyper::header::HeaderValue::from_static("text/event-stream"),
            );
            resp
        }
    })
}

async fn play(chunks: Vec<Chunk>, tx: mpsc::Sender<Bytes>, state: Arc<Mutex<State>>) {
    for c in chunks {
        let bytes = match c {
            Chunk::Event { name, data } => {
                let mut s = String::new();
                if let Some(n) = name {
                    s.push_str(&format!("event: {n}\n"));
                }
                s.push_str(&format!("data: {data}\n\n"));
                s
            }
            Chunk::Comment(t) => format!(": {t}\n\n"),
            Chunk::Raw(t) => t,
            Chunk::Bytes(b) => {
                if tx.send(Bytes::from(b)).await.is_err() {
                    lock(&state).disconnects += 1;
                    return;
                }
                continue;
            }
            Chunk::Sleep(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => continue,
                    _ = tx.closed() => { lock(&state).disconnects += 1; return; }
                }
            }
            Chunk::Stall => {
                tx.closed().await;
                lock(&state).disconnects += 1;
                return;
            }
        };
        if tx.send(Bytes::from(bytes)).await.is_err() {
            lock(&state).disconnects += 1;
            return;
        }
    }
}
