//! [`McpManager`]: one supervisor task per configured server (connect, list tools, follow
//! `list_changed`, detect crash/hang/garbage, reconnect with backoff), a merged catalog, and calls
//! with timeouts, cancellation and progress.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, PingRequest,
    RequestId, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, serve_client};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, McpToolEntry, build_catalog};
use crate::config::{ServerConfig, Transport};
use crate::elicitation::{DeclineElicitation, ElicitationBroker};
use crate::error::McpError;
use crate::handler::{ConnEvent, Handler, ProgressRoute, ProgressRoutes, ProgressSink};
use crate::status::{Backoff, ServerState, ServerStatus};
use crate::stdio::{self, StdioProcess};

/// A connection that lasted this long resets the reconnect backoff; shorter ones keep climbing it,
/// so a server that crashes right after connecting is not restarted every second forever.
pub const STABLE_CONNECTION: Duration = Duration::from_secs(30);

/// Default time a health-check ping may take after a call timed out or failed in transport.
pub const DEFAULT_HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Manager-wide options. Per-server timeouts live in [`ServerConfig::timeouts`].
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// `clientInfo.name` sent in `initialize`.
    pub client_name: String,
    /// `clientInfo.version` sent in `initialize`.
    pub client_version: String,
    /// Reconnect schedule after a failure.
    pub backoff: Backoff,
    /// Working directory of stdio servers without their own `cwd` (usually the project root).
    pub default_cwd: Option<PathBuf>,
    /// How long a health-check ping may take before the server counts as hung.
    pub health_check_timeout: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            client_name: "aibuddy".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            backoff: Backoff::default(),
            default_cwd: None,
            health_check_timeout: DEFAULT_HEALTH_CHECK_TIMEOUT,
        }
    }
}

/// Host services the servers may reach through the client.
#[derive(Clone)]
pub struct McpHandlers {
    /// Where elicitation requests go (the same broker that asks the person for confirmations).
    pub elicitation: Arc<dyn ElicitationBroker>,
}

impl Default for McpHandlers {
    fn default() -> Self {
        McpHandlers {
            elicitation: Arc::new(DeclineElicitation),
        }
    }
}

/// The result of a completed `tools/call`. `is_error` results are tool-level failures reported by
/// the server (the call itself worked); the content blocks are kept in their wire form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpCallResult {
    pub server: String,
    pub tool: String,
    /// Content blocks as JSON (`{"type":"text","text":...}`, images, resources, ...).
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl McpCallResult {
    /// The text blocks joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

struct Slot {
    config: ServerConfig,
    state: ServerState,
    protocol_version: Option<String>,
    server_info: Option<String>,
    tools: Vec<Tool>,
    tools_refreshed: u32,
    peer: Option<Peer<RoleClient>>,
    events: Option<mpsc::UnboundedSender<ConnEvent>>,
}

struct Shared {
    slots: RwLock<BTreeMap<String, Slot>>,
    catalog: RwLock<Arc<Catalog>>,
    changes: watch::Sender<u64>,
    progress: Arc<ProgressRoutes>,
    options: McpOptions,
    broker: Arc<dyn ElicitationBroker>,
}

impl Shared {
    /// Changes one slot; rebuilds the catalog when `tools_changed`; notifies watchers.
    fn update(&self, server: &str, tools_changed: bool, f: impl FnOnce(&mut Slot)) {
        {
            let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(slot) = slots.get_mut(server) {
                f(slot);
            }
            if tools_changed {
                let listed: BTreeMap<String, Vec<Tool>> = slots
                    .iter()
                    .filter(|(_, s)| s.state == ServerState::Connected)
                    .map(|(name, s)| (name.clone(), s.tools.clone()))
                    .collect();
                let catalog = build_catalog(&listed);
                *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
            }
        }
        self.changes.send_modify(|generation| *generation += 1);
    }

    fn set_state(&self, server: &str, state: ServerState) {
        self.update(server, false, |slot| slot.state = state);
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn connection(&self, server: &str) -> Result<Live, McpError> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let Some(slot) = slots.get(server) else {
            return Err(McpError::UnknownServer {
                server: server.to_owned(),
            });
        };
        match (&slot.state, &slot.peer) {
            (ServerState::Connected, Some(peer)) => Ok(Live {
                peer: peer.clone(),
                events: slot.events.clone(),
                call_timeout: slot.config.timeouts.call,
            }),
            (state, _) => Err(McpError::ServerUnavailable {
                server: server.to_owned(),
                reason: describe_state(state),
            }),
        }
    }

    /// Why a qualified name is not in the catalog: its server is down (Execution: a missing
    /// dependency, worth retrying later) or the name is simply unknown (Discovery).
    fn unknown_tool(&self, qualified_name: &str) -> McpError {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let down = slots.iter().find(|(name, slot)| {
            slot.config.enabled
                && slot.state != ServerState::Connected
                && qualified_name.starts_with(&format!(
                    "{}{}__",
                    crate::names::PREFIX,
                    crate::names::sanitize_part(name)
                ))
        });
        match down {
            Some((name, slot)) => McpError::ServerUnavailable {
                server: name.clone(),
                reason: describe_state(&slot.state),
            },
            None => McpError::UnknownTool {
                name: qualified_name.to_owned(),
            },
        }
    }

    fn failure_reason(&self, server: &str) -> Option<String> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        match slots.get(server).map(|s| &s.state) {
            Some(ServerState::Failed { reason, .. }) => Some(reason.clone()),
            _ => None,
        }
    }
}

