//! The rmcp `ClientHandler` of one connection: routes progress to the caller's sink (dropping it
//! once the call was cancelled), reports `tools/list_changed`, sends elicitations to the broker
//! and declines sampling with a clear error.

// Sampling and logging are deprecated for protocol 2026-07-28 (SEP-2577), but this client speaks
// 2025-11-25, where servers still send them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
    FormElicitationCapability, Implementation, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::elicitation::{
    ElicitationBroker, ElicitationRequest, ElicitationResponse, apply_schema_defaults,
    schema_defaults,
};

/// The protocol version the client asks for: the newest one that still has the `initialize`
/// handshake. rmcp's `LATEST` (2026-07-28) has none, and servers in the field speak 2025-11-25
/// or older; they answer `initialize` with their own version, which the client accepts.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

/// One progress notification of a running call, for the client only (never model context).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpProgress {
    pub server: String,
    pub tool: String,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Longest progress message relayed (the rest is cut with a note): a progress event goes to the
/// client (the window, the terminal) and at 20 a second a megabyte message would flood it.
pub const MAX_PROGRESS_MESSAGE_CHARS: usize = 1_000;
/// Longest server log message relayed to the client's log (the rest is cut with a note): at 20
/// a second a megabyte message would fill the log file.
pub const MAX_LOG_MESSAGE_CHARS: usize = 4_096;

/// A server log message's data as one bounded text: its JSON (which escapes the control
/// characters of a string), cut. Pure.
pub(crate) fn log_text(data: &Value) -> String {
    crate::catalog::cut_text(&data.to_string(), MAX_LOG_MESSAGE_CHARS, "log message")
}

/// Where a call's progress goes.
pub type ProgressSink = Arc<dyn Fn(McpProgress) + Send + Sync>;

pub(crate) struct ProgressRoute {
    pub server: String,
    pub tool: String,
    pub sink: ProgressSink,
    pub cancel: CancellationToken,
}

/// Progress events a call may receive in a burst before the rate limit applies.
pub(crate) const PROGRESS_BURST: u32 = 20;

/// A route and its token bucket (`tokens` left, refilled one per interval since `refilled`).
struct Routed {
    route: ProgressRoute,
    tokens: u32,
    refilled: Instant,
}

impl Routed {
    /// Takes a token if one is left after refilling. Pure apart from the clock value given.
    fn take(&mut self, now: Instant, interval: Duration) -> bool {
        if interval.is_zero() {
            return true;
        }
        let earned = now.duration_since(self.refilled).as_nanos() / interval.as_nanos();
        if earned > 0 {
            let earned = u32::try_from(earned).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(earned).min(PROGRESS_BURST);
            self.refilled = now;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// Progress token -> the call that owns it. Shared by every connection of a manager. A call gets
/// a burst of [`PROGRESS_BURST`] events, then at most one per `interval`: a server flooding
/// progress is thinned, not relayed.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    routes: Mutex<HashMap<(String, ProgressToken), Routed>>,
    interval: Duration,
}

impl ProgressRoutes {
    pub fn new(interval: Duration) -> Self {
        ProgressRoutes {
            routes: Mutex::default(),
            interval,
        }
    }

    pub fn insert(&self, token: ProgressToken, route: ProgressRoute) {
        let key = (route.server.clone(), token);
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key,
                Routed {
                    route,
                    tokens: PROGRESS_BURST,
                    refilled: Instant::now(),
                },
            );
    }

    pub fn remove(&self, server: &str, token: &ProgressToken) {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(server.to_owned(), token.clone()));
    }

