//! The one list of the shell's commands: each handler with the arguments the UI sends and the `Ok`
//! type it answers. It is both Tauri's invoke handler (`handler()`, registered by `wire`) and the
//! source of the UI's typed clients, `ui/src/bindings/commands.ts` (`table()`, rendered by
//! `commands_ts.rs`, checked for staleness with the other bindings).
//!
//! A new command is one line here: the build script reads the names from this file's text
//! (`table_names.rs`, strict: keep the table the last item, one entry per `;`, no comments inside)
//! and declares each as a grantable permission; `COMMANDS` is made from the same lines.
//! `tests/all/command_table.rs` fails when a line no longer matches its handler's signature or
//! when a `#[tauri::command]` is missing here. `Channel` and `Response` are the table's stand-ins
//! for `tauri::ipc`'s types.

use aibuddy::approvals::ApprovalMode;
use aibuddy::confirm::NetworkAnswer;
use aibuddy::discovery::ToolListing;
use aibuddy::events::Event;
use aibuddy::host::provider_keys::KeyState;
use aibuddy::human::HumanAnswer;
use aibuddy::settings_edit::Level;
use serde_json::Value;

use crate::approvals_view::{ApprovalsView, ConfirmOffer};
use crate::call_images::CallImage;
use crate::calls::CallResult;
use crate::catalog::{CatalogServer, CatalogSkills};
use crate::checkpoints_view::{ChangesView, RewindTargetArg, RewindView};
use crate::command_spec::{Channel, Response, command_table};
use crate::history_browser::{
    CallRecordView, HistoryFacets, HistoryHeadView, HistoryPageQuery, HistoryPageView,
};
use crate::local_servers::ModelSetup;
use crate::mcp_login::{McpLoginOutcome, McpTokenState};
use crate::processes_view::ProcessRow;
use crate::providers_view::ProviderList;
use crate::recent::RecentProject;
use crate::run_views::{RunDetail, RunSummary};
use crate::runs::RunHandle;
use crate::settings_pages::{SettingsPages, SettingsWrite};
use crate::state::ProjectInfo;
use crate::trust_view::TrustPrompt;
use crate::{
    approvals_view, call_images, catalog, checkpoints_view, commands, history_browser,
    local_servers, mcp_login, processes_view, project_commands, raw_output, settings_pages,
};

command_table! {
    commands::project_info() -> ProjectInfo;
    commands::list_tools() -> Vec<ToolListing>;
    commands::call_tool(tool: String, arguments: String, on_event: Channel<Event>) -> CallResult;
    commands::cancel_call(call_id: String) -> bool;
    commands::answer_confirm(call_id: String, approve: bool) -> bool;
    commands::answer_network(ask_id: String, answer: NetworkAnswer) -> bool;
    commands::start_run(
        prompt: String,
        provider: Option<String>,
        model: Option<String>,
        max_steps: Option<u32>,
    ) -> RunHandle;
    commands::stop_run(run_id: String) -> bool;
    commands::continue_run(run_id: String, prompt: Option<String>) -> RunHandle;
    commands::list_runs(limit: Option<usize>, before: Option<String>) -> Vec<RunSummary>;
    commands::show_run(run_id: String) -> RunDetail;
    commands::answer_ask_user(id: String, answer: HumanAnswer) -> bool;
    project_commands::pick_project() -> Option<ProjectInfo>;
    project_commands::open_recent(path: String) -> ProjectInfo;
    project_commands::list_recent() -> Vec<RecentProject>;
    project_commands::forget_recent(path: String) -> bool;
    project_commands::trust_status() -> TrustPrompt;
    project_commands::trust_project(digest: String) -> TrustPrompt;
    project_commands::distrust_project(digest: Option<String>) -> TrustPrompt;
    project_commands::list_providers() -> ProviderList;
    project_commands::choose_provider(provider: Option<String>, model: Option<String>) -> ();
    settings_pages::settings_pages() -> SettingsPages;
    settings_pages::set_setting(level: Level, path: Vec<String>, value: Option<Value>) -> SettingsWrite;
    settings_pages::put_mcp_server(level: Level, name: String, entry: Value) -> SettingsWrite;
    settings_pages::remove_mcp_server(level: Level, name: String) -> SettingsWrite;
    settings_pages::set_provider_key(name: String, key: String) -> KeyState;
    settings_pages::remove_provider_key(name: String) -> KeyState;
    approvals_view::approvals_view() -> ApprovalsView;
    approvals_view::set_approval_mode(mode: ApprovalMode) -> ApprovalsView;
    approvals_view::confirm_offer(call_id: String) -> Option<ConfirmOffer>;
    approvals_view::answer_confirm_with_rule(call_id: String) -> bool;
    catalog::list_servers() -> Vec<CatalogServer>;
    catalog::list_skills() -> CatalogSkills;
    catalog::reconnect_server(name: String) -> bool;
    history_browser::history_page(query: Option<HistoryPageQuery>) -> HistoryPageView;
    history_browser::history_facets() -> HistoryFacets;
    history_browser::history_head(
        query: Option<HistoryPageQuery>,
        since: Option<String>,
        watch: Option<Vec<String>>,
    ) -> HistoryHeadView;
    history_browser::call_record(tool_call_id: String) -> CallRecordView;
    raw_output::raw_output_range(tool_call_id: String, offset: u64, length: u64) -> Response;
    raw_output::save_raw_output(tool_call_id: String) -> Option<String>;
    mcp_login::mcp_login(server: String) -> McpLoginOutcome;
    mcp_login::cancel_mcp_login(server: String) -> bool;
    mcp_login::mcp_logout(server: String) -> bool;
    mcp_login::mcp_logins() -> Vec<McpTokenState>;
    checkpoints_view::call_changes(call_id: String) -> ChangesView;
    checkpoints_view::run_changes(run_id: String) -> Vec<ChangesView>;
    checkpoints_view::rewind_preview(target: RewindTargetArg, force: bool) -> RewindView;
    checkpoints_view::rewind(target: RewindTargetArg, force: bool) -> RewindView;
    processes_view::list_processes() -> Vec<ProcessRow>;
    processes_view::stop_process(process_id: String) -> bool;
    processes_view::keep_process(process_id: String, keep: bool) -> bool;
    call_images::call_images(tool_call_id: String) -> Vec<CallImage>;
    local_servers::model_setup() -> ModelSetup;
}
