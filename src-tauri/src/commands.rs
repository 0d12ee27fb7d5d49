//! The commands the UI may invoke. Each is a thin adapter: it reads Rust state, calls the core, and
//! maps failures to [`CommandError`]. None takes a path or an authority decision from the UI.

use std::sync::Arc;

use aibuddy::agent::RunStart;
use aibuddy::discovery::ToolListing;
use aibuddy::events::Event;
use aibuddy_store::RunStatus;
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};

use crate::calls::{CallResult, ChannelSink, run_call};
use crate::error::{CommandError, ErrorCode};
use crate::run_views::{DEFAULT_RUNS_LIMIT, MAX_RUNS_LIMIT, RunDetail, RunSummary};
use crate::runs::{self, RunHandle, WindowSink};
use crate::state::{Project, ProjectInfo, ShellState};

/// The open project (root, data directory, settings files and their problems), for the header.
#[tauri::command]
pub async fn project_info(state: State<'_, ShellState>) -> Result<ProjectInfo, CommandError> {
    Ok(state.project()?.info.clone())
}

/// Every tool this run would have: active, deferred, and configured-but-absent with the reason.
#[tauri::command]
pub async fn list_tools(state: State<'_, ShellState>) -> Result<Vec<ToolListing>, CommandError> {
    Ok(state.app()?.tools_list())
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
    let project = state.project()?;
    Ok(run_call(&project, tool, arguments, Arc::new(ChannelSink(on_event))).await)
}

/// Stops a running call (its process group, its confirmation wait). False when it is not running.
#[tauri::command]
pub async fn cancel_call(
    state: State<'_, ShellState>,
    call_id: String,
) -> Result<bool, CommandError> {
    let project = state.project()?;
    Ok(project.calls.cancel(&call_id, &project.app.call_stops))
}

/// Answers the confirmation a call or a run's call is waiting for (one broker for both). The
/// approval is bound to that call's digest, which the shell looks up itself. False when nothing is
/// pending for `call_id`.
#[tauri::command]
pub async fn answer_confirm(
    state: State<'_, ShellState>,
    call_id: String,
    approve: bool,
) -> Result<bool, CommandError> {
    let project = state.project()?;
    Ok(crate::calls::answer_confirm(&project, &call_id, approve).await)
}

/// Answers a network question (a running command asks for a host on no `exec.network` list), of a
/// call or a run's call, by its `ask_id`: `once`, `project` (recorded at the user level by the
/// core, never in the project) or `deny`. False when the question is no longer open.
#[tauri::command]
pub async fn answer_network(
    state: State<'_, ShellState>,
    ask_id: String,
    answer: aibuddy::confirm::NetworkAnswer,
) -> Result<bool, CommandError> {
    Ok(state.project()?.calls.answer_network(&ask_id, answer))
}

/// Starts an agent run on the settings' provider entry `provider` (default `providers.default`),
/// optionally with another `model`. Returns the run id as soon as the run is recorded; the run
/// proceeds in the background and its events arrive as `run-event` (`{run_id, event}`). Refused
/// (`busy`) while another run of this project is in progress.
#[tauri::command]
pub async fn start_run<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    prompt: String,
    provider: Option<String>,
    model: Option<String>,
    max_steps: Option<u32>,
) -> Result<RunHandle, CommandError> {
    if prompt.trim().is_empty() {
        return Err(CommandError {
            code: ErrorCode::Run,
            stage: Some(aibuddy::contract::Stage::Parameters),
            message: "a run needs a prompt".to_string(),
        });
    }
    let project = state.project()?;
    let resolved =
        crate::provider::resolve(&project.app, None, provider.as_deref(), model.as_deref())?;
    let start = RunStart {
        prompt,
        max_steps,
        continue_run: None,
    };
    let sink = Arc::new(WindowSink::new(app));
    let run_id = runs::start(&project, Arc::new(resolved), start, sink).await?;
    Ok(RunHandle { run_id })
}

/// Stops the run in progress (`run_id`): its stream, its tools' process trees and its pending
/// confirmations. Returns once it has ended and been recorded `cancelled` (bounded wait). False
/// when `run_id` is not in progress.
#[tauri::command]
pub async fn stop_run(state: State<'_, ShellState>, run_id: String) -> Result<bool, CommandError> {
    let project = state.project()?;
    Ok(runs::stop(&project, &run_id, crate::EXIT_GRACE).await)
}

/// Continues a stored run (an interrupted one included) with an optional new `prompt`, on the
/// provider entry and model it was started with. Same answer and events as `start_run`.
#[tauri::command]
pub async fn continue_run<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    run_id: String,
    prompt: Option<String>,
) -> Result<RunHandle, CommandError> {
    let project = state.project()?;
    let stored = store(&project)?
        .get_run(&run_id)
        .await
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?
        .ok_or_else(|| CommandError {
            code: ErrorCode::Run,
            stage: Some(aibuddy::contract::Stage::Parameters),
            message: format!("there is no run `{run_id}`"),
        })?;
    // The stored provider entry and model, as `aibuddy run --continue` does.
    let resolved = crate::provider::resolve(&project.app, Some(&stored), None, None)?;
    let start = RunStart {
        prompt: prompt.unwrap_or_default(),
        max_steps: None,
        continue_run: Some(run_id),
    };
    let sink = Arc::new(WindowSink::new(app));
    let run_id = runs::start(&project, Arc::new(resolved), start, sink).await?;
    Ok(RunHandle { run_id })
}