/// What a call needs from a connected server.
struct Live {
    peer: Peer<RoleClient>,
    events: Option<mpsc::UnboundedSender<ConnEvent>>,
    call_timeout: Duration,
}

/// An rmcp error as text without the transport's Rust type names (`Transport [rmcp::...] error`
/// becomes `Transport error`). Pure.
pub(crate) fn tidy(error: &dyn std::fmt::Display) -> String {
    let mut text = error.to_string();
    while let Some(start) = text.find("[rmcp::") {
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in text[start..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let cut_start = if text[..start].ends_with(' ') {
            start - 1
        } else {
            start
        };
        text.replace_range(cut_start..=end, "");
    }
    text
}

fn describe_state(state: &ServerState) -> String {
    match state {
        ServerState::Disabled => "disabled in its configuration".into(),
        ServerState::Connecting => "still connecting".into(),
        ServerState::Connected => "connected".into(),
        ServerState::Failed { reason, .. } => format!("failed: {reason}"),
        ServerState::Reconnecting {
            attempt,
            last_reason,
        } => format!("reconnecting (attempt {attempt}) after: {last_reason}"),
    }
}

/// Connections to every configured MCP server, and the merged tool catalog.
///
/// Dropping the manager stops every supervisor and kills every stdio server.
pub struct McpManager {
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl McpManager {
    /// Starts one supervisor per enabled server and returns at once; servers connect in the
    /// background (see [`McpManager::wait_until_settled`]). Must run inside a Tokio runtime.
    /// Duplicate names: the last config wins.
    pub fn start(configs: Vec<ServerConfig>, handlers: McpHandlers, options: McpOptions) -> Self {
        let mut slots = BTreeMap::new();
        for config in configs {
            let state = if config.enabled {
                ServerState::Connecting
            } else {
                ServerState::Disabled
            };
            slots.insert(
                config.name.clone(),
                Slot {
                    config,
                    state,
                    protocol_version: None,
                    server_info: None,
                    tools: Vec::new(),
                    tools_refreshed: 0,
                    peer: None,
                    events: None,
                },
            );
        }
        let enabled: Vec<String> = slots
            .iter()
            .filter(|(_, s)| s.config.enabled)
            .map(|(n, _)| n.clone())
            .collect();
        let (changes, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            slots: RwLock::new(slots),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            changes,
            progress: Arc::new(ProgressRoutes::default()),
            options,
            broker: handlers.elicitation,
        });
        let shutdown = CancellationToken::new();
        let tasks = enabled
            .into_iter()
            .map(|name| tokio::spawn(supervise(shared.clone(), name, shutdown.child_token())))
            .collect();
        McpManager {
            shared,
            shutdown,
            tasks: std::sync::Mutex::new(tasks),
        }
    }

    /// Every usable tool of every connected server, sorted by qualified name.
    pub fn catalog(&self) -> Vec<McpToolEntry> {
        self.shared.catalog().entries.clone()
    }

    /// The catalog entry behind a qualified name.
    pub fn entry(&self, qualified_name: &str) -> Option<McpToolEntry> {
        self.shared
            .catalog()
            .entries
            .iter()
            .find(|e| e.qualified_name == qualified_name)
            .cloned()
    }

    /// One status per configured server, sorted by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        let catalog = self.shared.catalog();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for entry in &catalog.entries {
            *counts.entry(entry.server.as_str()).or_default() += 1;
        }
        let slots = self
            .shared
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        slots
            .iter()
            .map(|(name, slot)| ServerStatus {
                server: name.clone(),
                state: slot.state.clone(),
                protocol_version: slot.protocol_version.clone(),
                server_info: slot.server_info.clone(),
                tool_count: counts.get(name.as_str()).copied().unwrap_or(0),
                tools_refreshed: slot.tools_refreshed,
                rejected_tools: catalog
                    .rejected
                    .iter()
                    .filter(|r| &r.server == name)
                    .cloned()
                    .collect(),
            })
            .collect()
    }

    /// A receiver whose value changes whenever a status or the catalog changes (re-evaluate the
    /// deferral gates then).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// Waits until `predicate(status)` holds, up to `timeout`. Returns whether it held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        predicate: impl Fn(&[ServerStatus]) -> bool,
    ) -> bool {
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if predicate(&self.status()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return predicate(&self.status()),
            }
        }
    }

    /// Waits until no enabled server is still on its first connection attempt, up to `timeout`.
    pub async fn wait_until_settled(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, |status| {
            status.iter().all(|s| s.state != ServerState::Connecting)
        })
        .await
    }

    /// Calls a tool by its qualified name. `args` must be a JSON object (or null for none) that
    /// fits the tool's input schema. Cancelling `cancel` sends `notifications/cancelled` and
    /// returns [`McpError::Cancelled`]; progress notifications go to `progress` until the call
    /// ends or is cancelled.
    pub async fn call(
        &self,
        qualified_name: &str,
        args: Value,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<McpCallResult, McpError> {
        let catalog = self.shared.catalog();
        let Some(entry) = catalog
            .entries
            .iter()
            .find(|e| e.qualified_name == qualified_name)
        else {
            return Err(self.shared.unknown_tool(qualified_name));
        };
        let args = match args {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            other => {
                return Err(McpError::InvalidArguments {
                    tool: qualified_name.to_owned(),
                    message: format!("arguments must be a JSON object, found {other}"),
                });
            }
        };
        let args_value = Value::Object(args);
        entry
            .check_arguments(&args_value)
            .map_err(|message| McpError::InvalidArguments {
                tool: qualified_name.to_owned(),
                message,
            })?;
        let Value::Object(args) = args_value else {
            return Err(McpError::InvalidArguments {
                tool: qualified_name.to_owned(),
                message: "arguments must be an object".into(),
            });
        };
        let server = entry.server.clone();
        let tool = entry.name.clone();
        drop(catalog);
        let Live {
            peer,
            events,
            call_timeout,
        } = self.shared.connection(&server)?;
        if cancel.is_cancelled() {
            return Err(McpError::Cancelled {
                tool: qualified_name.to_owned(),
            });
        }

        let params = CallToolRequestParams::new(tool.clone()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.lost(&server, &tool, &peer, events, e)),
        };
        let request_id = handle.id.clone();
        let call_cancel = cancel.child_token();
        let _route = progress.map(|sink| {
            self.shared.progress.insert(
                handle.progress_token.clone(),
                ProgressRoute {
                    server: server.clone(),
                    tool: tool.clone(),
                    sink,
                    cancel: call_cancel.clone(),
                },
            );
            RouteGuard {
                routes: self.shared.progress.clone(),
                server: server.clone(),
                token: handle.progress_token.clone(),
            }
        });

        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                call_cancel.cancel();
                send_cancelled(&peer, request_id, "cancelled by the user").await;
                Err(McpError::Cancelled { tool: qualified_name.to_owned() })
            }
            _ = tokio::time::sleep(call_timeout) => {
                call_cancel.cancel();
                send_cancelled(&peer, request_id, "timed out").await;
                self.health_check(&server, &peer, events, format!("{tool} timed out after {}s", call_timeout.as_secs_f64()));
                Err(McpError::Timeout { tool: qualified_name.to_owned(), after: call_timeout })
            }
            response = handle.await_response() => {
                call_cancel.cancel();
                match response {
                    Ok(ServerResult::CallToolResult(result)) => Ok(McpCallResult {
                        server,
                        tool,
                        content: result.content.iter().filter_map(|c| serde_json::to_value(c).ok()).collect(),
                        structured_content: result.structured_content,
                        is_error: result.is_error.unwrap_or(false),
                    }),
                    Ok(_) => Err(McpError::Protocol { server, message: format!("unexpected response type to tools/call {tool}") }),
                    Err(ServiceError::McpError(e)) => Err(McpError::Server { server, tool, code: e.code.0, message: e.message.to_string() }),
                    Err(ServiceError::Cancelled { .. }) => Err(McpError::Cancelled { tool: qualified_name.to_owned() }),
                    Err(e) => Err(self.lost(&server, &tool, &peer, events, e)),
                }
            }
        }
    }

    fn lost(
        &self,
        server: &str,
        tool: &str,
        peer: &Peer<RoleClient>,
        events: Option<mpsc::UnboundedSender<ConnEvent>>,
        error: ServiceError,
    ) -> McpError {
        self.health_check(server, peer, events, format!("{tool}: {}", tidy(&error)));
        McpError::ConnectionLost {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason: self
                .shared
                .failure_reason(server)
                .unwrap_or_else(|| tidy(&error)),
        }
    }

    /// Pings the server in the background; no answer in time marks the connection broken.
    fn health_check(
        &self,
        server: &str,
        peer: &Peer<RoleClient>,
        events: Option<mpsc::UnboundedSender<ConnEvent>>,
        context: String,
    ) {
        let Some(events) = events else { return };
        let peer = peer.clone();
        let timeout = self.shared.options.health_check_timeout;
        let server = server.to_owned();
        tokio::spawn(async move {
            let ping = async {
                let handle = peer
                    .send_request_with_option(
                        ClientRequest::PingRequest(PingRequest::default()),
                        PeerRequestOptions::with_timeout(timeout),
                    )
                    .await?;
                handle.await_response().await
            };
            match tokio::time::timeout(timeout + Duration::from_millis(100), ping).await {
                Ok(Ok(_)) => tracing::debug!(server, "health check passed after: {context}"),
                Ok(Err(ServiceError::Timeout { .. })) | Err(_) => {
                    let _ = events.send(ConnEvent::Broken(format!(
                        "unresponsive ({context}; no answer to ping within {}s)",
                        timeout.as_secs_f64()
                    )));
                }
                Ok(Err(e)) => {
                    let _ = events.send(ConnEvent::Broken(format!(
                        "unresponsive ({context}; ping failed: {})",
                        tidy(&e)
                    )));
                }
            }
        });
    }

    /// Stops every supervisor, closes every connection and kills every stdio server.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    server: String,
    token: rmcp::model::ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.remove(&self.server, &self.token);
    }
}

