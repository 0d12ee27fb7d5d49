//! The commands the UI may invoke. Each is a thin adapter: it reads Rust state, calls the core, and
//! maps failures to [`CommandError`]. None takes a path or an authority decision from the UI.

use aibuddy::discovery::ToolListing;
use tauri::State;

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
