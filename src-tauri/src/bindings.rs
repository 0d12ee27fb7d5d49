//! TypeScript bindings of every type that crosses the IPC boundary, generated with ts-rs into
//! `ui/src/bindings/` and committed. `tests/all/bindings.rs` fails when the committed files are stale;
//! `UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings` rewrites them.
//! `commands.ts` (the typed command clients, from the command table) is written here too.

use std::path::Path;

use ts_rs::{Config, ExportError, TS};

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
    aibuddy::settings::edit::Level::export_all(&cfg)?;
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
    // Arguments of `set_setting` / `put_mcp_server`: any JSON value.
    serde_json::Value::export_all(&cfg)?;
    std::fs::write(
        dir.join(crate::commands_ts::FILE),
        crate::commands_ts::render(&crate::command_table::table()),
    )?;
    Ok(())
}

/// Fixed settings (not read from the environment), so the output never depends on who runs it.
/// 64-bit integers are plain `number`s: serde_json sends them as JSON numbers.
pub fn config(dir: &Path) -> Config {
    Config::new().with_out_dir(dir).with_large_int("number")
}
