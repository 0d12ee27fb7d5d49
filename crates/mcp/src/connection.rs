//! One server's connection and its supervisor: spawn or connect, initialize, list tools, follow
//! `list_changed`, notice crashes, hangs and garbage, and reconnect with backoff. Every failure
//! reason passes through the server's [`Redactor`] before it is logged or stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use rmcp::service::{Peer, RoleClient, RunningService, serve_client};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};
use crate::handler::{ConnEvent, Handler};
use crate::manager::{STABLE_CONNECTION, Shared, tidy};
use crate::redact::Redactor;
use crate::status::ServerState;
use crate::stdio::{self, StdioProcess};

/// How long an exited server's last stderr lines may take to be read before its exit is reported
/// (a grandchild may keep the pipe open, so this is bounded).
const STDERR_DRAIN: Duration = Duration::from_millis(500);

enum Ended {
    Shutdown,
    /// `was_stable`: the connection had lasted [`STABLE_CONNECTION`] (the backoff starts over).
    Failed {
        reason: String,
        was_stable: bool,
    },
}

pub(crate) async fn supervise(shared: Arc<Shared>, name: String, shutdown: CancellationToken) {
    let (config, redactor) = {
        let slots = shared.slots.read().unwrap_or_else(PoisonError::into_inner);
        match slots.get(&name) {
            Some(slot) => (slot.config.clone(), slot.redactor.clone()),
            None => return,
        }
    };
    let backoff = shared.options.backoff;
    let mut attempt: u32 = 0;
    loop {
        match run_connection(&shared, &config, &redactor, &shutdown).await {
            Ended::Shutdown => {
                shared.update(&name, true, |slot| {
                    slot.state = ServerState::Failed {
                        reason: "client shut down".into(),
                        retry_in_ms: None,
                    };
                    slot.peer = None;
                    slot.events = None;
                    slot.broken = None;
                    slot.tools.clear();
                });
                return;
            }
            Ended::Failed { reason, was_stable } => {
                // Reasons quote stderr, stdout lines and transport errors: never a configured value.
                let reason = redactor.apply(&reason);
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
                    slot.broken = None;
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
            p.stderr_drained(STDERR_DRAIN).await;
            p.exit_reason().unwrap_or_else(|| "process exited".into())
        }
        None => std::future::pending().await,
    }
}

/// Adds how the process ended (if it did, within a short grace) to a failure reason.
async fn with_exit(reason: String, process: &mut Option<StdioProcess>) -> String {
    let Some(p) = process else { return reason };
    if tokio::time::timeout(Duration::from_millis(300), p.child.wait())
        .await
        .is_ok()
    {
        p.stderr_drained(STDERR_DRAIN).await;
    }
    match p.exit_reason() {
        Some(exit) => format!("{reason}; {exit}"),
        None => reason,
    }
}

/// How the process ended when it did (within a short grace): a crash explains a broken
/// connection better than a failed ping's "transport closed". `reason` stays when the stdout
/// screen broke the connection itself (its reason is the precise one) or the process lives on.
async fn exit_or(reason: String, process: &mut Option<StdioProcess>) -> String {
    let Some(p) = process else { return reason };
    let screened = p
        .broken
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some();
    if screened {
        return reason;
    }
    if tokio::time::timeout(Duration::from_millis(300), p.child.wait())
        .await
        .is_err()
    {
        return reason;
    }
    p.stderr_drained(STDERR_DRAIN).await;
    p.exit_reason().unwrap_or(reason)
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
    redactor: &Redactor,
    shutdown: &CancellationToken,
) -> Ended {
    let name = config.name.as_str();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let handler = Handler {
        log_budget: Default::default(),
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

    if let Some(gate) = &shared.options.before_spawn
        && let Err(reason) = (gate.0)(config)
    {
        return fail(reason);
    }
    let mut process: Option<StdioProcess> = None;
    let connecting = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spec = stdio::SpawnSpec {
                server: name,
                command,
                args,
                env,
                cwd: cwd.as_deref(),
                default_cwd: shared.options.default_cwd.as_ref(),
                max_message_bytes: shared.options.max_message_bytes,
                redactor,
            };
            match stdio::spawn(&spec, events_tx.clone()) {
                Ok((proc, stdout, stdin)) => {
                    process = Some(proc);
                    futures::future::Either::Left(serve_client(handler, (stdout, stdin)))
                }
                // The command only: its arguments and environment may hold tokens.
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
                    let broken = process.as_ref().map(|p| p.broken.clone());
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
                            slot.broken = broken;
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
                Some(ConnEvent::Broken(reason)) => {
                    let reason = exit_or(reason, &mut process).await;
                    break Ended::Failed { reason, was_stable: stable(connected_at) };
                }
                None => {}
            },
            _ = &mut service_done => {
                let reason = match pending_broken(&mut events) {
                    Some(reason) => exit_or(reason, &mut process).await,
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
