//! Choosing the legacy HTTP+SSE transport ([`crate::sse`]): for `"type": "sse"`, and as the
//! fallback the spec's backwards-compatibility section describes, when a streamable-HTTP
//! `initialize` fails: then a GET at the same URL that answers with an event stream whose first
//! event is `endpoint` means the server is a 2024-11-05 one. When that GET does not work
//! either, the streamable-HTTP failure is what is reported (it is the transport the entry asked
//! for). A 401 challenge never falls back: it means "log in", not "old server".

use std::collections::BTreeMap;
use std::pin::Pin;

use rmcp::service::{ClientInitializeError, RoleClient, RunningService, serve_client};

use crate::handler::Handler;
use crate::oauth::find_challenge;
use crate::sse::{self, SseError, SseOptions};

/// Why a connection attempt did not initialize.
pub(crate) enum InitFailure {
    /// The MCP handshake failed (transport or protocol).
    Init(Box<ClientInitializeError>),
    /// The legacy SSE stream could not be opened (a 401 there is a challenge).
    Sse(SseError),
}

/// A connection attempt in progress.
pub(crate) type Connecting =
    Pin<Box<dyn Future<Output = Result<RunningService<RoleClient, Handler>, InitFailure>> + Send>>;

/// Connects over the legacy HTTP+SSE transport.
pub(crate) fn legacy_sse(
    handler: Handler,
    url: &str,
    headers: &BTreeMap<String, String>,
    options: SseOptions,
) -> Connecting {
    let url = url.to_owned();
    let headers = headers.clone();
    Box::pin(async move {
        let transport = sse::connect(&url, &headers, options)
            .await
            .map_err(InitFailure::Sse)?;
        serve_client(handler, transport)
            .await
            .map_err(|e| InitFailure::Init(Box::new(e)))
    })
}

/// Streamable HTTP first; on a failure that is not an authorization challenge, the legacy
/// SSE transport at the same URL. A challenge from that GET (a legacy server behind OAuth
/// that answers the POST with 404/405) is reported as the challenge.
pub(crate) fn with_sse_fallback(
    streamable: Connecting,
    sse_handler: Handler,
    url: &str,
    headers: &BTreeMap<String, String>,
    options: SseOptions,
) -> Connecting {
    let url = url.to_owned();
    let headers = headers.clone();
    Box::pin(async move {
        let error = match streamable.await {
            Ok(running) => return Ok(running),
            Err(InitFailure::Init(e)) if find_challenge(e.as_ref()).is_some() => {
                return Err(InitFailure::Init(e));
            }
            Err(e) => e,
        };
        match sse::connect(&url, &headers, options).await {
            Ok(transport) => {
                tracing::info!(
                    "streamable HTTP initialize failed; the server speaks the legacy HTTP+SSE transport"
                );
                serve_client(sse_handler, transport)
                    .await
                    .map_err(|e| InitFailure::Init(Box::new(e)))
            }
            Err(sse_error) if find_challenge(&sse_error).is_some() => {
                Err(InitFailure::Sse(sse_error))
            }
            Err(sse_error) => {
                tracing::debug!("no legacy SSE fallback: {sse_error}");
                Err(error)
            }
        }
    })
}
