//! The commands the UI may invoke. Each is a thin adapter: it reads Rust state, calls the core, and
//! maps failures to [`CommandError`]. None takes a path or an authority decision from the UI.

use std::sync::Arc;

use aibuddy::discovery::ToolListing;
use aibuddy::events::Event;
use tauri::State;
use tauri::ipc::Channel;

use crate::calls::{CallResult, ChannelSink, run_call};
use crate::error::{CommandError, ErrorCode};
use crate::history::{self, CallDetail, HistoryEntry};
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

/// Stored calls of the open project, newest first: `limit` (default 50, at most 200), full-text
/// `search`, and `status` narrow the list. Same store queries as `aibuddy history`.
#[tauri::command]
pub async fn list_history(
    state: State<'_, ShellState>,
    limit: Option<usize>,
    search: Option<String>,
    status: Option<String>,
) -> Result<Vec<HistoryEntry>, CommandError> {
    let filter = history::filter(limit, search, status)?;
    history::list(store(&state)?, filter).await
}

/// One stored call: tool, status, stage, input, model text and a bounded slice of its raw output
/// (`offset`, `limit` bytes; default 4 KiB, at most 64 KiB). Same reads as `aibuddy show`.
#[tauri::command]
pub async fn show_call(
    state: State<'_, ShellState>,
    tool_call_id: String,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<CallDetail, CommandError> {
    history::show(store(&state)?, &tool_call_id, offset, limit).await
}

/// The open project's call store (the one the core records every call in).
fn store(state: &ShellState) -> Result<&aibuddy_store::Store, CommandError> {
    state
        .app
        .persistence
        .as_ref()
        .map(|p| &p.store)
        .ok_or_else(|| CommandError::new(ErrorCode::Project, "the call store is not open"))
}
