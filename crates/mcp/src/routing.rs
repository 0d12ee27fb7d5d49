//! Call dispatch: a qualified name to its server's live peer, the arguments checked against the
//! tool's schema, then `tools/call` with timeout, cancellation (`notifications/cancelled`),
//! progress routing, and a health check when the transport fails or the call hangs.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::ServiceError;

use crate::oauth::{Challenge, find_challenge};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, PingRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::cut_text;
use crate::error::{MAX_SERVER_MESSAGE_CHARS, McpError};
use crate::handler::{ConnEvent, ProgressRoute, ProgressRoutes, ProgressSink};
use crate::options::McpCallResult;
use crate::shared::{Live, Shared, tidy};

/// A call bound for one server's tool.
struct Bound {
    qualified_name: String,
    server: String,
    tool: String,
    args: Map<String, Value>,
}

/// Finds the tool and checks the arguments (pure but for reading the catalog).
fn bind(shared: &Shared, qualified_name: &str, args: Value) -> Result<Bound, McpError> {
    let catalog = shared.catalog();
    let Some(entry) = catalog.entry(qualified_name) else {
        return Err(shared.unknown_tool(qualified_name));
    };
    let invalid = |message: String| McpError::InvalidArguments {
        tool: qualified_name.to_owned(),
        message,
    };
    let args = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(invalid(format!(
                "arguments must be a JSON object, found {other}"
            )));
        }
    };
    let args_value = Value::Object(args);
    entry.check_arguments(&args_value).map_err(invalid)?;
    let Value::Object(args) = args_value else {
        return Err(invalid("arguments must be an object".into()));
    };
    Ok(Bound {
        qualified_name: qualified_name.to_owned(),
        server: entry.server.clone(),
        tool: entry.name.clone(),
        args,
    })
}

/// Calls a tool by its qualified name (see [`crate::McpManager::call`]).
pub(crate) async fn call(
    shared: &Arc<Shared>,
    qualified_name: &str,
    args: Value,
    cancel: CancellationToken,
    progress: Option<ProgressSink>,
) -> Result<McpCallResult, McpError> {
    let bound = bind(shared, qualified_name, args)?;
    let live = shared.connection(&bound.server)?;
    if cancel.is_cancelled() {
        return Err(McpError::Cancelled {
            tool: bound.qualified_name,
        });
    }
    // In flight from here on: an elicitation the server sends meanwhile goes to this caller.
    let _caller = shared
        .callers
        .enter(&bound.server, crate::elicitation::current_caller());
    let first = attempt(shared, &bound, &live, &cancel, progress.clone()).await;
    let Err(McpError::InsufficientScope {
        scope: Some(scope), ..
    }) = &first
    else {
        return first;
    };
    // Once per call, never again for the retry (`auth/scope-retry-limit`).
    if step_up_unattended(shared, &bound, &live, scope).await {
        return attempt(shared, &bound, &live, &cancel, progress).await;
    }
    first
}

/// After a 403 `insufficient_scope`: one grant asking for the wider scope without a person
/// (client credentials of a machine client, else a refresh), when the server has a stored OAuth
/// token. Whether the scope is now granted.
async fn step_up_unattended(shared: &Shared, bound: &Bound, live: &Live, scope: &str) -> bool {
    let (Some(_), Some(url), Some(vault)) = (&live.auth, &live.url, &shared.options.token_vault)
    else {
        return false;
    };
    let store = crate::oauth::VaultCredentialStore::new(vault.clone(), &bound.server);
    match crate::oauth::unattended::widen_scope(url, &store, scope).await {
        Ok(_) => {
            tracing::info!(server = %bound.server, tool = %bound.tool, "scope stepped up on refresh; the call is retried once");
            true
        }
        Err(e) => {
            tracing::info!(
                server = %bound.server,
                "no scope step-up without a person ({}): {}",
                e.stage(),
                live.redactor.apply(&e.to_string())
            );
            false
        }
    }
}

