//! TypeScript bindings of every type that crosses the IPC boundary, generated with ts-rs into
//! `ui/src/bindings/` and committed, and the data the UI reads from the core's tables
//! (`settingsFields.ts`: the settings field table, [`aibuddy::settings::FIELDS`], and each
//! authority rule's sentence). `tests/all/bindings.rs` fails when the committed files are stale;
//! `UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings` rewrites them.
//! `commands.ts` (the typed command clients, from the command table) is written here too.

use std::path::Path;

use ts_rs::{ExportError, TS};

// The ts-rs settings: the command table's types are named with them too, so they live there.
pub use crate::command_spec::config;

/// Writes the bindings of every IPC type (and everything they reference) into `dir`.
pub fn export_all(dir: &Path) -> Result<(), ExportError> {
    let cfg = config(dir);
    aibuddy::discovery::ToolListing::export_all(&cfg)?;
    crate::state::ProjectInfo::export_all(&cfg)?;
    crate::error::CommandError::export_all(&cfg)?;
    crate::calls::CallResult::export_all(&cfg)?;
    aibuddy::events::Event::export_all(&cfg)?;
    crate::runs::RunEventEnvelope::export_all(&cfg)?;
    crate::runs::RunHandle::export_all(&cfg)?;
    crate::run_views::RunSummary::export_all(&cfg)?;
    crate::run_views::RunDetail::export_all(&cfg)?;
    aibuddy::human::HumanAnswer::export_all(&cfg)?;
    aibuddy::human::HumanQuestion::export_all(&cfg)?;
    crate::recent::RecentProject::export_all(&cfg)?;
    crate::trust_view::TrustPrompt::export_all(&cfg)?;
    crate::providers_view::ProviderList::export_all(&cfg)?;
    crate::settings_pages::SettingsPages::export_all(&cfg)?;
    crate::settings_pages::SettingsWrite::export_all(&cfg)?;
    aibuddy::host::provider_keys::KeyState::export_all(&cfg)?;
    aibuddy::settings_edit::Level::export_all(&cfg)?;
    crate::catalog::CatalogServer::export_all(&cfg)?;
    crate::catalog::CatalogSkills::export_all(&cfg)?;
    crate::history_browser::HistoryPageQuery::export_all(&cfg)?;
    crate::history_browser::HistoryPageView::export_all(&cfg)?;
    crate::history_browser::HistoryFacets::export_all(&cfg)?;
    crate::history_browser::HistoryHeadView::export_all(&cfg)?;
    crate::history_browser::CallRecordView::export_all(&cfg)?;
    crate::mcp_login::McpLoginOutcome::export_all(&cfg)?;
    crate::mcp_login::McpTokenState::export_all(&cfg)?;
    crate::approvals_view::ApprovalsView::export_all(&cfg)?;
    crate::approvals_view::ConfirmOffer::export_all(&cfg)?;
    crate::processes_view::ProcessRow::export_all(&cfg)?;
    crate::checkpoints_view::ChangesView::export_all(&cfg)?;
    crate::checkpoints_view::RewindTargetArg::export_all(&cfg)?;
    crate::checkpoints_view::RewindView::export_all(&cfg)?;
    crate::call_images::CallImage::export_all(&cfg)?;
    crate::local_servers::ModelSetup::export_all(&cfg)?;
    aibuddy::settings::FieldSpec::export_all(&cfg)?;
    std::fs::write(dir.join(SETTINGS_FIELDS_FILE), settings_fields_module()?)?;
    // Arguments of `set_setting` / `put_mcp_server`: any JSON value.
    serde_json::Value::export_all(&cfg)?;
    std::fs::write(
        dir.join(crate::commands_ts::FILE),
        crate::commands_ts::render(&crate::command_table::table()),
    )?;
    Ok(())
}

/// The generated data file of the settings field table, beside the types.
pub const SETTINGS_FIELDS_FILE: &str = "settingsFields.ts";

/// `settingsFields.ts`: the core's settings field table and the sentence of each authority rule,
/// as TypeScript constants typed by the generated `FieldSpec` and `AuthorityRule`.
pub fn settings_fields_module() -> Result<String, ExportError> {
    use aibuddy::settings::{AuthorityRule, FIELDS};
    let json = |v: &serde_json::Value| {
        serde_json::to_string_pretty(v).map_err(|e| ExportError::Io(std::io::Error::other(e)))
    };
    let fields = serde_json::to_value(FIELDS).map_err(|e| ExportError::Io(e.into()))?;
    let rules: serde_json::Map<String, serde_json::Value> = AuthorityRule::ALL
        .iter()
        .map(|r| {
            let key = serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (key, serde_json::Value::from(r.describe()))
        })
        .collect();
    Ok(format!(
        "// Generated from the core's settings field table (`src/settings/fields.rs`) by the desktop's\n\
         // `bindings::export_all`; do not edit. Regenerate with:\n\
         //     UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings\n\
         import type {{ AuthorityRule }} from \"./AuthorityRule\";\n\
         import type {{ FieldSpec }} from \"./FieldSpec\";\n\
         \n\
         /** Every settings key: its authority rule, whether only your own settings may set it, whether\n\
         \x20* the settings pages edit it and on which page, and its meaning. */\n\
         export const SETTINGS_FIELDS: readonly FieldSpec[] = {};\n\
         \n\
         /** What a project's value of a field with each rule needs before it applies. */\n\
         export const AUTHORITY_RULES: Record<AuthorityRule, string> = {};\n",
        json(&fields)?,
        json(&serde_json::Value::Object(rules))?,
    ))
}
