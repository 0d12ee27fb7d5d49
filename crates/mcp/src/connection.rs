//! One connection to one server: spawn the stdio process or open the streamable HTTP transport,
//! the `initialize` handshake under the connect timeout, then the event loop
//! ([`crate::event_loop`]) until the connection breaks or the manager shuts down. How a stdio
//! process ended (exit status, last stderr lines) explains a broken connection. Every reason
//! passes through the server's [`Redactor`] in the supervisor before it is logged or stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RunningService, serve_client};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};
use crate::event_loop::Session;
use crate::handler::{ConnEvent, Handler};
use crate::legacy::{Connecting, InitFailure, legacy_sse, with_sse_fallback};
use crate::oauth::{
    AuthorizedClient, Authorizer, ClientIdentity, VaultCredentialStore, find_challenge,
};
use crate::redact::Redactor;
use crate::shared::{Shared, tidy};
use crate::stdio;
use crate::wiring::{Ended, Wiring, kill, pending_broken, with_exit};

/// Extra time a legacy SSE handshake gets past its `endpoint` wait (the connect timeout), so a
/// server that never names its endpoint fails with that reason, not the handshake's.
const SSE_HANDSHAKE_GRACE: Duration = Duration::from_secs(1);

/// Connects, runs the session, and cleans up (the process is killed however it ended).
pub(crate) async fn run_connection(
    shared: &Arc<Shared>,
    config: &ServerConfig,
    redactor: &Redactor,
    generation: u64,
    shutdown: &CancellationToken,
) -> Ended {
    if let Some(gate) = &shared.options.before_spawn
        && let Err(reason) = (gate.0)(config)
    {
        return Ended::failed(reason);
    }
    let (events_tx, events) = mpsc::unbounded_channel();
    let mut wiring = Wiring {
        events_tx,
        events,
        process: None,
        broken: None,
        auth: None,
    };
    let running = match handshake(shared, config, redactor, shutdown, &mut wiring).await {
        Ok(running) => running,
        Err(ended) => {
            kill(&mut wiring.process).await;
            return ended;
        }
    };
    let service_cancel = running.cancellation_token();
    let mut session = Session::new(shared, config, generation, &running, wiring);
    let service_done = tokio::spawn(running.waiting());
    let outcome = session.run(shutdown, service_done).await;
    service_cancel.cancel();
    kill(&mut session.wiring.process).await;
    outcome
}

fn handler(shared: &Shared, name: &str, events: mpsc::UnboundedSender<ConnEvent>) -> Handler {
    Handler {
        log_budget: Default::default(),
        server: name.to_owned(),
        broker: shared.broker.clone(),
        progress: shared.progress.clone(),
        events,
        client_name: shared.options.client_name.clone(),
        client_version: shared.options.client_version.clone(),
    }
}

/// Starts the transport and runs `initialize` under the connect timeout, watching for a broken
/// stream and for shutdown.
async fn handshake(
    shared: &Arc<Shared>,
    config: &ServerConfig,
    redactor: &Redactor,
    shutdown: &CancellationToken,
    wiring: &mut Wiring,
) -> Result<RunningService<RoleClient, Handler>, Ended> {
    let handler = handler(shared, &config.name, wiring.events_tx.clone());
    let connect_timeout = config.timeouts.connect;
    let connecting: Connecting = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spec = stdio::SpawnSpec {
                server: &config.name,
                command,
                args,
                env,
                cwd: cwd.as_deref(),
                default_cwd: shared.options.default_cwd.as_ref(),
                max_message_bytes: shared.options.max_message_bytes,
                redactor,
                sandbox: config.sandbox.as_ref(),
                sandbox_host: &shared.options.sandbox_host,
            };
            match stdio::spawn(&spec, wiring.events_tx.clone()) {
                Ok((process, stdout, stdin)) => {
                    wiring.process = Some(process);
                    let serving = serve_client(handler, (stdout, stdin));
                    Box::pin(
                        async move { serving.await.map_err(|e| InitFailure::Init(Box::new(e))) },
                    )
                }
                // The command only: its arguments and environment may hold tokens.
                Err(e) => return Err(Ended::failed(format!("cannot start \"{command}\": {e}"))),
            }
        }
        Transport::Http { url, headers } => {
            let transport = http_config(url, headers);
            let sse_handler = self::handler(shared, &config.name, wiring.events_tx.clone());
            wiring.auth = stored_token_client(shared, config, url, headers).await;
            let sse_options = wiring.sse_options(shared, connect_timeout);
            let streamable: Connecting = match wiring.auth.clone() {
                Some(client) => {
                    let serving = serve_client(
                        handler,
                        StreamableHttpClientTransport::with_client(client, transport),
                    );
                    Box::pin(
                        async move { serving.await.map_err(|e| InitFailure::Init(Box::new(e))) },
                    )
                }
                None => {
                    let serving = serve_client(
                        handler,
                        StreamableHttpClientTransport::from_config(transport),
                    );
                    Box::pin(
                        async move { serving.await.map_err(|e| InitFailure::Init(Box::new(e))) },
                    )
                }
            };
            with_sse_fallback(streamable, sse_handler, url, headers, sse_options)
        }
        Transport::Sse { url, headers } => {
            wiring.auth = stored_token_client(shared, config, url, headers).await;
            let options = wiring.sse_options(shared, connect_timeout);
            legacy_sse(handler, url, headers, options)
        }
    };
    let limit = match &config.transport {
        Transport::Sse { .. } => connect_timeout + SSE_HANDSHAKE_GRACE,
        _ => connect_timeout,
    };
    tokio::select! {
        result = tokio::time::timeout(limit, connecting) => match result {
            Ok(Ok(running)) => Ok(running),
            Ok(Err(InitFailure::Init(e))) if find_challenge(e.as_ref()).is_some() => Err(Ended::NeedsLogin),
            Ok(Err(InitFailure::Init(e))) => Err(Ended::failed(match pending_broken(&mut wiring.events) {
                Some(reason) => reason,
                None => with_exit(format!("initialize failed: {}", tidy(&e)), &mut wiring.process).await,
            })),
            Ok(Err(InitFailure::Sse(e))) if find_challenge(&e).is_some() => Err(Ended::NeedsLogin),
            Ok(Err(InitFailure::Sse(e))) => Err(Ended::failed(format!("legacy SSE transport: {e}"))),
            Err(_) => Err(Ended::failed(format!(
                "no answer to initialize within {}s",
                connect_timeout.as_secs_f64()
            ))),
        },
        reason = next_broken(&mut wiring.events) => Err(Ended::failed(reason)),
        _ = shutdown.cancelled() => Err(Ended::Shutdown),
    }
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

/// A client carrying the server's stored OAuth token, when the host gave a token vault, the
/// person set no `Authorization` header, and the vault holds credentials for this server.
async fn stored_token_client(
    shared: &Shared,
    config: &ServerConfig,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Option<AuthorizedClient> {
    let vault = shared.options.token_vault.as_ref()?;
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return None;
    }
    let store = VaultCredentialStore::new(vault.clone(), &config.name);
    let authorizer = Authorizer::new(url, ClientIdentity::default(), store, None);
    match authorizer.from_store().await {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(server = %config.name, "stored OAuth credentials not usable: {e}");
            None
        }
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
