//! The window's processes panel (issue 25): the background processes of the open project's runs
//! with the tail of their output, polled by the panel, the person's Stop and Keep (whatever run
//! started the process: the person's authority, not the model's; a kept process outlives its
//! run and is stopped when the window closes). The table is the core's
//! `Services::processes`; nothing here decides anything.

use serde::Serialize;
use tauri::State;
use ts_rs::TS;

use crate::error::CommandError;
use crate::state::ShellState;

/// Bytes of output a row carries (the end of it).
pub const TAIL_BYTES: usize = 8 * 1024;

/// One background process as the panel shows it. `command` and `tail` are the model's command and
/// the process's output: untrusted text, rendered as text.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ProcessRow {
    pub process_id: String,
    pub run_id: String,
    pub command: String,
    pub running: bool,
    /// The person keeps it running after its run ends.
    pub kept: bool,
    /// `running`, or how it ended (`ended (exit code 0) after 1200 ms`, `failed to start: ...`).
    pub status: String,
    #[ts(type = "number")]
    pub output_bytes: u64,
    pub tail: String,
}

/// The rows of `processes` (pure).
pub fn rows(processes: &aibuddy::tools::process::Processes) -> Vec<ProcessRow> {
    processes
        .all()
        .iter()
        .map(|p| {
            let info = p.info();
            ProcessRow {
                process_id: info.process_id,
                run_id: p.run_id.clone(),
                command: info.command,
                running: info.running,
                kept: info.kept,
                status: info
                    .end
                    .as_ref()
                    .map_or_else(|| "running".to_string(), |e| e.describe()),
                output_bytes: info.output_bytes,
                tail: p.tail(TAIL_BYTES),
            }
        })
        .collect()
}

/// The background processes of the open project's runs, oldest first (empty without a project).
#[tauri::command]
pub fn list_processes(state: State<'_, ShellState>) -> Result<Vec<ProcessRow>, CommandError> {
    Ok(match state.current() {
        Some(project) => rows(&project.app.services.processes),
        None => Vec::new(),
    })
}

/// Stops background process `process_id` (its whole tree) and waits until its end is recorded
/// (bounded). False when there is no such process or it did not settle in time.
#[tauri::command]
pub async fn stop_process(
    state: State<'_, ShellState>,
    process_id: String,
) -> Result<bool, CommandError> {
    let project = state.project()?;
    Ok(project.app.services.processes.stop_any(&process_id).await)
}

/// The person keeps background process `process_id` running after its run ends (`keep`), or
/// lets the run's end stop it again. False when there is no such process.
#[tauri::command]
pub fn keep_process(
    state: State<'_, ShellState>,
    process_id: String,
    keep: bool,
) -> Result<bool, CommandError> {
    let project = state.project()?;
    let found = project
        .app
        .services
        .processes
        .all()
        .into_iter()
        .find(|p| p.id == process_id);
    Ok(match found {
        Some(p) => {
            p.set_kept(keep);
            true
        }
        None => false,
    })
}
