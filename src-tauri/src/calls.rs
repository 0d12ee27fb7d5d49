//! Tool calls started from the UI: each goes through the core's full pipeline (lookup, arguments,
//! authorization and confirmation, execution, projections, persistence) as one call of the window's
//! run. Live events go to the caller's sink; stopping and confirming are by call id, and what a
//! confirmation approves (the call's digest) is looked up here, never taken from the UI.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aibuddy::confirm::{ConfirmRequest, Decision, PendingBroker};
use aibuddy::contract::{Stage, ToolError};
use aibuddy::events::{CallStatus, Event, EventSink};
use aibuddy::pipeline::{CallOutcome, CallRequest, new_call_id};
use serde::Serialize;
use serde_json::Value;
use tauri::ipc::Channel;
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

use crate::compacted::CompactedRouter;
use crate::state::Project;

/// The finished call as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct CallResult {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    pub status: CallStatus,
    pub stage: Option<Stage>,
    pub error: Option<ToolError>,
    /// The exact text the model would see.
    pub model: String,
    /// The display projection.
    #[ts(type = "unknown")]
    pub client: Value,
    pub duration_ms: u64,
    /// The person's hooks that ran for the call (`pre_tool_call`, `post_tool_call`), in order.
    pub hooks: Vec<aibuddy::hooks::HookRun>,
    /// A container's project sync around an `execute` call (the core's `call_sync`, as the run
    /// card shows it); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sync: Option<aibuddy::tools::execute::SyncView>,
}

impl From<CallOutcome> for CallResult {
    fn from(o: CallOutcome) -> Self {
        let sync = aibuddy::tools::execute::call_sync(&o.tool, o.shown_client());
        Self {
            tool_call_id: o.tool_call_id,
            run_id: o.run_id,
            tool: o.tool,
            status: o.status,
            stage: o.stage,
            error: o.error,
            model: o.model,
            client: o.client,
            duration_ms: o.duration_ms,
            hooks: o.hooks,
            sync,
        }
    }
}

/// The calls of this window that are still running, and the confirmations they wait for.
#[derive(Default)]
pub struct Calls {
    running: Mutex<HashMap<String, CancellationToken>>,
    pub(crate) broker: PendingBroker,
    /// Where a call's late `ToolCompacted` goes (installed as the compactor's sink).
    pub(crate) compacted: CompactedRouter,
}

impl Calls {
    fn start(&self, call_id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(call_id.to_string(), token.clone());
        }
        token
    }

    fn end(&self, call_id: &str) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(call_id);
        }
    }

    /// Stops a running call: one started from the UI, or one call of the run in progress
    /// (`stops`, the project's `App::call_stops`: the run goes on; the model sees that call
    /// cancelled). False when no such call is running.
    pub fn cancel(&self, call_id: &str, stops: &aibuddy::agent::call_stops::CallStops) -> bool {
        let token = self
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(call_id).cloned());
        match token {
            Some(t) => {
                t.cancel();
                true
            }
            None => stops.cancel(call_id),
        }
    }

    /// Stops every running call (the window is closing).
    pub fn cancel_all(&self) -> usize {
        let tokens: Vec<CancellationToken> = self
            .running
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        for token in &tokens {
            token.cancel();
        }
        tokens.len()
    }

    /// Waits until no call is running, up to `timeout`. True when none is left.
    pub fn wait_idle(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.running.lock().map(|r| r.is_empty()).unwrap_or(true) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Network questions waiting for the person.
    pub fn pending_network(&self) -> Vec<aibuddy::confirm::NetworkAsk> {
        self.broker.pending_network()
    }

    /// Answers the network question `ask_id` (the host and port are the core's, never the UI's).
    /// False when it is no longer open.
    pub fn answer_network(&self, ask_id: &str, answer: aibuddy::confirm::NetworkAnswer) -> bool {
        self.broker.answer_network(ask_id, answer)
    }

    /// Confirmation requests waiting for the person.
    pub fn pending_confirms(&self) -> Vec<ConfirmRequest> {
        self.broker.pending()
    }

    /// Answers the pending confirmation of `call_id`. An approval approves exactly the digest the
    /// core computed for that call. False when nothing is pending for it.
    pub fn answer(&self, call_id: &str, approve: bool) -> bool {
        let Some(request) = self
            .pending_confirms()
            .into_iter()
            .find(|r| r.call_id == call_id)
        else {
            return false;
        };
        let decision = if approve {
            Decision::Approved {
                digest: request.digest,
            }
        } else {
            Decision::Rejected {
                reason: Some("rejected in the desktop app".to_string()),
            }
        };
        self.broker.answer(call_id, decision)
    }
}

impl Calls {
    /// Whether call `call_id` (started from the UI) is still running.
    pub fn is_running(&self, call_id: &str) -> bool {
        self.running
            .lock()
            .map(|r| r.contains_key(call_id))
            .unwrap_or(false)
    }
}

/// Answers the confirmation of `call_id`. The core announces a request only once the broker holds
/// it, so an answer given on the `confirm_request` event is never early. False when nothing is
/// pending.
pub async fn answer_confirm(state: &Project, call_id: &str, approve: bool) -> bool {
    state.calls.answer(call_id, approve)
}

/// Runs one call through the pipeline as part of the window's run.
pub async fn run_call(
    state: &Project,
    tool: String,
    arguments: String,
    events: Arc<dyn EventSink>,
) -> CallResult {
    let call_id = new_call_id();
    let cancel = state.calls.start(&call_id);
    state.calls.compacted.remember(&call_id, events.clone());
    let runner = state.app.runner(
        Some(state.run_id.clone()),
        Arc::new(state.calls.broker.clone()),
    );
    let toolset = state.app.run_toolset(&state.run_id);
    let request = CallRequest {
        id: Some(call_id.clone()),
        name: tool,
        arguments,
    };
    let outcome = runner.call(&toolset, request, cancel, events).await;
    state.calls.end(&call_id);
    outcome.into()
}

/// Forwards core events to the webview over a `tauri::ipc::Channel`, in order.
pub struct ChannelSink(pub Channel<Event>);

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        if let Err(error) = self.0.send(event) {
            // The window went away; the call itself goes on and is recorded.
            tracing::debug!(%error, "could not forward a call event to the window");
        }
    }
}
