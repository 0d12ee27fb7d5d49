//! What the shell holds: the open project (replaceable: the person may open another folder) and
//! what stays across projects (the data directory, the plane options, the recent list's lock).
//!
//! Everything scoped to one project (the core `App`, its header info, the window's run id, its
//! calls, runs and pending questions) lives in one [`Project`] behind a lock. Commands take a
//! snapshot (`state.project()`, `state.app()`) and work on it; switching project
//! (`crate::projects`) swaps the snapshot only when nothing is running in the old one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use aibuddy::plane::PlaneOptions;
use aibuddy::settings::SettingsProblem;
use serde::Serialize;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::run_slot::Runs;
use crate::running_calls::Calls;

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
}

/// One open project and everything scoped to it.
pub struct Project {
    pub app: Arc<aibuddy::app::App>,
    pub info: ProjectInfo,
    /// The run that calls from this window belong to.
    pub run_id: String,
    pub calls: Calls,
    /// The agent run in progress (at most one).
    pub runs: Arc<Runs>,
    /// Questions of runs (`ask_user_question`, MCP elicitations) waiting for the window's answer.
    pub questions: aibuddy::human::PendingQuestions,
    /// Re-prompts for trust when the project's trust-relevant files change (started lazily).
    pub(crate) trust_watch: Mutex<Option<crate::trust_watch::TrustWatch>>,
}

impl Project {
    /// Wraps an opened core app.
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
            trust_watch: Mutex::new(None),
        }
    }

    /// Why the project cannot be closed now (a run, a call, or a question in progress), or None.
    pub fn busy_reason(&self) -> Option<String> {
        if let Some(run) = self.runs.current() {
            return Some(format!("run {run} is in progress"));
        }
        if self.runs.busy() {
            return Some("a run is starting".to_string());
        }
        if !self.calls.wait_idle(std::time::Duration::ZERO) {
            return Some("a tool call is running".to_string());
        }
        None
    }
}

/// Managed Tauri state: one per window process, created before the window exists.
pub struct ShellState {
    current: RwLock<Option<Arc<Project>>>,
    data_dir: PathBuf,
    pub(crate) plane: PlaneOptions,
    /// One switch at a time.
    pub(crate) switching: tokio::sync::Mutex<()>,
    /// Serialises reads and writes of the recent-projects file.
    pub(crate) recent_lock: Mutex<()>,
}

impl ShellState {
    /// Wraps an opened core app (the project given on the command line). Projects opened later
    /// use the default plane options unless [`ShellState::with_plane`] says otherwise.
    pub fn new(app: aibuddy::app::App) -> Self {
        let data_dir = app.data_dir.clone();
        let state = Self::empty(data_dir, PlaneOptions::default());
        state.install(Project::new(app));
        state
    }

    /// No project open yet (the window starts on the welcome view).
    pub fn empty(data_dir: PathBuf, plane: PlaneOptions) -> Self {
        Self {
            current: RwLock::new(None),
            data_dir,
            plane,
            switching: tokio::sync::Mutex::new(()),
            recent_lock: Mutex::new(()),
        }
    }

    /// The plane options every project opened from the window gets (MCP connect wait, token vault).
    pub fn with_plane(mut self, plane: PlaneOptions) -> Self {
        self.plane = plane;
        self
    }

    /// The data directory (shared with the CLI; the same for every project).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The open project, if any.
    pub fn current(&self) -> Option<Arc<Project>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The open project, or a `project` error when none is open.
    pub fn project(&self) -> Result<Arc<Project>, CommandError> {
        self.current().ok_or_else(|| {
            CommandError::new(
                ErrorCode::Project,
                "no project is open: open a project folder first",
            )
        })
    }

    /// The open project's core app (a snapshot: a later switch does not change it).
    pub fn app(&self) -> Result<Arc<aibuddy::app::App>, CommandError> {
        Ok(self.project()?.app.clone())
    }

    /// Makes `project` the open one; returns the one it replaces.
    pub(crate) fn install(&self, project: Project) -> Option<Arc<Project>> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        current.replace(Arc::new(project))
    }

    /// Closes the view of the open project (nothing new reaches it); returns it.
    pub(crate) fn take(&self) -> Option<Arc<Project>> {
        self.current
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}