async fn send_cancelled(peer: &Peer<RoleClient>, request_id: RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(request_id), Some(reason.to_owned()));
    if let Err(e) = peer.notify_cancelled(params).await {
        tracing::debug!("could not send notifications/cancelled: {e}");
    }
}

enum Ended {
    Shutdown,
    /// `was_stable`: the connection had lasted [`STABLE_CONNECTION`] (the backoff starts over).
    Failed {
        reason: String,
        was_stable: bool,
    },
}

async fn supervise(shared: Arc<Shared>, name: String, shutdown: CancellationToken) {
    let config = {
        let slots = shared.slots.read().unwrap_or_else(PoisonError::into_inner);
        match slots.get(&name) {
            Some(slot) => slot.config.clone(),
            None => return,
        }
    };
    let backoff = shared.options.backoff;
    let mut attempt: u32 = 0;
    loop {
        match run_connection(&shared, &config, &shutdown).await {
            Ended::Shutdown => {
                shared.update(&name, true, |slot| {
                    slot.state = ServerState::Failed {
                        reason: "client shut down".into(),
                        retry_in_ms: None,
                    };
                    slot.peer = None;
                    slot.events = None;
                    slot.tools.clear();
                });
                return;
            }
            Ended::Failed { reason, was_stable } => {
                if was_stable {
                    attempt = 0;
                }
                attempt = attempt.saturating_add(1);
                let delay = backoff.delay(attempt);
                tracing::warn!(server = %name, attempt, delay_ms = delay.as_millis() as u64, "MCP server failed: {reason}");
                let retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                shared.update(&name, true, |slot| {
                    slot.state = ServerState::Failed {
                        reason: reason.clone(),
                        retry_in_ms: Some(retry_in_ms),
                    };
                    slot.peer = None;
                    slot.events = None;
                    slot.tools.clear();
                });
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.cancelled() => {
                        shared.set_state(&name, ServerState::Failed { reason, retry_in_ms: None });
                        return;
                    }
                }
                shared.set_state(
                    &name,
                    ServerState::Reconnecting {
                        attempt,
                        last_reason: reason,
                    },
                );
            }
        }
    }
}