/// Stored agent runs of the open project, newest first: `limit` (default 50, at most 200), and
/// `before` (a run id: the page after it). Same store query as `aibuddy runs`.
#[tauri::command]
pub async fn list_runs(
    state: State<'_, ShellState>,
    limit: Option<usize>,
    before: Option<String>,
) -> Result<Vec<RunSummary>, CommandError> {
    let limit = limit.unwrap_or(DEFAULT_RUNS_LIMIT).clamp(1, MAX_RUNS_LIMIT);
    let project = state.project()?;
    let store = store(&project)?;
    let list = || async {
        store
            .list_runs(limit, before.as_deref())
            .await
            .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))
    };
    let mut rows = list().await?;
    if rows.iter().any(|r| r.status == RunStatus::Running) && recover_dead_runs(store).await {
        rows = list().await?;
    }
    Ok(rows.into_iter().map(RunSummary::from).collect())
}

/// Marks the runs of processes that died since the app opened the store `interrupted` (a run
/// left `running` by a crashed or killed `aibuddy run` or window: its owner's instance lock is
/// free). True when one was marked. A failure is logged: the runs are then shown as stored.
async fn recover_dead_runs(store: &aibuddy_store::Store) -> bool {
    match store.recover_runs().await {
        Ok(marked) => !marked.is_empty(),
        Err(e) => {
            tracing::warn!(error = %e, "could not check whether running runs are still alive");
            false
        }
    }
}

/// One stored run: its status and usage, and its conversation (text, tool calls, results with
/// status, stage and the model's text). Same reads as `aibuddy runs show`.
#[tauri::command]
pub async fn show_run(
    state: State<'_, ShellState>,
    run_id: String,
) -> Result<RunDetail, CommandError> {
    let project = state.project()?;
    let store = store(&project)?;
    let exists = store
        .get_run(&run_id)
        .await
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?;
    let Some(status) = exists.and_then(|r| r.status) else {
        return Err(CommandError {
            code: ErrorCode::Run,
            stage: Some(aibuddy::contract::Stage::Parameters),
            message: format!("there is no agent run `{run_id}`"),
        });
    };
    // A run still `running` whose process is gone is shown as interrupted, not as running forever.
    // Its calls follow: a call its dead process left `running` becomes interrupted too.
    if status == RunStatus::Running {
        recover_dead_runs(store).await;
        crate::history_browser::recover_dead_calls(store).await;
    }
    let conversation = store
        .conversation(&run_id)
        .await
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?;
    let mut detail = RunDetail::from(&conversation);
    match store.run_hook_runs(&run_id).await {
        Ok(rows) => detail.attach_hooks(&rows),
        Err(e) => tracing::warn!(run = %run_id, "hook runs not read: {e}"),
    }
    // Its subagent runs, so each `agent` card links to the run it started.
    match store.child_runs(&run_id).await {
        Ok(children) => {
            for (child, call) in children {
                let status = store
                    .get_run(&child)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|r| r.status);
                detail.children.push(crate::run_views::ChildRunView {
                    run_id: child,
                    parent_call_id: call,
                    status,
                });
            }
        }
        Err(e) => tracing::warn!(run = %run_id, "subagent runs not read: {e}"),
    }
    detail.meter =
        crate::provider::stored_route(&project.app, &conversation.run).and_then(|route| {
            aibuddy::agent::usage_event::stored_usage(
                &conversation,
                &route,
                &aibuddy::agent::AgentOptions::from_settings(&project.app.settings.settings),
            )
        });
    Ok(detail)
}

/// Answers a question of the run in progress: `id` is the `tool_call_id` of an `ask_user` event or
/// the `elicitation_id` of an `elicitation` event. False when nothing is pending under `id` or the
/// answer does not fit the question (an unknown option, two picks of a single choice, free text
/// where only options are accepted): the question then stays open.
#[tauri::command]
pub async fn answer_ask_user(
    state: State<'_, ShellState>,
    id: String,
    answer: aibuddy::human::HumanAnswer,
) -> Result<bool, CommandError> {
    Ok(state.project()?.questions.answer(&id, answer))
}

/// The open project's call store (the one the core records every call in).
fn store(state: &Project) -> Result<&aibuddy_store::Store, CommandError> {
    state
        .app
        .persistence
        .as_ref()
        .map(|p| &p.store)
        .ok_or_else(|| CommandError::new(ErrorCode::Project, "the call store is not open"))
}
