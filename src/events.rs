//! Typed events a call emits while it runs. The CLI prints them, the desktop shell forwards them to
//! the UI, tests collect them. Live output, progress and heartbeats are transient: they never enter
//! the model's context or the stored model projection.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::confirm::{ConfirmRequest, NetworkAnswer, NetworkAsk};
use crate::contract::Stage;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Final status of a call: the one definition shared with the store and the UI.
pub use aibuddy_common::CallStatus;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
#[ts(export)]
pub enum Event {
    ToolStarted {
        call_id: String,
        tool: String,
        #[ts(type = "unknown")]
        input: Value,
    },
    /// A delta of live output (never re-sends earlier output).
    ToolOutputDelta {
        call_id: String,
        stream: OutputStream,
        chunk: String,
    },
    ToolProgress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// Empty keep-alive for long calls; re-arms stream-idle watchdogs.
    Heartbeat {
        call_id: String,
    },
    ConfirmRequested {
        call_id: String,
        request: ConfirmRequest,
    },
    ConfirmResolved {
        call_id: String,
        approved: bool,
    },
    /// The call's command asks for a host on no `exec.network` list (announced once the broker
    /// can take the answer: `answer_network` with `ask.ask_id`).
    NetworkAskRequested {
        call_id: String,
        ask: NetworkAsk,
    },
    NetworkAskResolved {
        call_id: String,
        ask_id: String,
        answer: NetworkAnswer,
    },
    ToolFinished {
        call_id: String,
        status: CallStatus,
        stage: Option<Stage>,
        #[ts(type = "unknown")]
        client: Value,
        duration_ms: u64,
    },
    /// Background precompaction replaced the model projection of a call. Emitted after the call's
    /// `ToolFinished`, on the compactor's project-level sink (`Compactor::set_event_sink`).
    ToolCompacted {
        call_id: String,
        strategy: String,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The trust of the open project changed (granted, revoked, or its files changed since they
    /// were approved). Not tied to a call.
    TrustChanged {
        /// Canonical project root.
        project: String,
        state: crate::trust::TrustState,
        /// SHA-256 of the trust-relevant files now.
        digest: String,
    },
}

impl Event {
    /// The event hosts emit after the project's trust changed (grant, revoke, a file changed).
    pub fn trust_changed(status: &crate::trust::TrustStatus) -> Self {
        Event::TrustChanged {
            project: status.project.clone(),
            state: status.state,
            digest: status.digest.clone(),
        }
    }

    /// The call the event belongs to (None for project-level events such as `TrustChanged`).
    pub fn call_id(&self) -> Option<&str> {
        Some(match self {
            Event::ToolStarted { call_id, .. }
            | Event::ToolOutputDelta { call_id, .. }
            | Event::ToolProgress { call_id, .. }
            | Event::Heartbeat { call_id }
            | Event::ConfirmRequested { call_id, .. }
            | Event::ConfirmResolved { call_id, .. }
            | Event::NetworkAskRequested { call_id, .. }
            | Event::NetworkAskResolved { call_id, .. }
            | Event::ToolFinished { call_id, .. }
            | Event::ToolCompacted { call_id, .. } => call_id,
            Event::TrustChanged { .. } => return None,
        })
    }
}

/// Where events go. Implementations must not block for long (they run on the caller's task).
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
    /// Whether anyone consumes the events: a producer may skip building live output (decoding,
    /// formatting) for a sink that does not listen.
    fn listening(&self) -> bool {
        true
    }
    /// Whether this sink takes a call's live output as raw bytes ([`EventSink::raw_output`])
    /// instead of [`Event::ToolOutputDelta`] text. A terminal client escapes the bytes itself in
    /// one pass (`aibuddy_common::term::BlockBytes`), so nothing decodes them to text first.
    /// `false` (the default): live output arrives as `ToolOutputDelta` events, unchanged.
    fn wants_raw_output(&self) -> bool {
        false
    }
    /// A delivery of live output as the command wrote it (only when `wants_raw_output`): untrusted
    /// bytes that may split a UTF-8 character between two deliveries of the same stream;
    /// concatenated per stream, the deliveries are the stream. Must not block for long.
    fn raw_output(&self, _call_id: &str, _stream: OutputStream, _bytes: &[u8]) {}
    /// The live output of the call ended (only when `wants_raw_output`): a character left
    /// incomplete at the end of a stream can be flushed.
    fn raw_output_end(&self, _call_id: &str) {}
}

/// Discards events.
pub struct NullSink;
impl EventSink for NullSink {
    fn emit(&self, _event: Event) {}
    fn listening(&self) -> bool {
        false
    }
}

/// Keeps every event in memory (tests and small tools).
#[derive(Default)]
pub struct CollectingSink {
    events: Mutex<Vec<Event>>,
}

impl CollectingSink {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for CollectingSink {
    fn emit(&self, event: Event) {
        if let Ok(mut e) = self.events.lock() {
            e.push(event);
        }
    }
}

/// Forwards events into an unbounded tokio channel.
pub struct ChannelSink(pub tokio::sync::mpsc::UnboundedSender<Event>);
impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        let _ = self.0.send(event);
    }
}
