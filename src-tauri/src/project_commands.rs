//! The commands of the project bar, the welcome view, the trust dialog and the provider picker.
//! None takes a path the UI made up: folders come from the native dialog (`pick_project`) or the
//! recent list (`open_recent` opens only paths that are in it); trust takes back the digest the
//! dialog showed; the picker names entries of the person's settings.

use std::path::{Path, PathBuf};

use aibuddy::trust::TrustStatus;
use tauri::{AppHandle, Emitter, Manager, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{CommandError, ErrorCode};
use crate::projects::{self, refuse_if_busy};
use crate::providers_view::{self, ProviderList};
use crate::recent::{self, RecentProject};
use crate::state::{ProjectInfo, ShellState};
use crate::trust_view::{TRUST_EVENT, TrustPrompt, prompt, trust_error};

/// Opens the native folder dialog and switches to the folder chosen. None when the person cancels.
/// Refused (`busy`) before the dialog opens while a run or call is in progress.
#[tauri::command]
pub async fn pick_project<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
) -> Result<Option<ProjectInfo>, CommandError> {
    if let Some(open) = state.current() {
        refuse_if_busy(&open)?;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_title("Open a project folder")
        .pick_folder(move |folder| {
            let _ = tx.send(folder);
        });
    let Ok(Some(folder)) = rx.await else {
        return Ok(None);
    };
    let path = folder.into_path().map_err(|e| {
        CommandError::new(
            ErrorCode::Project,
            format!("the folder chosen cannot be used: {e}"),
        )
    })?;
    projects::switch(&app, &state, &path).await.map(Some)
}

/// Switches to a project of the recent list. Refused when `path` is not in the list, no longer
/// exists or is not a directory.
#[tauri::command]
pub async fn open_recent<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    path: String,
) -> Result<ProjectInfo, CommandError> {
    if projects::recent_entry(&state, &path).is_none() {
        return Err(CommandError {
            code: ErrorCode::Project,
            stage: Some(aibuddy::contract::Stage::Parameters),
            message:
                "that folder is not in the recent-projects list: open it with the folder dialog"
                    .to_string(),
        });
    }
    projects::switch(&app, &state, &PathBuf::from(path)).await
}

/// The recent projects, most recent first; missing folders flagged.
#[tauri::command]
pub async fn list_recent(state: State<'_, ShellState>) -> Result<Vec<RecentProject>, CommandError> {
    let current = state.current().map(|p| p.info.root.clone());
    let file = {
        let _guard = state.recent_lock.lock().unwrap_or_else(|p| p.into_inner());
        recent::load(state.data_dir())
    };
    Ok(recent::views(&file, current.as_deref(), |p| {
        std::path::Path::new(p).is_dir()
    }))
}

/// Removes a project from the recent list. False when it was not listed.
#[tauri::command]
pub async fn forget_recent(
    state: State<'_, ShellState>,
    path: String,
) -> Result<bool, CommandError> {
    let _guard = state.recent_lock.lock().unwrap_or_else(|p| p.into_inner());
    let mut file = recent::load(state.data_dir());
    let removed = recent::forget(&mut file, &path);
    if removed {
        recent::save(state.data_dir(), &file)
            .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?;
    }
    Ok(removed)
}

/// The open project's trust now and whether the dialog should ask. Starts watching what its trust
/// covers (`aibuddy::trust::watch`: `.aibuddy/` and the files its servers run), so a change while
/// it is open sends `trust-changed`.
#[tauri::command]
pub async fn trust_status<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
) -> Result<TrustPrompt, CommandError> {
    let project = state.project()?;
    {
        let mut watch = project
            .trust_watch
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if watch.is_none() {
            let evaluate: crate::trust_watch::Evaluate =
                Box::new(move |root: &Path, last: &mut String| evaluate_trust(&app, root, last));
            match crate::trust_watch::start(&project.app.trust, evaluate) {
                Ok(w) => *watch = Some(w),
                Err(e) => tracing::warn!("cannot watch the project's trust files: {e}"),
            }
        }
    }
    Ok(current_prompt(&state, &project))
}

