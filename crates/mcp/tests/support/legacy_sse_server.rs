//! A small legacy HTTP+SSE MCP server (protocol 2024-11-05) for tests, on a tokio TCP
//! listener at 127.0.0.1 (HTTP/1.1 by hand: nothing to add to `Cargo.lock`).
//!
//! `GET /sse` opens the event stream: `event: endpoint` naming
//! `/messages?sessionId=<id>&note=x%2Fy`, then one `event: message` frame per answer. `POST`
//! to that endpoint takes one JSON-RPC message (202 Accepted; the answer goes on the stream).
//! Tools: `echo {message}`; `hangup` (the stream ends, unanswered); `oversized` (a 1 MiB
//! `message` event, kept open); `garbage` (a `message` event that is not JSON); `admin` (needs
//! scope `mcp:admin` when OAuth is on). Misbehaving on purpose: [`Endpoint::Literal`] sends
//! any `endpoint` data (another origin), [`Endpoint::Never`] keeps the stream open with
//! comments only.
//!
//! With [`Options::auth`] (the base URL of `fixtures/oauth_server.py`) every request needs a
//! bearer token that server's `/introspect` calls active: without one, 401 with
//! `WWW-Authenticate: Bearer resource_metadata=...` (served at
//! `/.well-known/oauth-protected-resource/sse`, naming that authorization server); `admin`
//! without `mcp:admin` is a 403 `insufficient_scope` on the POST. `POST /sse` is 405 (as a
//! legacy server answers a streamable-HTTP client) before any auth check.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What the `endpoint` event says.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// `/messages?sessionId=<id>&note=x%2Fy`.
    Normal,
    /// This text, as is.
    Literal(String),
    /// No `endpoint` event at all (comments every 200 ms).
    Never,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub endpoint: Endpoint,
    /// The OAuth test server's base URL: tokens are checked by its `/introspect`.
    pub auth: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            endpoint: Endpoint::Normal,
            auth: None,
        }
    }
}

/// What the server saw (no token values).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// `GET /sse` answered with a stream.
    pub streams: usize,
    /// Session ids issued, in order.
    pub sessions: Vec<String>,
    /// Path and query of every POST to a message endpoint.
    pub post_targets: Vec<String>,
    /// Requests (GET or POST) carrying an active bearer token.
    pub authorized_gets: usize,
    pub authorized_posts: usize,
    /// Requests answered 401.
    pub unauthorized: usize,
    /// `admin` calls answered 403.
    pub scope_refusals: usize,
    /// Tools called (names), in order.
    pub calls: Vec<String>,
}

pub struct LegacySseServer {
    pub port: u16,
    stats: Arc<Mutex<Stats>>,
    _stop: DropGuard,
}

impl LegacySseServer {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    pub fn stats(&self) -> Stats {
        self.stats.lock().unwrap().clone()
    }
}

enum Frame {
    Data(Vec<u8>),
    Close,
}

struct State {
    options: Options,
    port: u16,
    stats: Arc<Mutex<Stats>>,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Frame>>>,
    next: Mutex<u64>,
    http: reqwest::Client,
}

/// Starts the server; it stops when the returned value is dropped.
pub async fn start(options: Options) -> LegacySseServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stats = Arc::new(Mutex::new(Stats::default()));
    let state = Arc::new(State {
        options,
        port,
        stats: stats.clone(),
        sessions: Mutex::new(HashMap::new()),
        next: Mutex::new(0),
        http: reqwest::Client::new(),
    });
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        loop {
            let socket = tokio::select! {
                _ = stopped.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => socket,
                    Err(_) => return,
                },
            };
            let state = state.clone();
            let stopped = stopped.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = stopped.cancelled() => {}
                    _ = serve(state, socket) => {}
                }
            });
        }
    });
    LegacySseServer {
        port,
        stats,
        _stop: stop.drop_guard(),
    }
}

struct Request {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

async fn respond(socket: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &str) {
    let mut text = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let _ = socket.write_all(text.as_bytes()).await;
    let _ = socket.shutdown().await;
}

impl State {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn resource_metadata(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/sse", self.base())
    }

    /// The token's scope when OAuth is on and it is active; `Some("")` when OAuth is off.
    async fn authorized(&self, request: &Request) -> Option<String> {
        let Some(auth) = &self.options.auth else {
            return Some(String::new());
        };
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))?;
        let answer: Value = self
            .http
            .post(format!("{auth}/introspect"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        if answer["active"] != json!(true) {
            return None;
        }
        Some(answer["scope"].as_str().unwrap_or_default().to_owned())
    }

    async fn unauthorized(&self, socket: &mut TcpStream) {
        self.stats.lock().unwrap().unauthorized += 1;
        let challenge = format!("Bearer resource_metadata=\"{}\"", self.resource_metadata());
        respond(
            socket,
            "401 Unauthorized",
            &[
                ("WWW-Authenticate", challenge),
                ("Content-Type", "application/json".into()),
            ],
            r#"{"error":"invalid_token"}"#,
        )
        .await;
    }
}

async fn serve(state: Arc<State>, mut socket: TcpStream) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let (path, query) = match request.target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (request.target.clone(), String::new()),
    };
    match (request.method.as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/sse") => {
            let Some(auth) = &state.options.auth else {
                return respond(&mut socket, "404 Not Found", &[], "").await;
            };
            let prm = json!({
                "resource": format!("{}/sse", state.base()),
                "authorization_servers": [auth],
            });
            respond(
                &mut socket,
                "200 OK",
                &[("Content-Type", "application/json".into())],
                &prm.to_string(),
            )
            .await
        }
        ("GET", "/sse") => stream(state, socket, request).await,
        ("POST", "/messages") => message(state, socket, request, query).await,
        ("POST", "/sse") => {
            respond(
                &mut socket,
                "405 Method Not Allowed",
                &[("Allow", "GET".into())],
                "",
            )
            .await
        }
        _ => respond(&mut socket, "404 Not Found", &[], "").await,
    }
}

