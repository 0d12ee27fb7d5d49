//! The commands the UI may invoke. Each is a thin adapter: it reads Rust state, calls the core, and
//! maps failures to [`CommandError`]. None takes a path or an authority decision from the UI.

use std::sync::Arc;

use aibuddy::discovery::ToolListing;
use aibuddy::events::Event;
use tauri::State;
use tauri::ipc::Channel;

use crate::calls::{CallResult, ChannelSink, run_call};
use crate::error::CommandError;
use crate::state::{ProjectInfo, ShellState};

/// The open project (root, data directory, settings files and their problems), for the header.
#[tauri::command]
pub async fn project_info(state: State<'_, ShellState>) -> Result<ProjectInfo, CommandError> {
    Ok(state.info.clone())
}

/// Every tool this run would have: active, deferred, and configured-but-absent with the reason.
#[tauri::command]
pub async fn list_tools(state: State<'_, ShellState>) -> Result<Vec<ToolListing>, CommandError> {
    Ok(state.app.tools_list())
}

/// Runs one tool call through the core's full pipeline. Live events (started, output deltas,
/// progress, confirmation requests, finished) stream over `on_event`; the result comes back when the
/// call is finished and recorded. `arguments` is the raw JSON text, validated by the core.
#[tauri::command]
pub async fn call_tool(
    state: State<'_, ShellState>,
    tool: String,
    arguments: String,
    on_event: Channel<Event>,
) -> Result<CallResult, CommandError> {
    Ok(run_call(&state, tool, arguments, Arc::new(ChannelSink(on_event))).await)
}

/// Stops a running call (its process group, its confirmation wait). False when it is not running.
#[tauri::command]
pub async fn cancel_call(
    state: State<'_, ShellState>,
    call_id: String,
) -> Result<bool, CommandError> {
    Ok(state.calls.cancel(&call_id))
}

/// Answers the confirmation a call is waiting for. The approval is bound to that call's digest,
/// which the shell looks up itself. False when nothing is pending for `call_id`.
#[tauri::command]
pub async fn answer_confirm(
    state: State<'_, ShellState>,
    call_id: String,
    approve: bool,
) -> Result<bool, CommandError> {
    Ok(state.calls.answer(&call_id, approve))
}
