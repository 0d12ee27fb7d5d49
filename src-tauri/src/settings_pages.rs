//! The settings pages: what the window shows of the settings files the CLI reads (both levels, as
//! written, with the problems `aibuddy tools check` prints), and the writes it may make through the
//! core (`aibuddy::settings_edit`: one key at a time, the rest of the file kept, atomic, trust
//! kept only when nothing else changed). Provider keys go to the OS keyring and never come back:
//! only whether one is set.
//!
//! The person is trusted, so the window may write either level; it may write only the keys the
//! core's settings field table marks editable ([`aibuddy::settings::FIELDS`], read by
//! [`editable`]), and shows only the keys it puts on a page. A user-only key (protected paths
//! removed) is refused at the project level by the core's edit. The window keeps the settings it
//! was opened with; a write applies when the project is opened again (the CLI reads it at its
//! next command).

use std::path::Path;

use aibuddy::host::provider_keys::{self, KeyState, key_state};
use aibuddy::settings::SettingsProblem;
use aibuddy::settings_edit::mcp_problem;
use aibuddy::settings_edit::{self as edit, ConfigFile, EditError, Level, Written};
use aibuddy::trust::{FileContent, TrustState};
use aibuddy_common::located;
use serde::Serialize;
use serde_json::Value;
use tauri::State;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// The paths of the four files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SettingsFiles {
    pub user_settings: String,
    pub project_settings: String,
    pub user_mcp: String,
    pub project_mcp: String,
}

/// One configured MCP server entry as written, at its level.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct McpServerEntry {
    pub name: String,
    pub level: Level,
    /// The entry as written (`command`, `args`, `env`, `url`, `headers`, ...).
    #[ts(type = "Record<string, unknown>")]
    pub entry: Value,
    /// A user entry replaced by a project entry of the same name.
    pub shadowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderKey {
    pub name: String,
    pub key: KeyState,
}

/// Everything the settings pages show.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct SettingsPages {
    pub files: SettingsFiles,
    /// The user `settings.json` as written, only the keys a page shows (`{}` when absent, `null`
    /// when it is not JSON).
    #[ts(type = "Record<string, unknown> | null")]
    pub user: Value,
    /// The project `.aibuddy/settings.json` as written.
    #[ts(type = "Record<string, unknown> | null")]
    pub project: Value,
    /// Problems of both settings files now, as `aibuddy tools check` prints them.
    pub problems: Vec<SettingsProblem>,
    pub mcp_servers: Vec<McpServerEntry>,
    /// Problems of both `mcp.json` files (field `mcpServers.<server>.<field>`).
    pub mcp_problems: Vec<SettingsProblem>,
    /// One per provider entry named at either level.
    pub provider_keys: Vec<ProviderKey>,
    /// The project's trust now (a project-level write keeps it only when it was trusted).
    pub trust: TrustState,
}

/// The answer to a write: what was written, or the located problems that refused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SettingsWrite {
    pub written: Option<Written>,
    /// Why the value was refused (nothing was written), located in the edited text.
    pub problems: Vec<SettingsProblem>,
}

/// The settings keys the pages may write (pure): `section.field` whose row in the core's field
/// table is editable (`providers.NAME` for any non-blank name).
pub fn editable(path: &[String]) -> bool {
    match path {
        [section, field] => {
            !field.trim().is_empty()
                && aibuddy::settings::fields::find(section, field).is_some_and(|f| f.editable)
        }
        _ => false,
    }
}

/// Whether the pages show `section.field`: its row in the core's field table names a page. Other
/// keys stay in the file and out of the window (`sandbox.daytona` / `sandbox.e2b` may hold keys).
fn shown(section: &str, field: &str) -> bool {
    aibuddy::settings::fields::find(section, field).is_some_and(|f| f.page.is_some())
}

fn as_json(content: &FileContent) -> Value {
    match content {
        FileContent::Absent => Value::Object(Default::default()),
        FileContent::Present(text) => {
            serde_json::from_str(located::strip_bom(text)).unwrap_or(Value::Null)
        }
        FileContent::Refused(_) => Value::Null,
    }
}

/// Only the keys of a settings file that a page shows ([`shown`]); a section that is not an object
/// is kept when a page shows some of its keys (its problem is on the page).
fn page_sections(mut file: Value) -> Value {
    if let Value::Object(map) = &mut file {
        map.retain(|section, value| match value {
            Value::Object(fields) => {
                fields.retain(|field, _| shown(section, field));
                !fields.is_empty()
            }
            _ => aibuddy::settings::fields::page_sections().contains(&section.as_str()),
        });
    }
    file
}