    /// Delivers a notification to its call's sink, unless the call is gone or cancelled, or the
    /// call has used up its rate. Returns whether it was delivered.
    pub fn deliver(&self, server: &str, params: &ProgressNotificationParam) -> bool {
        let target = {
            let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            routes
                .get_mut(&(server.to_owned(), params.progress_token.clone()))
                .filter(|r| !r.route.cancel.is_cancelled())
                .and_then(|r| {
                    r.take(now, self.interval)
                        .then(|| (r.route.sink.clone(), r.route.tool.clone()))
                })
        };
        let Some((sink, tool)) = target else {
            tracing::trace!(server, token = ?params.progress_token, "progress dropped: no live call owns it, or too soon");
            return false;
        };
        sink(McpProgress {
            server: server.to_owned(),
            tool,
            progress: params.progress,
            total: params.total,
            message: (params.message.as_deref())
                .map(|m| crate::catalog::cut_text(m, MAX_PROGRESS_MESSAGE_CHARS, "message")),
        });
        true
    }
}

/// Events a connection reports to its supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// The connection is broken (garbage on stdout, unresponsive, ...): reconnect.
    Broken(String),
}

/// Server log messages relayed to the client's log per second; the rest are counted and dropped.
const LOG_MESSAGES_PER_SECOND: u32 = 20;

/// A per-second budget of relayed server log messages.
#[derive(Default)]
pub(crate) struct LogBudget {
    window: Mutex<Option<(Instant, u32)>>,
}

impl LogBudget {
    /// Whether one more message fits in the current second.
    fn take(&self) -> bool {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        match &mut *window {
            Some((start, n)) if now.duration_since(*start) < Duration::from_secs(1) => {
                *n += 1;
                *n <= LOG_MESSAGES_PER_SECOND
            }
            _ => {
                *window = Some((now, 1));
                true
            }
        }
    }
}

pub(crate) struct Handler {
    pub log_budget: LogBudget,
    pub server: String,
    pub broker: Arc<dyn ElicitationBroker>,
    pub progress: Arc<ProgressRoutes>,
    pub events: mpsc::UnboundedSender<ConnEvent>,
    pub client_name: String,
    pub client_version: String,
}

