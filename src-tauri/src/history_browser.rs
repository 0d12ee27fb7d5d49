//! The history browser's commands: pages of every stored call of the open project (newest first,
//! filters, full-text search, keyset paging without limit), the filter choices, and one call's
//! detail (input, model and client projections, compaction state, raw output size). The raw output
//! itself is read in byte ranges by `raw_output` ([`crate::raw_output`]).
//!
//! Scope: the store is the data directory's, shared by every project opened with it; these
//! commands show the calls of the open project (its root as the core records it) and the calls
//! recorded without a project (the store's rule, `aibuddy_store::history_scope`). A switch of
//! project re-scopes them: each command reads the project open at that moment.

use aibuddy_store::{
    CallRecord, CallStatus, HistoryCursor, HistoryQuery, HistoryRow, Store, StoreError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tauri::State;
use ts_rs::TS;

use aibuddy::contract::Stage;

use crate::error::{CommandError, ErrorCode};
use crate::state::ShellState;

/// Rows per page when the UI gives no limit.
pub const DEFAULT_PAGE: usize = 200;
/// Longest target shown in a row (characters).
const TARGET_CHARS: usize = 200;

/// What the history browser asks for. Every field narrows; all optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct HistoryPageQuery {
    /// Any of these tools (empty: all).
    pub tools: Vec<String>,
    /// Any of these statuses: ok, error, cancelled, rejected, interrupted, running (empty: all).
    pub statuses: Vec<String>,
    /// Any of these failure stages (empty: all).
    pub stages: Vec<String>,
    pub run_id: Option<String>,
    /// Started at or after (unix ms).
    pub since_ms: Option<i64>,
    /// Started before (unix ms).
    pub until_ms: Option<i64>,
    /// Full text over tool name, target and input, display text and the model's text.
    pub search: Option<String>,
    /// Only calls that changed this project-relative path, or a path beneath it (their stored
    /// change set: `aibuddy_store::HistoryQuery::changed_path`).
    pub changed_path: Option<String>,
    /// Page size (default 200, at most 1000).
    pub limit: Option<u32>,
    /// The previous page's `next`: the page after it (older calls).
    pub cursor: Option<String>,
}

/// One call in the history list.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryItem {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    /// ok, error, cancelled, rejected, interrupted or running.
    pub status: String,
    pub stage: Option<Stage>,
    pub error_message: Option<String>,
    /// RFC 3339 UTC with milliseconds.
    pub started_at: String,
    pub duration_ms: Option<i64>,
    /// What the call acted on (command, path, query, ...), from its input; the model's text.
    pub target: Option<String>,
    /// none, pending, compacted, dropped, not_smaller or failed.
    pub compaction_state: String,
    /// Where an `execute` call ran when it was not this machine (`container 0123456789ab (image
    /// `debian:12`) on unix:///…`, the core's `call_sandbox`); absent for a local run and for
    /// other tools. The row's badge.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<String>,
}

/// One page and where the next (older) one starts; `next` is `null` at the oldest call.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryPageView {
    pub rows: Vec<HistoryItem>,
    pub next: Option<String>,
    /// Where the page's first (newest) row stands, `null` when it has none: the `since` of
    /// `history_head`, which counts the calls stored after it.
    pub head: Option<String>,
}

/// The probe of a list that stays current (`history_head`).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryHeadView {
    /// Calls matching the filters stored after `since` (all matching calls without one), at most
    /// 1000.
    pub newer: u32,
    /// The watched calls as stored now (a running call that finished has its status and
    /// duration); calls of another project and unknown ids are left out.
    pub rows: Vec<HistoryItem>,
}

/// The choices of the history filters.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryFacets {
    pub tools: Vec<String>,
    /// Run ids, newest first.
    pub runs: Vec<String>,
    pub statuses: Vec<String>,
    pub stages: Vec<Stage>,
}

/// One stored call in full, without its raw output (read by range).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct CallRecordView {
    pub item: HistoryItem,
    pub error_code: Option<String>,
    pub finished_at: Option<String>,
    /// The arguments as received.
    #[ts(type = "unknown")]
    pub input: Value,
    /// The exact text the model saw.
    pub model: Option<String>,
    /// The display projection.
    #[ts(type = "unknown")]
    pub client: Option<Value>,
    pub display_text: Option<String>,
    pub compaction_strategy: Option<String>,
    pub compaction_error: Option<String>,
    /// text, json or bytes (`null` for old rows or unfinished calls).
    pub raw_format: Option<String>,
    pub raw_total_bytes: u64,
    /// True when the raw output is what was spooled before the process died.
    pub raw_partial: bool,
    /// `execute` only: where the command ran when not on this machine (`container
    /// 0123456789ab (image `debian:12`) on unix:///…`); absent for a local run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<String>,
    /// `execute` in a container with `project: "sync"`: the project sync around it, as the
    /// run card shows it (the core's `call_sync`); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sync: Option<aibuddy::tools::execute::SyncView>,
}

