//! [`McpManager`]: one supervisor task per configured server (connect, list tools, follow
//! `list_changed`, detect crash/hang/garbage, reconnect with backoff), a merged catalog, and calls
//! with timeouts, cancellation and progress.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, PingRequest,
    RequestId, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, McpToolEntry, build_catalog};
use crate::config::ServerConfig;
use crate::connection::supervise;
use crate::elicitation::ElicitationBroker;
use crate::error::McpError;
use crate::handler::{ConnEvent, ProgressRoute, ProgressRoutes, ProgressSink};
use crate::redact::Redactor;
use crate::status::{ServerState, ServerStatus};
use crate::stdio::BrokenReason;

/// A connection that lasted this long resets the reconnect backoff; shorter ones keep climbing it,
/// so a server that crashes right after connecting is not restarted every second forever.
pub const STABLE_CONNECTION: Duration = Duration::from_secs(30);

pub use crate::options::{
    DEFAULT_HEALTH_CHECK_TIMEOUT, DEFAULT_PROGRESS_INTERVAL, McpCallResult, McpHandlers, McpOptions,
};

pub(crate) struct Slot {
    pub config: ServerConfig,
    /// Cuts the config's values out of every reason and log line about this server.
    pub redactor: Redactor,
    pub state: ServerState,
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
    pub tools: Vec<Tool>,
    pub tools_refreshed: u32,
    pub peer: Option<Peer<RoleClient>>,
    pub events: Option<mpsc::UnboundedSender<ConnEvent>>,
    /// Why the live connection broke, set by the stdout screen before it closes the stream.
    pub broken: Option<BrokenReason>,
}

pub(crate) struct Shared {
    pub slots: RwLock<BTreeMap<String, Slot>>,
    pub catalog: RwLock<Arc<Catalog>>,
    pub changes: watch::Sender<u64>,
    pub progress: Arc<ProgressRoutes>,
    pub options: McpOptions,
    pub broker: Arc<dyn ElicitationBroker>,
}

impl Shared {
    /// Changes one slot; rebuilds the catalog when `tools_changed`; notifies watchers.
    pub fn update(&self, server: &str, tools_changed: bool, f: impl FnOnce(&mut Slot)) {
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
                let trusted: BTreeSet<String> = slots
                    .iter()
                    .filter(|(_, s)| s.config.trust_annotations)
                    .map(|(name, _)| name.clone())
                    .collect();
                let catalog = build_catalog(&listed, &trusted);
                *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
            }
        }
        self.changes.send_modify(|generation| *generation += 1);
    }

    pub fn set_state(&self, server: &str, state: ServerState) {
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
                redactor: slot.redactor.clone(),
                broken: slot.broken.clone(),
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

    pub fn failure_reason(&self, server: &str) -> Option<String> {
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
    redactor: Redactor,
    broken: Option<BrokenReason>,
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
                    redactor: Redactor::for_config(&config),
                    config,
                    broken: None,
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
            progress: Arc::new(ProgressRoutes::new(options.progress_interval)),
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
            redactor,
            broken,
        } = self.shared.connection(&server)?;
        let lost = |e: ServiceError| {
            self.lost(
                &server,
                &tool,
                &peer,
                events.clone(),
                &redactor,
                broken.as_ref(),
                e,
            )
        };
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
            Err(e) => return Err(lost(e)),
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
                self.health_check(&server, &peer, events.clone(), format!("{tool} timed out after {}s", call_timeout.as_secs_f64()));
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
                    Err(ServiceError::McpError(e)) => Err(McpError::Server { message: redactor.apply(&e.message), server, tool, code: e.code.0 }),
                    // Not our cancel (that is the branch above): the server cancelled its own answer.
                    Err(ServiceError::Cancelled { reason }) => Err(McpError::Protocol {
                        message: redactor.apply(&format!(
                            "the server cancelled {tool} itself{}",
                            reason.map(|r| format!(": {r}")).unwrap_or_default()
                        )),
                        server,
                    }),
                    Err(e) => Err(lost(e)),
                }
            }
        }
    }

    /// The call failed in transport: the reason the stdout screen recorded (oversized or
    /// invalid message, ...), else the supervisor's, else the transport's own; redacted.
    #[allow(clippy::too_many_arguments)]
    fn lost(
        &self,
        server: &str,
        tool: &str,
        peer: &Peer<RoleClient>,
        events: Option<mpsc::UnboundedSender<ConnEvent>>,
        redactor: &Redactor,
        broken: Option<&BrokenReason>,
        error: ServiceError,
    ) -> McpError {
        let transport = redactor.apply(&tidy(&error));
        self.health_check(server, peer, events, format!("{tool}: {transport}"));
        let screened =
            broken.and_then(|b| b.lock().unwrap_or_else(PoisonError::into_inner).clone());
        let reason = screened
            .or_else(|| self.shared.failure_reason(server))
            .unwrap_or(transport);
        McpError::ConnectionLost {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason: redactor.apply(&reason),
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

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