fn read_json(path: &Path) -> Value {
    match std::fs::read_to_string(path) {
        Ok(text) => as_json(&FileContent::Present(text)),
        Err(_) => as_json(&FileContent::Absent),
    }
}

fn servers_of(file: &Value, level: Level) -> Vec<McpServerEntry> {
    file.get("mcpServers")
        .and_then(Value::as_object)
        .map(|servers| {
            servers
                .iter()
                .map(|(name, entry)| McpServerEntry {
                    name: name.clone(),
                    level,
                    entry: entry.clone(),
                    shadowed: false,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Provider entry names at either level (not `default`), sorted, once each.
fn provider_names(files: &[&Value]) -> Vec<String> {
    let mut names: Vec<String> = files
        .iter()
        .filter_map(|f| f.get("providers").and_then(Value::as_object))
        .flat_map(|p| p.keys().cloned())
        .filter(|k| k != "default")
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Read both levels of both files now.
pub fn pages(project_root: &Path, data_dir: &Path) -> SettingsPages {
    let config = aibuddy::trust::load_project(project_root, data_dir);
    let root = config.status.project.clone();
    let root = Path::new(&root);
    let path = |f, l| edit::path_of(f, l, root, data_dir).display().to_string();
    let user = page_sections(read_json(&edit::path_of(
        ConfigFile::Settings,
        Level::User,
        root,
        data_dir,
    )));
    let project = page_sections(as_json(&config.snapshot.settings.content));
    let user_mcp = read_json(&edit::path_of(ConfigFile::Mcp, Level::User, root, data_dir));
    let project_mcp = as_json(&config.snapshot.mcp.content);
    let mut mcp_servers = servers_of(&project_mcp, Level::Project);
    let mut users = servers_of(&user_mcp, Level::User);
    for u in &mut users {
        u.shadowed = mcp_servers.iter().any(|p| p.name == u.name);
    }
    mcp_servers.extend(users);
    let loaded = aibuddy_mcp::load_server_configs(root, Some(data_dir));
    let provider_keys = provider_names(&[&user, &project])
        .into_iter()
        .map(|name| ProviderKey {
            key: key_state(&name),
            name,
        })
        .collect();
    SettingsPages {
        files: SettingsFiles {
            user_settings: path(ConfigFile::Settings, Level::User),
            project_settings: path(ConfigFile::Settings, Level::Project),
            user_mcp: path(ConfigFile::Mcp, Level::User),
            project_mcp: path(ConfigFile::Mcp, Level::Project),
        },
        user,
        project,
        problems: config.settings.problems,
        mcp_servers,
        mcp_problems: loaded.errors.iter().map(mcp_problem).collect(),
        provider_keys,
        trust: config.status.state,
    }
}

/// An edit's outcome for the UI: refused values are an answer (shown on the field), the rest
/// are typed errors naming their stage.
pub fn answer(result: Result<Written, EditError>) -> Result<SettingsWrite, CommandError> {
    match result {
        Ok(written) => Ok(SettingsWrite {
            written: Some(written),
            problems: Vec::new(),
        }),
        Err(EditError::Refused { problems }) => Ok(SettingsWrite {
            written: None,
            problems,
        }),
        Err(e) => Err(CommandError {
            code: ErrorCode::Project,
            stage: Some(e.stage()),
            message: e.to_string(),
        }),
    }
}

fn parameters(message: impl Into<String>) -> CommandError {
    CommandError {
        code: ErrorCode::Project,
        stage: Some(aibuddy::contract::Stage::Parameters),
        message: message.into(),
    }
}

/// Set or remove one of the [`editable`] keys.
pub fn set(
    project_root: &Path,
    data_dir: &Path,
    level: Level,
    path: &[String],
    value: Option<&Value>,
) -> Result<SettingsWrite, CommandError> {
    if !editable(path) {
        return Err(parameters(format!(
            "`{}` is not a field the settings pages edit",
            path.join(".")
        )));
    }
    let keys: Vec<&str> = path.iter().map(String::as_str).collect();
    answer(edit::set_setting(
        project_root,
        data_dir,
        level,
        &keys,
        value,
    ))
}

/// Whether `name` may name a keyring entry: what a provider entry name is in practice.
/// Stores `key` in the OS keyring for provider entry `name` (replacing any): the core's use case.
pub fn set_key(name: &str, key: &str) -> Result<KeyState, CommandError> {
    provider_keys::store_key(name, key).map_err(|e| CommandError::from_host(ErrorCode::Project, e))
}

/// Removes the keyring entry of provider `name`.
pub fn remove_key(name: &str) -> Result<KeyState, CommandError> {
    provider_keys::remove_key(name).map_err(|e| CommandError::from_host(ErrorCode::Project, e))
}

/// Both levels of both settings files, their problems, and which provider keys are set.
#[tauri::command]
pub async fn settings_pages(state: State<'_, ShellState>) -> Result<SettingsPages, CommandError> {
    let app = state.app()?;
    Ok(pages(&app.project_root, &app.data_dir))
}

/// Sets (`value`) or removes (no `value`) one settings key the pages edit, at `level`.
#[tauri::command]
pub async fn set_setting(
    state: State<'_, ShellState>,
    level: Level,
    path: Vec<String>,
    value: Option<Value>,
) -> Result<SettingsWrite, CommandError> {
    let app = state.app()?;
    set(
        &app.project_root,
        &app.data_dir,
        level,
        &path,
        value.as_ref(),
    )
}

/// Adds or replaces MCP server `name` at `level` (validated as the loader reads it).
#[tauri::command]
pub async fn put_mcp_server(
    state: State<'_, ShellState>,
    level: Level,
    name: String,
    entry: Value,
) -> Result<SettingsWrite, CommandError> {
    let app = state.app()?;
    answer(edit::put_mcp_server(
        &app.project_root,
        &app.data_dir,
        level,
        &name,
        &entry,
    ))
}

/// Removes MCP server `name` at `level`.
#[tauri::command]
pub async fn remove_mcp_server(
    state: State<'_, ShellState>,
    level: Level,
    name: String,
) -> Result<SettingsWrite, CommandError> {
    let app = state.app()?;
    answer(edit::remove_mcp_server(
        &app.project_root,
        &app.data_dir,
        level,
        &name,
    ))
}

/// Stores the key of provider entry `name` in the OS keyring; answers only whether one is set.
#[tauri::command]
pub async fn set_provider_key(name: String, key: String) -> Result<KeyState, CommandError> {
    set_key(&name, &key)
}

/// Removes the keyring key of provider entry `name`.
#[tauri::command]
pub async fn remove_provider_key(name: String) -> Result<KeyState, CommandError> {
    remove_key(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_the_pages_fields_are_editable() {
        assert!(editable(&p(&["providers", "local"])));
        assert!(editable(&p(&["exec", "network"])));
        assert!(editable(&p(&["exec", "max_processes"])));
        assert!(editable(&p(&["exec", "protected_paths"])));
        assert!(editable(&p(&["exec", "unprotected_paths"])));
        assert!(editable(&p(&["agent", "step_timeout_secs"])));
        assert!(editable(&p(&["agent", "keepalive_timeout_secs"])));
        assert!(editable(&p(&["agent", "idle_timeout_secs"])));
        assert!(!editable(&p(&["agent", "summary_model"])));
        assert!(editable(&p(&["confirm", "auto_approve_writes"])));
        assert!(!editable(&p(&["providers", " "])));
        assert!(!editable(&p(&["exec", "heartbeat_secs"])));
        assert!(!editable(&p(&["sandbox", "kind"])));
        assert!(!editable(&p(&["exec"])));
        assert!(!editable(&p(&["providers", "a", "model"])));
    }

    #[test]
    fn the_pages_get_only_the_keys_they_show() {
        let file = serde_json::json!({
            "exec": {"heartbeat_secs": 5, "network": false},
            "sandbox": {"e2b": {"api_key": "secret"}},
            "providers": {"default": "local", "local": {"model": "m"}},
            "agent": {"summary_model": "m2"},
            "confirm": 3,
            "tools": 3
        });
        assert_eq!(
            page_sections(file),
            serde_json::json!({
                "exec": {"network": false},
                "providers": {"default": "local", "local": {"model": "m"}},
                "confirm": 3
            })
        );
    }

    #[test]
    fn a_settings_file_starting_with_a_byte_order_mark_is_shown() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        std::fs::write(&path, "\u{feff}{\"exec\": {\"network\": false}}\n").unwrap();
        assert_eq!(
            read_json(&path),
            serde_json::json!({"exec": {"network": false}})
        );
    }
}
