//! Opening and switching projects. A switch re-scopes everything: the old project's MCP servers are
//! shut down (their processes killed and waited for) and its background work stopped before the new
//! project opens with its own sandbox, settings, skills, MCP servers, history and runs.
//!
//! A switch while a run, a call or a question of the old project is in progress is refused with
//! [`ErrorCode::Busy`] ("stop it first"): the person stops it in the run view, then switches. Work
//! that slips in between the check and the swap is stopped (its process trees killed) before the
//! old project closes.
//!
//! Paths come from the native folder dialog (`pick_project`), the command line, or the recent list
//! (`open_recent`, which only opens paths that are in it); each must exist and be a directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::contract::Stage;
use tauri::{AppHandle, Emitter, Runtime};

use crate::error::{CommandError, ErrorCode};
use crate::recent;
use crate::state::{Project, ProjectInfo, ShellState};

/// The Tauri event sent after the open project changed (payload: the new [`ProjectInfo`], or null
/// when none is open): the window resets every view.
pub const PROJECT_EVENT: &str = "project-changed";

/// How long closing a project waits for its stopped work (runs, calls) to end.
pub const CLOSE_GRACE: Duration = crate::EXIT_GRACE;

/// `path` as a project root: it must exist and be a directory (canonicalized).
pub fn validate_dir(path: &Path) -> Result<PathBuf, CommandError> {
    let refuse = |reason: String| CommandError {
        code: ErrorCode::Project,
        stage: Some(Stage::Parameters),
        message: format!(
            "project folder `{}` cannot be opened: {reason}",
            aibuddy_common::term::line(&path.display().to_string())
        ),
    };
    let root = std::fs::canonicalize(path).map_err(|e| refuse(e.to_string()))?;
    if !root.is_dir() {
        return Err(refuse("not a directory".to_string()));
    }
    if root.to_str().is_none() {
        return Err(refuse("its path is not valid UTF-8".to_string()));
    }
    Ok(root)
}

/// Refused with `busy` when the project has work in progress.
pub fn refuse_if_busy(project: &Project) -> Result<(), CommandError> {
    match project.busy_reason() {
        Some(why) => Err(CommandError::new(
            ErrorCode::Busy,
            format!("{why} in the open project: stop it first, then open another project"),
        )),
        None => Ok(()),
    }
}

/// Stops everything of a project the window no longer shows and waits (bounded) until it is gone:
/// runs and calls cancelled (process trees killed), other commands holding it finished, the trust
/// watcher dropped, MCP servers shut down (stdio servers killed), background compaction stopped.
pub async fn close(project: Arc<Project>) {
    let deadline = Instant::now() + CLOSE_GRACE;
    loop {
        project.runs.cancel_all();
        project.calls.cancel_all();
        let idle = !project.runs.busy() && project.calls.wait_idle(Duration::ZERO);
        if (idle && Arc::strong_count(&project) == 1) || Instant::now() >= deadline {
            if !idle {
                tracing::warn!("closing a project whose work did not end within {CLOSE_GRACE:?}");
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    project
        .trust_watch
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(mcp) = &project.app.capabilities.mcp {
        mcp.shutdown().await;
    }
    if let Some(p) = &project.app.persistence {
        p.compactor.cancel();
        p.compactor.wait_idle().await;
    }
    tracing::info!(project = %project.info.root, "project closed");
}

/// Records `root` as the most recent project (best effort: a list that cannot be written is
/// logged, never a reason not to open).
pub fn remember(state: &ShellState, root: &str) {
    let _guard = state.recent_lock.lock().unwrap_or_else(|p| p.into_inner());
    let file = recent::touch(recent::load(state.data_dir()), root, recent::now_ms());
    if let Err(e) = recent::save(state.data_dir(), &file) {
        tracing::warn!("{e}");
    }
}

/// Edits the recent entry of `root` (best effort, like [`remember`]).
pub fn remember_with(state: &ShellState, root: &str, edit: impl FnOnce(&mut recent::RecentEntry)) {
    let _guard = state.recent_lock.lock().unwrap_or_else(|p| p.into_inner());
    let file = recent::update(recent::load(state.data_dir()), root, recent::now_ms(), edit);
    if let Err(e) = recent::save(state.data_dir(), &file) {
        tracing::warn!("{e}");
    }
}

/// The recent entry of `root`, if listed.
pub fn recent_entry(state: &ShellState, root: &str) -> Option<recent::RecentEntry> {
    let _guard = state.recent_lock.lock().unwrap_or_else(|p| p.into_inner());
    recent::entry(&recent::load(state.data_dir()), root).cloned()
}

/// Opens `path` in place of the open project (see the module docs), remembers it in the recent
/// list and tells the window ([`PROJECT_EVENT`]). When the new project cannot be opened, the window
/// is left with no project (the welcome view) and the error says why.
pub async fn switch<R: Runtime>(
    handle: &AppHandle<R>,
    state: &ShellState,
    path: &Path,
) -> Result<ProjectInfo, CommandError> {
    let _one_at_a_time = state.switching.lock().await;
    let root = validate_dir(path)?;
    if let Some(old) = state.current() {
        refuse_if_busy(&old)?;
        drop(old);
        if let Some(old) = state.take() {
            close(old).await;
        }
    }
    let opened = App::open_with(
        AppOptions {
            project: root,
            data_dir: state.data_dir().to_path_buf(),
        },
        state.plane.clone(),
    )
    .await;
    let app = match opened {
        Ok(app) => app,
        Err(e) => {
            emit(handle, None);
            return Err(CommandError {
                code: ErrorCode::Project,
                stage: None,
                message: aibuddy_common::term::block(&e.to_string()).into_owned(),
            });
        }
    };
    let project = Project::new(app);
    let info = project.info.clone();
    state.install(project);
    remember(state, &info.root);
    tracing::info!(project = %info.root, "project opened");
    emit(handle, Some(&info));
    Ok(info)
}

fn emit<R: Runtime>(handle: &AppHandle<R>, info: Option<&ProjectInfo>) {
    if let Err(error) = handle.emit(PROJECT_EVENT, info) {
        tracing::debug!(%error, "could not tell the window the project changed");
    }
}
