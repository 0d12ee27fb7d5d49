//! What one connection runs on and how it ends: the `Wiring` (its events, its stdio process, the
//! legacy SSE breakage and OAuth client), `Ended`, and how a stdio process's exit explains a
//! broken connection. Shared by the handshake (`connection`) and the session (`event_loop`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::handler::ConnEvent;
use crate::oauth::AuthorizedClient;
use crate::shared::Shared;
use crate::sse::{OnEnd, SseOptions};
use crate::stdio::{BrokenReason, StdioProcess};

/// A connection that lasted this long resets the reconnect backoff; shorter ones keep climbing it,
/// so a server that crashes right after connecting is not restarted every second forever.
pub const STABLE_CONNECTION: Duration = Duration::from_secs(30);

/// How long an exited server's last stderr lines may take to be read before its exit is reported
/// (a grandchild may keep the pipe open, so this is bounded).
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How a connection ended.
pub(crate) enum Ended {
    Shutdown,
    /// The server answered 401 (or 403 `insufficient_scope`) and no stored token serves.
    NeedsLogin,
    /// `was_stable`: the connection had lasted [`STABLE_CONNECTION`] (the
    /// backoff starts over).
    Failed {
        reason: String,
        was_stable: bool,
    },
}

impl Ended {
    pub(crate) fn failed(reason: String) -> Ended {
        Ended::Failed {
            reason,
            was_stable: false,
        }
    }
}

/// What a connection runs on: the events its handler and stdout screen send, and the process.
pub(crate) struct Wiring {
    pub events_tx: mpsc::UnboundedSender<ConnEvent>,
    pub events: mpsc::UnboundedReceiver<ConnEvent>,
    pub process: Option<StdioProcess>,
    /// Why a legacy SSE stream ended (set before the session closes).
    pub broken: Option<BrokenReason>,
    /// The OAuth client carrying the server's stored token (remote servers).
    pub auth: Option<AuthorizedClient>,
}

impl Wiring {
    /// Legacy SSE options: the stream's end is reported as this connection's breakage.
    pub(crate) fn sse_options(&mut self, shared: &Shared, wait: Duration) -> SseOptions {
        let broken: BrokenReason = Arc::new(Mutex::new(None));
        self.broken = Some(broken.clone());
        let events = self.events_tx.clone();
        let on_end: OnEnd = Box::new(move |reason: String| {
            *broken.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            let _ = events.send(ConnEvent::Broken(reason));
        });
        SseOptions {
            wait,
            max_message_bytes: shared.options.max_message_bytes,
            auth: self.auth.clone(),
            on_end: Some(on_end),
        }
    }
}

/// A `Broken` reason already queued (it explains a closed connection better than "closed").
pub(crate) fn pending_broken(events: &mut mpsc::UnboundedReceiver<ConnEvent>) -> Option<String> {
    while let Ok(event) = events.try_recv() {
        if let ConnEvent::Broken(reason) = event {
            return Some(reason);
        }
    }
    None
}

pub(crate) async fn child_exit(process: &mut Option<StdioProcess>) -> String {
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
pub(crate) async fn with_exit(reason: String, process: &mut Option<StdioProcess>) -> String {
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
pub(crate) async fn exit_or(reason: String, process: &mut Option<StdioProcess>) -> String {
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

pub(crate) async fn kill(process: &mut Option<StdioProcess>) {
    if let Some(p) = process {
        p.kill().await;
    }
}