/// Recomputes the trust status of `root` (if it is still the open project) and tells the window
/// when its digest differs from `last` (then updated). `None` when `root` is no longer open.
fn evaluate_trust<R: Runtime>(
    handle: &AppHandle<R>,
    root: &Path,
    last: &mut String,
) -> Option<TrustStatus> {
    let state = handle.try_state::<ShellState>()?;
    let project = state.current()?;
    if Path::new(&project.app.trust.project) != root {
        return None;
    }
    let status = project.app.trust_status();
    if status.digest != *last {
        let declined =
            projects::recent_entry(&state, &project.info.root).and_then(|e| e.declined_digest);
        last.clone_from(&status.digest);
        let view = prompt(status.clone(), declined.as_deref(), project.app.trust.state);
        tracing::info!(project = %project.info.root, ask = view.ask, "trust-relevant files changed");
        if let Err(error) = handle.emit(TRUST_EVENT, &view) {
            tracing::debug!(%error, "could not tell the window the trust status changed");
        }
    }
    Some(status)
}

fn current_prompt(state: &ShellState, project: &crate::state::Project) -> TrustPrompt {
    let declined =
        projects::recent_entry(state, &project.info.root).and_then(|e| e.declined_digest);
    prompt(
        project.app.trust_status(),
        declined.as_deref(),
        project.app.trust.state,
    )
}

/// Trusts the open project at the content the dialog showed (`digest`) and reopens it so its MCP
/// servers start and its settings apply. Refused when the files changed since (`stage`
/// Authorization) or while work is in progress (`busy`).
#[tauri::command]
pub async fn trust_project<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    digest: String,
) -> Result<TrustPrompt, CommandError> {
    let project = state.project()?;
    refuse_if_busy(&project)?;
    project.app.grant_trust(&digest).map_err(trust_error)?;
    let root = project.app.project_root.clone();
    drop(project);
    projects::switch(&app, &state, &root).await?;
    let project = state.project()?;
    Ok(current_prompt(&state, &project))
}

/// "Don't trust": forgets any trust of the open project, remembers that the person declined this
/// content (`digest`, the one the dialog showed; default: the current one) so the dialog does not
/// ask again until the files change, and reopens the project untrusted if its trust applied.
#[tauri::command]
pub async fn distrust_project<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    digest: Option<String>,
) -> Result<TrustPrompt, CommandError> {
    let project = state.project()?;
    let applied = project.app.trust.state == aibuddy::trust::TrustState::Trusted;
    if applied {
        refuse_if_busy(&project)?;
    }
    let declined = digest.unwrap_or_else(|| project.app.trust_status().digest);
    projects::remember_with(&state, &project.info.root, |e| {
        e.declined_digest = Some(declined);
    });
    project.app.revoke_trust().map_err(trust_error)?;
    if applied {
        let root = project.app.project_root.clone();
        drop(project);
        projects::switch(&app, &state, &root).await?;
    }
    let project = state.project()?;
    Ok(current_prompt(&state, &project))
}

/// The configured provider entries of the open project, the default and the last choice.
#[tauri::command]
pub async fn list_providers(state: State<'_, ShellState>) -> Result<ProviderList, CommandError> {
    let project = state.project()?;
    let entry = projects::recent_entry(&state, &project.info.root);
    let (chosen, model) = entry.map(|e| (e.provider, e.model)).unwrap_or_default();
    Ok(providers_view::for_app(
        &project.app,
        chosen.as_deref(),
        model.as_deref(),
    ))
}

/// Remembers the picker's choice for the open project (None: the default entry / its model).
#[tauri::command]
pub async fn choose_provider(
    state: State<'_, ShellState>,
    provider: Option<String>,
    model: Option<String>,
) -> Result<(), CommandError> {
    let project = state.project()?;
    let model = model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    projects::remember_with(&state, &project.info.root, |e| {
        e.provider = provider;
        e.model = model;
    });
    Ok(())
}
