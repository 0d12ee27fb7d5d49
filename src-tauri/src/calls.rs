//! Tool calls started from the UI: each goes through the core's full pipeline (lookup, arguments,
//! authorization and confirmation, execution, projections, persistence) as one call of the window's
//! run. Live events go to the caller's sink; stopping and confirming are by call id, and what a
//! confirmation approves (the call's digest) is looked up here, never taken from the UI.

use std::sync::Arc;

use aibuddy::contract::{Stage, ToolError};
use aibuddy::events::{CallStatus, Event, EventSink};
use aibuddy::pipeline::{CallOutcome, CallRequest, new_call_id};
use serde::Serialize;
use serde_json::Value;
use tauri::ipc::Channel;
use ts_rs::TS;

pub use crate::running_calls::Calls;
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