/// The target of a call: the first of its input's usual target fields, one line, bounded. Pure.
pub fn target_of(input: &Value) -> Option<String> {
    const KEYS: [&str; 9] = [
        "command",
        "path",
        "file_path",
        "query",
        "pattern",
        "url",
        "name",
        "reference",
        "question",
    ];
    let text = KEYS.iter().find_map(|k| input.get(k)?.as_str())?;
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(TARGET_CHARS)
        .collect();
    Some(line)
}

fn item_of(r: HistoryRow) -> HistoryItem {
    HistoryItem {
        target: target_of(&r.input),
        sandbox: aibuddy::tools::execute::stored_call_sandbox(
            &r.tool,
            r.confinement_detail.as_deref(),
        ),
        tool_call_id: r.tool_call_id,
        run_id: r.run_id,
        tool: r.tool,
        status: r.status.as_str().to_string(),
        stage: r.stage,
        error_message: r.error_message,
        started_at: r.started_at,
        duration_ms: r.duration_ms,
        compaction_state: r.compaction_state.as_str().to_string(),
    }
}

/// The cursor as the UI carries it: `<started_at_ms>.<seq>`. Pure.
pub fn cursor_text(c: HistoryCursor) -> String {
    format!("{}.{}", c.started_at_ms, c.seq)
}

fn parse_cursor(text: &str) -> Result<HistoryCursor, CommandError> {
    let bad = || {
        CommandError::new(
            ErrorCode::Project,
            format!("not a history cursor: `{text}`"),
        )
    };
    let (t, s) = text.split_once('.').ok_or_else(bad)?;
    Ok(HistoryCursor {
        started_at_ms: t.parse().map_err(|_| bad())?,
        seq: s.parse().map_err(|_| bad())?,
    })
}