fn frame(event: &str, data: &str) -> Frame {
    Frame::Data(format!("event: {event}\ndata: {data}\n\n").into_bytes())
}

async fn stream(state: Arc<State>, mut socket: TcpStream, request: Request) {
    if state.authorized(&request).await.is_none() {
        return state.unauthorized(&mut socket).await;
    }
    let id = {
        let mut next = state.next.lock().unwrap();
        *next += 1;
        format!("s{}-{}", *next, state.port)
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    state.sessions.lock().unwrap().insert(id.clone(), tx);
    {
        let mut stats = state.stats.lock().unwrap();
        stats.streams += 1;
        stats.sessions.push(id.clone());
        if state.options.auth.is_some() {
            stats.authorized_gets += 1;
        }
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let endpoint = match &state.options.endpoint {
        Endpoint::Normal => Some(format!("/messages?sessionId={id}&note=x%2Fy")),
        Endpoint::Literal(text) => Some(text.clone()),
        Endpoint::Never => None,
    };
    match endpoint {
        Some(endpoint) => {
            let event = format!("event: endpoint\ndata: {endpoint}\n\n");
            if socket.write_all(event.as_bytes()).await.is_err() {
                return;
            }
        }
        None => loop {
            if socket.write_all(b": waiting\n\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        },
    }
    while let Some(frame) = rx.recv().await {
        match frame {
            Frame::Data(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            Frame::Close => break,
        }
    }
    state.sessions.lock().unwrap().remove(&id);
    let _ = socket.shutdown().await;
}

async fn message(state: Arc<State>, mut socket: TcpStream, request: Request, query: String) {
    let session = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .unwrap_or_default()
        .to_owned();
    let tx = state.sessions.lock().unwrap().get(&session).cloned();
    let Some(tx) = tx else {
        return respond(&mut socket, "404 Not Found", &[], "no such session").await;
    };
    let Some(scope) = state.authorized(&request).await else {
        return state.unauthorized(&mut socket).await;
    };
    {
        let mut stats = state.stats.lock().unwrap();
        stats.post_targets.push(request.target.clone());
        if state.options.auth.is_some() {
            stats.authorized_posts += 1;
        }
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&request.body) else {
        return respond(&mut socket, "400 Bad Request", &[], "not JSON").await;
    };
    let Some(id) = msg.get("id").cloned() else {
        // A notification (or a response): nothing to answer.
        return respond(&mut socket, "202 Accepted", &[], "").await;
    };
    let method = msg["method"].as_str().unwrap_or_default();
    let tool = msg["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if method == "tools/call"
        && tool == "admin"
        && state.options.auth.is_some()
        && !scope.split(' ').any(|s| s == "mcp:admin")
    {
        state.stats.lock().unwrap().scope_refusals += 1;
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:admin\", resource_metadata=\"{}\"",
            state.resource_metadata()
        );
        return respond(
            &mut socket,
            "403 Forbidden",
            &[("WWW-Authenticate", challenge)],
            r#"{"error":"insufficient_scope"}"#,
        )
        .await;
    }
    respond(&mut socket, "202 Accepted", &[], "").await;
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-sse-fixture", "version": "1.0.0"},
        }),
        "tools/list" => {
            let schema = json!({"type": "object", "properties": {}});
            let echo = json!({"type": "object", "properties": {"message": {"type": "string"}}});
            let tools: Vec<Value> = ["hangup", "oversized", "garbage", "admin"]
                .iter()
                .map(|name| json!({"name": name, "description": name, "inputSchema": schema}))
                .chain([json!({"name": "echo", "description": "echo", "inputSchema": echo})])
                .collect();
            json!({"tools": tools})
        }
        "ping" => json!({}),
        "tools/call" => {
            state.stats.lock().unwrap().calls.push(tool.clone());
            match tool.as_str() {
                "hangup" => {
                    let _ = tx.send(Frame::Close);
                    return;
                }
                "oversized" => {
                    let mut data = b"event: message\ndata: ".to_vec();
                    data.extend(std::iter::repeat_n(b'x', 1024 * 1024));
                    let _ = tx.send(Frame::Data(data));
                    return;
                }
                "garbage" => {
                    let _ = tx.send(frame(
                        "message",
                        "{\"jsonrpc\": \"2.0\", \"id\": [truncated",
                    ));
                    return;
                }
                "echo" => {
                    let text = msg["params"]["arguments"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    json!({"content": [{"type": "text", "text": text}]})
                }
                _ => json!({"content": [{"type": "text", "text": format!("{tool} done")}]}),
            }
        }
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}});
            let _ = tx.send(frame("message", &error.to_string()));
            return;
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let _ = tx.send(frame("message", &answer.to_string()));
}
