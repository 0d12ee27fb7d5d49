//! What the shell holds for the whole run: the open project (fixed at startup) and the core app.

use std::sync::Arc;

use aibuddy::settings::SettingsProblem;
use serde::Serialize;
use ts_rs::TS;

use crate::calls::Calls;
use crate::runs::Runs;

/// The open project, as the header shows it. Display only: the UI never sends a path back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProjectInfo {
    /// Canonical project root.
    pub root: String,
    /// Data directory shared with the CLI (history, settings, logs).
    pub data_dir: String,
    /// The settings files that were read, user level first.
    pub settings_files: Vec<String>,
    /// Problems found in those files; each field named here fell back to its default.
    pub settings_problems: Vec<SettingsProblem>,
    /// The core's event wire format version (`aibuddy::events::EVENT_VERSION`): a UI built for
    /// another version knows the events it receives may not have the shape it expects.
    pub event_version: u32,
}

/// Managed Tauri state: one per window process, created before the window exists.
pub struct ShellState {
    pub(crate) app: Arc<aibuddy::app::App>,
    pub(crate) info: ProjectInfo,
    /// The run that calls from this window belong to.
    pub(crate) run_id: String,
    pub calls: Calls,
    /// The agent run in progress (at most one).
    pub runs: Arc<Runs>,
    /// Questions of runs (`ask_user_question`, MCP elicitations) waiting for the window's answer.
    pub questions: aibuddy::human::PendingQuestions,
}

impl ShellState {
    /// Wraps an opened core app; its project root is the only one this process will ever serve.
    pub fn new(app: aibuddy::app::App) -> Self {
        let info = ProjectInfo {
            root: app.project_root.display().to_string(),
            data_dir: app.data_dir.display().to_string(),
            settings_files: app
                .settings
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            settings_problems: app.settings.problems.clone(),
            event_version: aibuddy::events::EVENT_VERSION,
        };
        let run_id = format!(
            "desktop_{}",
            aibuddy::pipeline::new_call_id().trim_start_matches("call_")
        );
        let calls = Calls::default();
        // Late `ToolCompacted` events reach the window through the call they belong to.
        if let Some(p) = &app.persistence {
            p.compactor
                .set_event_sink(Arc::new(calls.compacted.clone()));
        }
        Self {
            app: Arc::new(app),
            info,
            run_id,
            calls,
            runs: Arc::default(),
            questions: aibuddy::human::PendingQuestions::new(),
        }
    }
}