/// A `Broken` reason already queued (it explains a closed connection better than "closed").
fn pending_broken(events: &mut mpsc::UnboundedReceiver<ConnEvent>) -> Option<String> {
    while let Ok(event) = events.try_recv() {
        if let ConnEvent::Broken(reason) = event {
            return Some(reason);
        }
    }
    None
}

/// The next `Broken` event (list_changed before the first listing is irrelevant).
async fn next_broken(events: &mut mpsc::UnboundedReceiver<ConnEvent>) -> String {
    loop {
        match events.recv().await {
            Some(ConnEvent::Broken(reason)) => return reason,
            Some(ConnEvent::ToolsChanged) => {}
            None => return std::future::pending().await,
        }
    }
}

async fn child_exit(process: &mut Option<StdioProcess>) -> String {
    match process {
        Some(p) => {
            let _ = p.child.wait().await;
            p.exit_reason().unwrap_or_else(|| "process exited".into())
        }
        None => std::future::pending().await,
    }
}

/// Adds how the process ended (if it did, within a short grace) to a failure reason.
async fn with_exit(reason: String, process: &mut Option<StdioProcess>) -> String {
    let Some(p) = process else { return reason };
    let _ = tokio::time::timeout(Duration::from_millis(300), p.child.wait()).await;
    match p.exit_reason() {
        Some(exit) => format!("{reason}; {exit}"),
        None => reason,
    }
}

