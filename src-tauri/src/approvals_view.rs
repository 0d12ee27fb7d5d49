//! The approval mode and rule offers in the window. The mode is the person's choice, kept at the
//! user level for the project (`aibuddy::approvals::record`), never in the project; the offered
//! rule of a confirmation is computed here from the pending request itself (never taken from the
//! web view) and stored the same way. A mode chosen here applies when the project is opened again,
//! like the other settings pages.

use aibuddy::approvals::rules::{offer_for_call, offer_label};
use aibuddy::approvals::{ApprovalMode, record};
use serde::Serialize;
use tauri::State;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// One mode with its sentence.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ModeChoice {
    pub mode: ApprovalMode,
    pub sentence: String,
}

/// The project's approval mode as the window shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ApprovalsView {
    /// In force in the open project (as opened).
    pub mode: ApprovalMode,
    /// What the settings files and the person's record give now (applies at the next open).
    pub next_mode: ApprovalMode,
    /// The mode the person chose for this project, if any.
    pub chosen_for_project: Option<ApprovalMode>,
    /// Whether any mode was chosen (else `ask` by default).
    pub chosen: bool,
    /// The mode the project's own settings narrow to, if any.
    pub project_narrows: Option<ApprovalMode>,
    /// The rules in force, shown as `allow command \`cargo test *\``.
    pub rules: Vec<String>,
    pub modes: Vec<ModeChoice>,
}

/// The rule a pending confirmation offers.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ConfirmOffer {
    /// "allow commands starting with `cargo test` in this project".
    pub label: String,
    /// The exact rule stored: `{"command": "cargo test *", "decision": "allow"}`.
    pub rule: String,
}

fn view(app: &aibuddy::app::App) -> Result<ApprovalsView, CommandError> {
    let next = aibuddy::trust::load_project(&app.project_root, &app.data_dir)
        .settings
        .settings
        .approvals;
    let chosen_for_project = record::lookup(&app.data_dir, &app.project_root)
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?
        .and_then(|r| r.mode);
    let now = &app.services.settings.approvals;
    Ok(ApprovalsView {
        mode: now.mode,
        next_mode: next.mode,
        chosen_for_project,
        chosen: next.chosen,
        project_narrows: next.project_narrows,
        rules: now.rules.iter().map(|r| r.shown()).collect(),
        modes: [
            ApprovalMode::Ask,
            ApprovalMode::Auto,
            ApprovalMode::ReadOnly,
        ]
        .into_iter()
        .map(|mode| ModeChoice {
            mode,
            sentence: mode.sentence().to_string(),
        })
        .collect(),
    })
}

/// The approval mode of the open project.
#[tauri::command]
pub async fn approvals_view(state: State<'_, ShellState>) -> Result<ApprovalsView, CommandError> {
    let app = state.app()?;
    view(&app)
}

/// Chooses the approval mode of the open project (kept at the user level; applies at the next
/// open of the project).
#[tauri::command]
pub async fn set_approval_mode(
    state: State<'_, ShellState>,
    mode: ApprovalMode,
) -> Result<ApprovalsView, CommandError> {
    let app = state.app()?;
    record::set_mode(&app.data_dir, &app.project_root, mode)
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?;
    view(&app)
}

/// The rule the pending confirmation of `call_id` offers, if any.
#[tauri::command]
pub async fn confirm_offer(
    state: State<'_, ShellState>,
    call_id: String,
) -> Result<Option<ConfirmOffer>, CommandError> {
    let project = state.project()?;
    Ok(project
        .calls
        .pending_confirms()
        .into_iter()
        .find(|r| r.call_id == call_id)
        .and_then(|r| offer_for_call(&r.tool, &r.target))
        .map(|rule| ConfirmOffer {
            label: offer_label(&rule),
            rule: serde_json::to_string(&rule).unwrap_or_default(),
        }))
}

/// Approves the pending confirmation of `call_id` once and records its offered rule for later
/// calls in this project (at the user level). False when nothing is pending or nothing is offered.
#[tauri::command]
pub async fn answer_confirm_with_rule(
    state: State<'_, ShellState>,
    call_id: String,
) -> Result<bool, CommandError> {
    let project = state.project()?;
    let Some(rule) = project
        .calls
        .pending_confirms()
        .into_iter()
        .find(|r| r.call_id == call_id)
        .and_then(|r| offer_for_call(&r.tool, &r.target))
    else {
        return Ok(false);
    };
    project
        .app
        .rule_book()
        .remember(rule)
        .map_err(|e| CommandError::new(ErrorCode::Project, e.to_string()))?;
    Ok(crate::calls::answer_confirm(&project, &call_id, true).await)
}