/// The initialize parameters: pinned protocol version, form elicitation declared, no sampling
/// and no roots (servers then do not ask for them).
pub fn client_config(name: &str, version: &str) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    let mut elicitation = ElicitationCapability::new();
    elicitation.form = Some(FormElicitationCapability::new());
    capabilities.elicitation = Some(elicitation);
    ClientConfig::new(capabilities, Implementation::new(name, version))
        .with_protocol_version(PROTOCOL_VERSION)
}

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        tracing::info!(server = %self.server, "declined a sampling request");
        Err(rmcp::ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "sampling/createMessage is declined: aibuddy does not offer model sampling to MCP servers yet",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (message, requested_schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (message, requested_schema),
            _ => {
                tracing::info!(server = %self.server, "declined a URL elicitation (not supported)");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
        let request = ElicitationRequest {
            server: self.server.clone(),
            // Shown to the person: cut, as a server's error message is.
            message: crate::catalog::cut_text(
                &message,
                crate::error::MAX_SERVER_MESSAGE_CHARS,
                "message",
            ),
            defaults: schema_defaults(&schema),
            schema: schema.clone(),
        };
        Ok(match self.broker.elicit(request).await {
            ElicitationResponse::Accept(mut content) => {
                apply_schema_defaults(&schema, &mut content);
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            ElicitationResponse::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationResponse::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(&self.server, &params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        let _ = self.events.send(ConnEvent::ToolsChanged);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if !self.log_budget.take() {
            tracing::trace!(server = %self.server, "server log message dropped (flood)");
            return;
        }
        let server = &self.server;
        let data = log_text(&params.data);
        match params.level {
            LoggingLevel::Debug => tracing::debug!(server, %data, "mcp server log"),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(server, %data, "mcp server log")
            }
            LoggingLevel::Warning => tracing::warn!(server, %data, "mcp server log"),
            _ => tracing::error!(server, %data, "mcp server log"),
        }
    }

    fn get_info(&self) -> ClientConfig {
        client_config(&self.client_name, &self.client_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn params(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[test]
    fn progress_reaches_the_owning_call_and_stops_after_cancel() {
        let routes = ProgressRoutes::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancellationToken::new();
        let sink_seen = seen.clone();
        routes.insert(
            ProgressToken(NumberOrString::Number(7)),
            ProgressRoute {
                server: "s".into(),
                tool: "t".into(),
                sink: Arc::new(move |p| sink_seen.lock().unwrap().push(p.progress)),
                cancel: cancel.clone(),
            },
        );
        assert!(routes.deliver("s", &params(7, 1.0)));
        assert!(
            !routes.deliver("other", &params(7, 2.0)),
            "same token on another server"
        );
        assert!(!routes.deliver("s", &params(8, 3.0)), "unknown token");
        cancel.cancel();
        assert!(
            !routes.deliver("s", &params(7, 4.0)),
            "dropped after cancel"
        );
        routes.remove("s", &ProgressToken(NumberOrString::Number(7)));
        assert_eq!(*seen.lock().unwrap(), vec![1.0]);
    }

    #[test]
    fn client_config_pins_the_handshake_version_and_declares_no_sampling() {
        let cfg = client_config("aibuddy", "0.1.0");
        assert_eq!(cfg.protocol_version, ProtocolVersion::V_2025_11_25);
        assert!(cfg.protocol_version.has_initialize());
        assert!(cfg.capabilities.sampling.is_none());
        assert!(cfg.capabilities.elicitation.is_some());
    }

    #[test]
    fn a_progress_flood_is_thinned_per_call() {
        let routes = ProgressRoutes::new(Duration::from_secs(3600));
        let seen = Arc::new(Mutex::new(0u32));
        let count = seen.clone();
        routes.insert(
            ProgressToken(NumberOrString::Number(1)),
            ProgressRoute {
                server: "s".into(),
                tool: "t".into(),
                sink: Arc::new(move |_| *count.lock().unwrap() += 1),
                cancel: CancellationToken::new(),
            },
        );
        let delivered = (0..10_000)
            .filter(|i| routes.deliver("s", &params(1, f64::from(*i))))
            .count();
        assert_eq!(delivered, PROGRESS_BURST as usize);
        assert_eq!(*seen.lock().unwrap(), PROGRESS_BURST);
    }

    #[test]
    fn server_logs_have_a_per_second_budget() {
        let budget = LogBudget::default();
        let taken = (0..1_000).filter(|_| budget.take()).count();
        assert_eq!(taken, LOG_MESSAGES_PER_SECOND as usize);
    }

    #[test]
    fn a_huge_progress_message_is_cut() {
        let routes = ProgressRoutes::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        routes.insert(
            ProgressToken(NumberOrString::Number(1)),
            ProgressRoute {
                server: "s".into(),
                tool: "t".into(),
                sink: Arc::new(move |p| sink_seen.lock().unwrap().push(p.message)),
                cancel: CancellationToken::new(),
            },
        );
        let mut big = params(1, 1.0);
        big.message = Some("m".repeat(1_000_000));
        assert!(routes.deliver("s", &big));
        let mut small = params(1, 2.0);
        small.message = Some("step 2".into());
        assert!(routes.deliver("s", &small));
        let seen = seen.lock().unwrap().clone();
        let first = seen[0].as_deref().unwrap();
        assert!(first.starts_with(&"m".repeat(MAX_PROGRESS_MESSAGE_CHARS)));
        assert!(
            first.ends_with("[... message cut at 1000 of 1000000 characters]"),
            "{}",
            &first[990..]
        );
        assert_eq!(seen[1].as_deref(), Some("step 2"));
    }

    #[test]
    fn server_log_data_is_bounded_text() {
        assert_eq!(
            log_text(&serde_json::json!("a\u{1b}[2K")),
            r#""a\u001b[2K""#
        );
        assert_eq!(log_text(&serde_json::json!({"a": 1})), r#"{"a":1}"#);
        let big = log_text(&Value::String("x".repeat(100_000)));
        assert!(
            big.chars().count() < MAX_LOG_MESSAGE_CHARS + 100,
            "{}",
            big.len()
        );
        assert!(big.ends_with("[... log message cut at 4096 of 100002 characters]"));
    }
}