/// The store query for the UI's arguments within the project `project_root`; unknown statuses and
/// stages are typed errors. Pure.
pub fn query_of(q: HistoryPageQuery, project_root: &str) -> Result<HistoryQuery, CommandError> {
    let statuses = q
        .statuses
        .iter()
        .map(|s| {
            CallStatus::parse(s).ok_or_else(|| {
                CommandError::new(
                    ErrorCode::Project,
                    format!(
                        "unknown status `{s}` (expected one of: {})",
                        CallStatus::ALL.map(CallStatus::as_str).join(", ")
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let stages = q
        .stages
        .iter()
        .map(|s| {
            Stage::parse(s).ok_or_else(|| {
                CommandError::new(
                    ErrorCode::Project,
                    format!(
                        "unknown stage `{s}` (expected one of: {})",
                        Stage::ALL.map(Stage::as_str).join(", ")
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HistoryQuery {
        project_root: Some(project_root.to_string()),
        tools: q.tools,
        statuses,
        stages,
        run_id: q.run_id.filter(|r| !r.trim().is_empty()),
        since_ms: q.since_ms,
        until_ms: q.until_ms,
        search: q.search.filter(|s| !s.trim().is_empty()),
        changed_path: q.changed_path.filter(|s| !s.trim().is_empty()),
        limit: Some(q.limit.map_or(DEFAULT_PAGE, |l| l as usize)),
        after: q.cursor.as_deref().map(parse_cursor).transpose()?,
    })
}

pub(crate) fn store_error(error: StoreError) -> CommandError {
    match error {
        StoreError::CallNotFound(id) => CommandError::new(
            ErrorCode::Project,
            format!("no stored call has the id `{id}`"),
        ),
        other => CommandError::new(ErrorCode::Internal, format!("call store: {other}")),
    }
}

/// The open project's call store.
pub(crate) fn store_of(state: &ShellState) -> Result<Store, CommandError> {
    state
        .app()?
        .persistence
        .as_ref()
        .map(|p| p.store.clone())
        .ok_or_else(|| CommandError::new(ErrorCode::Project, "the call store is not open"))
}

/// The open project's call store and root (as the core records it on each call's run).
pub(crate) fn scope_of(state: &ShellState) -> Result<(Store, String), CommandError> {
    let root = state.app()?.project_root.display().to_string();
    Ok((store_of(state)?, root))
}

/// A stored call, or a typed "no such call".
pub(crate) async fn record(store: &Store, tool_call_id: &str) -> Result<CallRecord, CommandError> {
    store
        .get_call(tool_call_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| store_error(StoreError::CallNotFound(tool_call_id.to_string())))
}

/// Marks the calls left `running` by processes that died since the app opened the store
/// `interrupted` (`Store::recover_calls`: the owner's instance lock is free), so a list never shows
/// a dead process's call as running until the next start. True when one was marked. A failure is
/// logged: the calls are then shown as stored.
pub(crate) async fn recover_dead_calls(store: &Store) -> bool {
    match store.recover_calls().await {
        Ok(marked) => !marked.is_empty(),
        Err(e) => {
            tracing::warn!(error = %e, "could not check whether running calls are still alive");
            false
        }
    }
}

/// True when a row says `running` and recovery marked a call of a dead process: read again.
pub(crate) async fn recovered_any(
    store: &Store,
    mut statuses: impl Iterator<Item = CallStatus>,
) -> bool {
    statuses.any(|s| s == CallStatus::Running) && recover_dead_calls(store).await
}

/// One page of the calls of the project `project_root`, newest first.
pub async fn page(
    store: &Store,
    project_root: &str,
    q: HistoryPageQuery,
) -> Result<HistoryPageView, CommandError> {
    let query = query_of(q, project_root)?;
    let read = || async { store.history_page(query.clone()).await.map_err(store_error) };
    let mut page = read().await?;
    if recovered_any(store, page.rows.iter().map(|r| r.status)).await {
        page = read().await?;
    }
    Ok(HistoryPageView {
        rows: page.rows.into_iter().map(item_of).collect(),
        next: page.next.map(cursor_text),
        head: page.first.map(cursor_text),
    })
}

/// How many calls of the project `project_root` matching `q`'s filters were stored after `since`
/// (a page's `head`), and the rows of `watch` as they are now.
pub async fn head(
    store: &Store,
    project_root: &str,
    q: HistoryPageQuery,
    since: Option<&str>,
    watch: Vec<String>,
) -> Result<HistoryHeadView, CommandError> {
    let since = since.map(parse_cursor).transpose()?;
    let query = query_of(q, project_root)?;
    let read = || async {
        store
            .history_head(query.clone(), since, watch.clone())
            .await
            .map_err(store_error)
    };
    let mut head = read().await?;
    if recovered_any(store, head.rows.iter().map(|r| r.status)).await {
        head = read().await?;
    }
    Ok(HistoryHeadView {
        newer: u32::try_from(head.newer).unwrap_or(u32::MAX),
        rows: head.rows.into_iter().map(item_of).collect(),
    })
}

/// The filter choices of the project `project_root`: its tools and runs, statuses, stages.
pub async fn facets(store: &Store, project_root: &str) -> Result<HistoryFacets, CommandError> {
    let (tools, runs) = store
        .history_facets(Some(project_root.to_string()), 500)
        .await
        .map_err(store_error)?;
    Ok(HistoryFacets {
        tools,
        runs,
        statuses: CallStatus::ALL.map(|s| s.as_str().to_string()).to_vec(),
        stages: Stage::ALL.to_vec(),
    })
}

/// A call of another project is "no such call", as an unknown id is.
pub(crate) async fn ensure_visible(
    store: &Store,
    project_root: &str,
    tool_call_id: &str,
) -> Result<(), CommandError> {
    if store
        .call_visible_in(tool_call_id, project_root)
        .await
        .map_err(store_error)?
        != Some(true)
    {
        return Err(store_error(StoreError::CallNotFound(
            tool_call_id.to_string(),
        )));
    }
    Ok(())
}

/// One stored call of the project `project_root` in full, without its raw output; a call of
/// another project is "no such call", as an unknown id is.
pub async fn detail(
    store: &Store,
    project_root: &str,
    tool_call_id: &str,
) -> Result<CallRecordView, CommandError> {
    ensure_visible(store, project_root, tool_call_id).await?;
    let mut rec = record(store, tool_call_id).await?;
    if recovered_any(store, std::iter::once(rec.status)).await {
        rec = record(store, tool_call_id).await?;
    }
    let row = HistoryRow {
        tool_call_id: rec.tool_call_id.clone(),
        run_id: rec.run_id.clone(),
        tool: rec.tool.clone(),
        config: rec.config.clone(),
        status: rec.status,
        stage: rec.stage,
        error_message: rec.error_message.clone(),
        started_at: rec.started_at.clone(),
        started_at_ms: rec.started_at_ms,
        duration_ms: rec.duration_ms,
        input: rec.input.clone(),
        display_text: rec.display_text.clone(),
        compaction_state: rec.compaction_state,
        confinement_detail: rec
            .client_projection
            .as_ref()
            .and_then(|c| c.get(aibuddy::tools::execute::CONFINEMENT_DETAIL))
            .map(Value::to_string),
    };
    let item = item_of(row);
    let sandbox = item.sandbox.clone();
    let sync = rec
        .client_projection
        .as_ref()
        .and_then(|c| aibuddy::tools::execute::call_sync(&rec.tool, c));
    Ok(CallRecordView {
        item,
        error_code: rec.error_code,
        finished_at: rec.finished_at,
        input: rec.input,
        model: rec.model_projection,
        client: rec.client_projection,
        display_text: rec.display_text,
        compaction_strategy: rec.compaction_strategy,
        compaction_error: rec.compaction_error,
        raw_format: rec.raw_format.map(|f| f.as_str().to_string()),
        raw_total_bytes: rec
            .raw_output_len
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0),
        raw_partial: rec.raw_output_partial,
        sandbox,
        sync,
    })
}

/// One page of the open project's stored calls, newest first, narrowed by `query`; `next`
/// continues with older calls (keyset paging, no limit on how far back).
#[tauri::command]
pub async fn history_page(
    state: State<'_, ShellState>,
    query: Option<HistoryPageQuery>,
) -> Result<HistoryPageView, CommandError> {
    let (store, root) = scope_of(&state)?;
    page(&store, &root, query.unwrap_or_default()).await
}

/// The cheap probe the History tab polls while it is open: how many calls of the open project
/// matching `query`'s filters were stored after `since` (the shown page's `head`; by this window
/// or by any other process writing the data directory), and the current rows of `watch` (the
/// calls it shows as running, at most 200).
#[tauri::command]
pub async fn history_head(
    state: State<'_, ShellState>,
    query: Option<HistoryPageQuery>,
    since: Option<String>,
    watch: Option<Vec<String>>,
) -> Result<HistoryHeadView, CommandError> {
    let (store, root) = scope_of(&state)?;
    head(
        &store,
        &root,
        query.unwrap_or_default(),
        since.as_deref(),
        watch.unwrap_or_default(),
    )
    .await
}

/// The history filters' choices: tools and runs that occur in the open project, statuses, stages.
#[tauri::command]
pub async fn history_facets(state: State<'_, ShellState>) -> Result<HistoryFacets, CommandError> {
    let (store, root) = scope_of(&state)?;
    facets(&store, &root).await
}

/// One stored call of the open project in full (input, model and client projections, compaction,
/// raw output size).
#[tauri::command]
pub async fn call_record(
    state: State<'_, ShellState>,
    tool_call_id: String,
) -> Result<CallRecordView, CommandError> {
    let (store, root) = scope_of(&state)?;
    detail(&store, &root, &tool_call_id).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_target_is_the_first_usual_field_on_one_line() {
        assert_eq!(
            target_of(&json!({"command": "ls\n-la\u{1b}[2J", "path": "x"})),
            Some("ls -la [2J".into())
        );
        assert_eq!(
            target_of(&json!({"path": "src/a.rs"})),
            Some("src/a.rs".into())
        );
        assert_eq!(target_of(&json!({"other": 1})), None);
        assert_eq!(target_of(&json!("not an object")), None);
        let long = "y".repeat(1000);
        assert_eq!(
            target_of(&json!({ "query": long })).map(|t| t.chars().count()),
            Some(TARGET_CHARS)
        );
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_typed_errors() {
        let c = HistoryCursor {
            started_at_ms: 1_700_000_000_123,
            seq: 42,
        };
        assert_eq!(parse_cursor(&cursor_text(c)).unwrap(), c);
        for bad in ["", "12", "a.b", "1.2.3"] {
            assert_eq!(
                parse_cursor(bad).unwrap_err().code,
                ErrorCode::Project,
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_statuses_and_stages_are_refused_blank_text_ignored() {
        let q = query_of(
            HistoryPageQuery {
                statuses: vec!["interrupted".into()],
                stages: vec!["Execution".into()],
                search: Some("  ".into()),
                run_id: Some(String::new()),
                ..HistoryPageQuery::default()
            },
            "/p",
        )
        .unwrap();
        assert_eq!(q.project_root.as_deref(), Some("/p"));
        assert_eq!(q.statuses, vec![CallStatus::Interrupted]);
        assert_eq!(
            (q.search, q.run_id, q.limit),
            (None, None, Some(DEFAULT_PAGE))
        );
        let bad = query_of(
            HistoryPageQuery {
                statuses: vec!["bogus".into()],
                ..HistoryPageQuery::default()
            },
            "/p",
        );
        assert!(bad.unwrap_err().message.contains("bogus"));
        let bad = query_of(
            HistoryPageQuery {
                stages: vec!["Nowhere".into()],
                ..HistoryPageQuery::default()
            },
            "/p",
        );
        assert!(bad.unwrap_err().message.contains("Nowhere"));
    }
}