/// One `tools/call` and its answer (or cancellation, timeout, lost connection).
async fn attempt(
    shared: &Arc<Shared>,
    bound: &Bound,
    live: &Live,
    cancel: &CancellationToken,
    progress: Option<ProgressSink>,
) -> Result<McpCallResult, McpError> {
    let params = CallToolRequestParams::new(bound.tool.clone()).with_arguments(bound.args.clone());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match live
        .peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(e) => return Err(lost(shared, bound, live, e)),
    };
    let request_id = handle.id.clone();
    let call_cancel = cancel.child_token();
    let _route = progress.map(|sink| {
        shared.progress.insert(
            handle.progress_token.clone(),
            ProgressRoute {
                server: bound.server.clone(),
                tool: bound.tool.clone(),
                sink,
                cancel: call_cancel.clone(),
            },
        );
        RouteGuard {
            routes: shared.progress.clone(),
            server: bound.server.clone(),
            token: handle.progress_token.clone(),
        }
    });
    let timeout = live.call_timeout;
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            call_cancel.cancel();
            send_cancelled(&live.peer, request_id, "cancelled by the user").await;
            Err(McpError::Cancelled { tool: bound.qualified_name.clone() })
        }
        _ = tokio::time::sleep(timeout) => {
            call_cancel.cancel();
            send_cancelled(&live.peer, request_id, "timed out").await;
            let context = format!("{} timed out after {}s", bound.tool, timeout.as_secs_f64());
            health_check(shared, &bound.server, &live.peer, live.events.clone(), context);
            Err(McpError::Timeout { tool: bound.qualified_name.clone(), after: timeout })
        }
        response = handle.await_response() => {
            call_cancel.cancel();
            answered(shared, bound, live, response)
        }
    }
}

/// The server's answer to `tools/call`, as a result or a typed error (redacted).
fn answered(
    shared: &Arc<Shared>,
    bound: &Bound,
    live: &Live,
    response: Result<ServerResult, ServiceError>,
) -> Result<McpCallResult, McpError> {
    let (server, tool) = (bound.server.clone(), bound.tool.clone());
    match response {
        Ok(ServerResult::CallToolResult(result)) => Ok(call_result(server, tool, result)),
        Ok(_) => Err(McpError::Protocol {
            server,
            message: format!("unexpected response type to tools/call {tool}"),
        }),
        // The server's text: cut, so a megabyte error message does not reach the model whole.
        Err(ServiceError::McpError(e)) => Err(McpError::Server {
            message: cut_text(
                &live.redactor.apply(&e.message),
                MAX_SERVER_MESSAGE_CHARS,
                "message",
            ),
            server,
            tool,
            code: e.code.0,
        }),
        // Not our cancel (that is the caller's branch): the server cancelled its own answer.
        Err(ServiceError::Cancelled { reason }) => Err(McpError::Protocol {
            message: live.redactor.apply(&format!(
                "the server cancelled {tool} itself{}",
                reason
                    .map(|r| format!(": {}", cut_text(&r, MAX_SERVER_MESSAGE_CHARS, "reason")))
                    .unwrap_or_default()
            )),
            server,
        }),
        Err(e) => Err(lost(shared, bound, live, e)),
    }
}