async fn kill(process: &mut Option<StdioProcess>) {
    if let Some(p) = process {
        p.kill().await;
    }
}

fn http_config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> StreamableHttpClientTransportConfig {
    let mut custom = HashMap::new();
    let mut auth = None;
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            auth = Some(v.strip_prefix("Bearer ").unwrap_or(v).to_owned());
            continue;
        }
        // Validated when the config was parsed; skip rather than fail if built inline.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            custom.insert(name, value);
        }
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(token) = auth {
        config = config.auth_header(token);
    }
    config
}

async fn run_connection(
    shared: &Arc<Shared>,
    config: &ServerConfig,
    shutdown: &CancellationToken,
) -> Ended {
    let name = config.name.as_str();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let handler = Handler {
        server: name.to_owned(),
        broker: shared.broker.clone(),
        progress: shared.progress.clone(),
        events: events_tx.clone(),
        client_name: shared.options.client_name.clone(),
        client_version: shared.options.client_version.clone(),
    };
    let fail = |reason: String| Ended::Failed {
        reason,
        was_stable: false,
    };

    let mut process: Option<StdioProcess> = None;
    let connecting = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            match stdio::spawn(
                name,
                command,
                args,
                env,
                cwd.as_deref(),
                shared.options.default_cwd.as_ref(),
                events_tx.clone(),
            ) {
                Ok((proc, stdout, stdin)) => {
                    process = Some(proc);
                    futures::future::Either::Left(serve_client(handler, (stdout, stdin)))
                }
                Err(e) => return fail(format!("cannot start \"{command}\": {e}")),
            }
        }
        Transport::Http { url, headers } => futures::future::Either::Right(serve_client(
            handler,
            StreamableHttpClientTransport::from_config(http_config(url, headers)),
        )),
    };

    let connect_timeout = config.timeouts.connect;
    let running: RunningService<RoleClient, Handler> = tokio::select! {
        result = tokio::time::timeout(connect_timeout, connecting) => match result {
            Ok(Ok(running)) => running,
            Ok(Err(e)) => {
                let reason = match pending_broken(&mut events) {
                    Some(reason) => reason,
                    None => with_exit(format!("initialize failed: {}", tidy(&e)), &mut process).await,
                };
                kill(&mut process).await;
                return fail(reason);
            }
            Err(_) => {
                kill(&mut process).await;
                return fail(format!("no answer to initialize within {}s", connect_timeout.as_secs_f64()));
            }
        },
        reason = next_broken(&mut events) => {
            kill(&mut process).await;
            return fail(reason);
        }
        _ = shutdown.cancelled() => {
            kill(&mut process).await;
            return Ended::Shutdown;
        }
    };

    let peer = running.peer().clone();
    let info = peer.peer_info();
    let protocol_version = info.as_ref().map(|i| i.protocol_version.to_string());
    let server_info = info
        .as_ref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| format!("{} {}", s.name, s.version));
    let service_cancel = running.cancellation_token();
    let mut service_done = tokio::spawn(running.waiting());

    let list = |peer: Peer<RoleClient>| async move {
        match tokio::time::timeout(connect_timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(format!("tools/list failed: {}", tidy(&e))),
            Err(_) => Err(format!(
                "no answer to tools/list within {}s",
                connect_timeout.as_secs_f64()
            )),
        }
    };

    let mut connected = false;
    let mut connected_at: Option<Instant> = None;
    let stable = |at: Option<Instant>| at.is_some_and(|t| t.elapsed() >= STABLE_CONNECTION);
    let mut pending_list = true;
    let outcome = 'conn: loop {
        if pending_list {
            pending_list = false;
            let listing = list(peer.clone());
            tokio::pin!(listing);
            // A list_changed that arrives while a listing is in flight asks for one more listing.
            let listed = loop {
                tokio::select! {
                    listed = &mut listing => break listed,
                    event = events.recv() => match event {
                        Some(ConnEvent::ToolsChanged) => pending_list = true,
                        Some(ConnEvent::Broken(reason)) => break Err(reason),
                        None => {}
                    },
                    _ = shutdown.cancelled() => break 'conn Ended::Shutdown,
                }
            };
            match listed {
                Ok(tools) => {
                    let first = !connected;
                    connected = true;
                    connected_at.get_or_insert_with(Instant::now);
                    tracing::info!(
                        server = name,
                        tools = tools.len(),
                        "MCP server tools listed"
                    );
                    let (pv, si, ev, pr) = (
                        protocol_version.clone(),
                        server_info.clone(),
                        events_tx.clone(),
                        peer.clone(),
                    );
                    shared.update(name, true, move |slot| {
                        slot.tools = tools;
                        if !first {
                            slot.tools_refreshed += 1;
                        }
                        if first {
                            slot.state = ServerState::Connected;
                            slot.protocol_version = pv;
                            slot.server_info = si;
                            slot.events = Some(ev);
                            slot.peer = Some(pr);
                        }
                    });
                }
                Err(reason) => {
                    break Ended::Failed {
                        reason: with_exit(reason, &mut process).await,
                        was_stable: stable(connected_at),
                    };
                }
            }
            if pending_list {
                continue;
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => break Ended::Shutdown,
            event = events.recv() => match event {
                Some(ConnEvent::ToolsChanged) => pending_list = true,
                Some(ConnEvent::Broken(reason)) => break Ended::Failed { reason, was_stable: stable(connected_at) },
                None => {}
            },
            _ = &mut service_done => {
                let reason = match pending_broken(&mut events) {
                    Some(reason) => reason,
                    None => with_exit("connection closed".into(), &mut process).await,
                };
                break Ended::Failed { reason, was_stable: stable(connected_at) };
            }
            reason = child_exit(&mut process) => break Ended::Failed { reason, was_stable: stable(connected_at) },
        }
    };
    service_cancel.cancel();
    kill(&mut process).await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_removes_transport_type_names() {
        let raw = "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Client error: refused";
        assert_eq!(
            tidy(&raw),
            "Transport send error: Transport error: Client error: refused"
        );
        assert_eq!(tidy(&"plain [1] text"), "plain [1] text");
    }

    #[test]
    fn call_results_join_text_blocks() {
        let result = McpCallResult {
            server: "s".into(),
            tool: "t".into(),
            content: vec![
                serde_json::json!({"type": "text", "text": "a"}),
                serde_json::json!({"type": "image", "data": "", "mimeType": "image/png"}),
                serde_json::json!({"type": "text", "text": "b"}),
            ],
            structured_content: None,
            is_error: false,
        };
        assert_eq!(result.text(), "a\nb");
    }
}

#[cfg(test)]
mod send_tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<F: std::future::Future + Send>(_: F) {}

    #[tokio::test]
    async fn manager_and_call_future_can_cross_threads() {
        assert_send_sync::<McpManager>();
        let manager = McpManager::start(Vec::new(), McpHandlers::default(), McpOptions::default());
        assert_send(manager.call("mcp__x__y", Value::Null, CancellationToken::new(), None));
        assert_send(manager.wait_until_settled(Duration::from_millis(1)));
        assert!(manager.catalog().is_empty());
        manager.shutdown().await;
    }
}
