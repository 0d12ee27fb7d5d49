//! The aibuddy desktop shell: Tauri commands, events and state wiring around the `aibuddy` core.
//!
//! Thin by design: no domain logic lives here. The project root and every authority decision are
//! held in Rust state ([`ShellState`]), set once at startup from the command line; commands take
//! nothing from the UI that could widen scope. The capability in `capabilities/` grants exactly the
//! commands in [`COMMANDS`]. The commands are listed once, in `command_table.rs`: Tauri's invoke
//! handler and the UI's typed clients (`ui/src/bindings/commands.ts`) are both made from it.

pub mod approvals_view;
mod args;
pub mod bindings;
pub mod call_images;
pub mod calls;
pub mod catalog;
pub mod checkpoints_view;
pub mod command_spec;
pub mod command_table;
pub mod commands;
pub mod commands_ts;
pub mod compacted;
mod display;
mod error;
pub mod history_browser;
pub mod local_servers;
pub mod mcp_login;
pub mod processes_view;
pub mod project_commands;
pub mod projects;
pub mod provider;
pub mod providers_view;
pub mod raw_output;
pub mod recent;
mod run_slot;
pub mod run_views;
mod running_calls;
pub mod runs;
pub mod settings_pages;
mod state;
#[cfg(test)]
mod table_names;
pub mod trust_view;
pub mod trust_watch;

use tauri::{Builder, Runtime};

pub use args::Args;
pub use calls::{CallResult, Calls};
pub use command_table::COMMANDS;
pub use display::{NO_DISPLAY_MESSAGE, has_display};
pub use error::{CommandError, ErrorCode};
pub use runs::{RUN_EVENT, RunEventEnvelope, RunHandle, Runs};
pub use state::{Project, ProjectInfo, ShellState};

/// Registers the shell's state and commands on a builder (the real runtime or tauri's mock one).
pub fn wire<R: Runtime>(builder: Builder<R>, state: ShellState) -> Builder<R> {
    builder
        .manage(state)
        .manage(mcp_login::McpLogins::default())
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(command_table::handler())
}

/// How long closing the window waits for stopped calls to finish (process groups killed, results
/// recorded) before the process exits.
pub const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Called when the app exits: stops the run in progress and every running call and waits (bounded)
/// until each has ended and been recorded, so no child process outlives the window and no call or
/// run is left half-written.
pub fn on_exit(state: &ShellState) {
    let Some(state) = state.current() else {
        return;
    };
    if state.runs.cancel_all() {
        tracing::info!("window closing: stopping the run in progress");
        if !state.runs.wait_idle(EXIT_GRACE) {
            tracing::warn!("the run did not finish within the exit grace period");
        }
    }
    let stopped = state.calls.cancel_all();
    if stopped > 0 {
        tracing::info!(stopped, "window closing: stopping running calls");
        if !state.calls.wait_idle(EXIT_GRACE) {
            tracing::warn!("some calls did not finish within the exit grace period");
        }
    }
    // Background processes the run's end did not stop (started from the tool console, or kept):
    // stopped and recorded before the process exits (bounded).
    let processes = &state.app.services.processes;
    let stopped = processes.cancel_all();
    if stopped > 0 {
        tracing::info!(stopped, "window closing: stopping background processes");
        let until = std::time::Instant::now() + EXIT_GRACE;
        while !processes.all_settled() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if !processes.all_settled() {
            tracing::warn!("some background processes did not settle within the exit grace period");
        }
    }
}

/// The app's context, generated from the root `tauri.conf.json` and `capabilities/` at build time.
pub fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!("../tauri.conf.json")
}