fn call_result(server: String, tool: String, result: CallToolResult) -> McpCallResult {
    McpCallResult {
        server,
        tool,
        content: result
            .content
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect(),
        structured_content: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}

/// The call failed in transport: the reason the stdout screen recorded (oversized or invalid
/// message, ...), else the supervisor's, else the transport's own; redacted.
fn lost(shared: &Arc<Shared>, bound: &Bound, live: &Live, error: ServiceError) -> McpError {
    // A 403 `insufficient_scope` is an answer, not a lost connection.
    if let Some(Challenge::InsufficientScope { scope, .. }) = find_challenge(&error) {
        if let (Some(vault), Some(scope)) = (&shared.options.token_vault, &scope) {
            let store = crate::oauth::VaultCredentialStore::new(vault.clone(), &bound.server);
            if let Err(e) = store.record_required_scope(scope) {
                tracing::warn!(server = %bound.server, "required scope not recorded: {e}");
            }
        }
        return McpError::InsufficientScope {
            server: bound.server.clone(),
            tool: bound.tool.clone(),
            scope: scope.map(|s| live.redactor.apply(&s)),
        };
    }
    let transport = live.redactor.apply(&tidy(&error));
    let context = format!("{}: {transport}", bound.tool);
    health_check(
        shared,
        &bound.server,
        &live.peer,
        live.events.clone(),
        context,
    );
    let screened = live
        .broken
        .as_ref()
        .and_then(|b| b.lock().unwrap_or_else(PoisonError::into_inner).clone());
    let reason = screened
        .or_else(|| shared.failure_reason(&bound.server))
        .unwrap_or(transport);
    McpError::ConnectionLost {
        server: bound.server.clone(),
        tool: bound.tool.clone(),
        reason: live.redactor.apply(&reason),
    }
}

/// Pings the server in the background; no answer in time marks the connection broken.
fn health_check(
    shared: &Arc<Shared>,
    server: &str,
    peer: &Peer<RoleClient>,
    events: Option<mpsc::UnboundedSender<ConnEvent>>,
    context: String,
) {
    let Some(events) = events else { return };
    let peer = peer.clone();
    let timeout = shared.options.health_check_timeout;
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

/// Removes a call's progress route when the call ends, however it ends.
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
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::RwLock;

    use rmcp::model::Tool;
    use serde_json::json;
    use tokio::sync::watch;

    use super::*;
    use crate::catalog::build_catalog;
    use crate::elicitation::{Callers, DeclineElicitation};
    use crate::options::McpOptions;

    fn shared_with(servers: &BTreeMap<String, Vec<Tool>>) -> Shared {
        let options = McpOptions::default();
        Shared {
            slots: RwLock::new(BTreeMap::new()),
            catalog: RwLock::new(Arc::new(build_catalog(servers, &BTreeSet::new()))),
            changes: watch::channel(0u64).0,
            progress: Arc::new(ProgressRoutes::new(options.progress_interval)),
            options,
            broker: Arc::new(DeclineElicitation),
            callers: Arc::new(Callers::default()),
        }
    }

    fn tools(n: usize) -> Vec<Tool> {
        (0..n)
            .map(|i| {
                let Value::Object(schema) = json!({
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "required": ["x"]
                }) else {
                    unreachable!("a JSON object")
                };
                Tool::new(format!("t{i:05}"), "a tool", Arc::new(schema))
            })
            .collect()
    }

    #[test]
    fn bind_finds_every_tool_and_keeps_its_errors() {
        let servers = BTreeMap::from([("a".to_owned(), tools(50)), ("b".to_owned(), tools(50))]);
        let shared = shared_with(&servers);
        for entry in &shared.catalog().entries {
            let bound = bind(&shared, &entry.qualified_name, json!({"x": 1})).unwrap();
            assert_eq!(
                (bound.server.as_str(), bound.tool.as_str()),
                (entry.server.as_str(), entry.name.as_str())
            );
        }
        let unknown = bind(&shared, "mcp__a__t99999", json!({})).err();
        assert!(
            matches!(unknown, Some(McpError::UnknownTool { ref name }) if name == "mcp__a__t99999"),
            "{unknown:?}"
        );
        let invalid = bind(&shared, "mcp__b__t00007", json!({"x": "one"})).err();
        assert!(
            matches!(invalid, Some(McpError::InvalidArguments { ref tool, .. }) if tool == "mcp__b__t00007"),
            "{invalid:?}"
        );
    }

    /// A call's bind with 10,000 tools: through the name map against the scan of every entry
    /// it replaced. Prints both and their ratio (`cargo test -p aibuddy-mcp --lib
    /// bind_with_ten_thousand -- --nocapture`); asserts only that both find the same entries.
    #[test]
    fn bind_with_ten_thousand_tools_uses_the_name_map() {
        let shared = shared_with(&BTreeMap::from([("s".to_owned(), tools(10_000))]));
        let catalog = shared.catalog();
        let names: Vec<String> = (catalog.entries.iter().step_by(10))
            .map(|e| e.qualified_name.clone())
            .collect();
        let started = std::time::Instant::now();
        let mut scanned = 0usize;
        for name in &names {
            let found = catalog.entries.iter().find(|e| &e.qualified_name == name);
            scanned += usize::from(found.is_some());
        }
        let scan = started.elapsed();
        let started = std::time::Instant::now();
        let mut bound = 0usize;
        for name in &names {
            bound += usize::from(bind(&shared, name, json!({"x": 1})).is_ok());
        }
        let by_map = started.elapsed();
        assert_eq!((scanned, bound), (names.len(), names.len()));
        println!(
            "bind of {} calls among 10000 tools: scanning the entries {scan:?}, through the name \
             map (with the argument check) {by_map:?} ({:.1}x)",
            names.len(),
            scan.as_secs_f64() / by_map.as_secs_f64().max(1e-9)
        );
    }
}
