//! The history browser's query: every call of the store, newest first by `(started_at, seq)`,
//! narrowed by tool, status, stage, run, a time range and full-text search, paged backward without
//! limit by a keyset cursor (never `OFFSET`, so the 1,000th page costs what the first does).
//!
//! Full-text search is the FTS5 index `tool_calls_fts`; schema version 6 (`tables::search`, beside
//! the index it rebuilds) adds the model's text as a fourth column and the `(started_at, seq)`
//! index the ordering walks.

use rusqlite::{Connection, params_from_iter, types::Value};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::history_scope::{self, Scope};
use crate::store::Store;
use crate::tables::search::fts_query;
use crate::tables::tool_calls::input_json;
use crate::types::{CallStatus, CompactionState, HistoryRow};

/// The most rows one page holds.
pub const MAX_PAGE: usize = 1000;

/// Where the next (older) page starts: the last row of the previous page. Opaque to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryCursor {
    pub started_at_ms: i64,
    pub seq: i64,
}

/// What the history browser asks for; every field narrows. Results are newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryQuery {
    /// Whose calls: `None` every project's; `Some(root)` the calls of the project with this root
    /// (as recorded: the canonical path) and the calls recorded without a project
    /// ([`crate::history_scope`]).
    pub project_root: Option<String>,
    /// Any of these tools (empty: every tool).
    pub tools: Vec<String>,
    /// Any of these statuses (empty: every status).
    pub statuses: Vec<CallStatus>,
    /// Any of these failure stages, as stored (`Execution`, ...; empty: any or none).
    pub stages: Vec<aibuddy_common::Stage>,
    pub run_id: Option<String>,
    /// Started at or after this time (unix ms).
    pub since_ms: Option<i64>,
    /// Started before this time (unix ms).
    pub until_ms: Option<i64>,
    /// Full-text search over tool name, input (target included), display text and model text:
    /// every word must match as a token prefix; FTS syntax is treated as plain words.
    pub search: Option<String>,
    /// Only calls whose stored change set (`call_changes`) touched this project-relative path, or
    /// a path beneath it when it names a folder: added, modified, deleted, renamed to or from, or
    /// changed but not checkpointed. `./` and a trailing `/` are ignored. A call that never
    /// finished has no stored change set and does not match.
    pub changed_path: Option<String>,
    /// Page size (capped at [`MAX_PAGE`]; `None` = 100).
    pub limit: Option<usize>,
    /// Only calls older than this cursor (the previous page's `next`).
    pub after: Option<HistoryCursor>,
}

/// One page of history and where the next begins (`None` at the oldest call).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    pub rows: Vec<HistoryRow>,
    pub next: Option<HistoryCursor>,
    /// Where the page's first (newest) row stands: what [`history_head`] counts newer calls from.
    pub first: Option<HistoryCursor>,
}

/// The columns of a history row, as [`row_of`] reads them.
const ROW_COLUMNS: &str = concat!(
    "c.tool_call_id, c.run_id, c.tool, c.config, c.status, c.stage, \
     c.error_message, strftime('%Y-%m-%dT%H:%M:%fZ', c.started_at / 1000.0, 'unixepoch'), \
     c.started_at, c.duration_ms, c.input, c.display_text, c.compaction_state, c.seq, ",
    confinement_detail_column!()
);

/// The conditions of `q`'s filters within `scope` (its cursor and limit left out) and their
/// arguments, the scope first so the project index leads. Pure.
fn filters(q: &HistoryQuery, scope: Scope) -> (Vec<String>, Vec<Value>) {
    let mut conds: Vec<String> = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    let mut arg = |v: Value| {
        args.push(v);
        format!("?{}", args.len())
    };
    if let Some(c) = scope.condition(|id| arg(Value::Integer(id))) {
        conds.push(c);
    }
    if let Some(m) = q.search.as_deref().and_then(fts_query) {
        conds.push(format!(
            "c.seq IN (SELECT rowid FROM tool_calls_fts WHERE tool_calls_fts MATCH {})",
            arg(Value::Text(m))
        ));
    }
    let mut any_of = |col: &str, values: Vec<String>, conds: &mut Vec<String>| {
        if !values.is_empty() {
            let marks: Vec<String> = values.into_iter().map(|v| arg(Value::Text(v))).collect();
            conds.push(format!("{col} IN ({})", marks.join(", ")));
        }
    };
    any_of("c.tool", q.tools.clone(), &mut conds);
    any_of(
        "c.status",
        q.statuses.iter().map(|s| s.as_str().to_string()).collect(),
        &mut conds,
    );
    any_of(
        "c.stage",
        q.stages.iter().map(|s| s.as_str().to_string()).collect(),
        &mut conds,
    );
    if let Some(run) = &q.run_id {
        conds.push(format!("c.run_id = {}", arg(Value::Text(run.clone()))));
    }
    if let Some(p) = q.changed_path.as_deref().and_then(changed_path_arg) {
        conds.push(changed_path_condition(&arg(Value::Text(p))));
    }
    if let Some(t) = q.since_ms {
        conds.push(format!("c.started_at >= {}", arg(Value::Integer(t))));
    }
    if let Some(t) = q.until_ms {
        conds.push(format!("c.started_at < {}", arg(Value::Integer(t))));
    }
    (conds, args)
}

/// The path a `changed_path` filter compares: without `./` and trailing `/`; `None` when blank.
/// Pure.
fn changed_path_arg(p: &str) -> Option<String> {
    let mut p = p.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let p = p.trim_end_matches('/');
    (!p.is_empty() && p != ".").then(|| p.to_string())
}

/// The condition "the call's change set touched `mark` or a path beneath it", over the JSON
/// change set stored in `call_changes` (`files[].path`, `files[].from`, `skipped[].path`).
/// Compared with `=` and `substr`, never `LIKE`, so `%` and `_` in a path are plain characters.
/// Pure.
fn changed_path_condition(mark: &str) -> String {
    let hit = |col: &str| {
        format!("({col} = {mark} OR substr({col}, 1, length({mark}) + 1) = {mark} || '/')")
    };
    let path = "json_extract(f.value, '$.path')";
    let from = "json_extract(f.value, '$.from')";
    format!(
        "c.tool_call_id IN (\
         SELECT k.tool_call_id FROM call_changes k, json_each(k.changes, '$.files') f \
         WHERE k.changes IS NOT NULL AND ({} OR {}) \
         UNION SELECT k.tool_call_id FROM call_changes k, json_each(k.changes, '$.skipped') f \
         WHERE k.changes IS NOT NULL AND {})",
        hit(path),
        hit(from),
        hit(path)
    )
}

/// `conds` and'ed into a `WHERE` clause ("" when there is none). Pure.
fn where_of(conds: &[String]) -> String {
    if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    }
}

/// The keyset condition `(started_at, seq) <op> cursor`, its arguments appended. Pure.
fn keyset(c: HistoryCursor, op: &str, args: &mut Vec<Value>) -> String {
    args.push(Value::Integer(c.started_at_ms));
    args.push(Value::Integer(c.seq));
    format!(
        "(c.started_at, c.seq) {op} (?{}, ?{})",
        args.len() - 1,
        args.len()
    )
}

/// The SQL and its arguments for `q` within `scope`. Pure (tested without a database).
fn plan(q: &HistoryQuery, scope: Scope) -> (String, Vec<Value>, usize) {
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let (mut conds, mut args) = filters(q, scope);
    if let Some(c) = q.after {
        conds.push(keyset(c, "<", &mut args));
    }
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM tool_calls c {} ORDER BY c.started_at DESC, c.seq DESC LIMIT {}",
        where_of(&conds),
        limit + 1
    );
    (sql, args, limit)
}

/// One row as [`ROW_COLUMNS`] selects it, and its keyset position.
fn row_of(r: &rusqlite::Row<'_>) -> Result<(HistoryRow, HistoryCursor)> {
    let status: String = r.get(4)?;
    let compaction: String = r.get(12)?;
    let started_at_ms: i64 = r.get(8)?;
    let row = HistoryRow {
        tool_call_id: r.get(0)?,
        run_id: r.get(1)?,
        tool: r.get(2)?,
        config: r.get(3)?,
        status: CallStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown status {status:?}")))?,
        stage: crate::stage_column::read(r, 5)?,
        error_message: r.get(6)?,
        started_at: r.get(7)?,
        started_at_ms,
        duration_ms: r.get(9)?,
        input: input_json(r.get(10)?),
        display_text: r.get(11)?,
        compaction_state: CompactionState::parse(&compaction).ok_or_else(|| {
            StoreError::Corrupt(format!("unknown compaction state {compaction:?}"))
        })?,
        confinement_detail: r.get(14)?,
    };
    Ok((
        row,
        HistoryCursor {
            started_at_ms,
            seq: r.get(13)?,
        },
    ))
}

/// One page of calls, newest first.
pub fn history_page(conn: &Connection, q: &HistoryQuery) -> Result<HistoryPage> {
    let scope = history_scope::resolve(conn, q.project_root.as_deref())?;
    let (sql, args, limit) = plan(q, scope);
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(args))?;
    let mut out = Vec::new();
    let mut first: Option<HistoryCursor> = None;
    let mut last: Option<HistoryCursor> = None;
    let mut more = false;
    while let Some(r) = rows.next()? {
        if out.len() == limit {
            more = true;
            break;
        }
        let (row, at) = row_of(r)?;
        out.push(row);
        first.get_or_insert(at);
        last = Some(at);
    }
    Ok(HistoryPage {
        rows: out,
        next: if more { last } else { None },
        first,
    })
}

/// The most newer calls [`history_head`] counts.
pub const MAX_NEWER: usize = 1000;

/// What [`history_head`] finds: how many calls matching the filters are newer than the list's
/// newest, and the current rows of the calls the list watches.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryHead {
    /// Calls newer than `since` (every matching call when there is no `since`), at most
    /// [`MAX_NEWER`].
    pub newer: usize,
    /// The watched calls as stored now (those the scope sees; unknown ids left out).
    pub rows: Vec<HistoryRow>,
}

/// The most calls one [`history_head`] watches.
pub const MAX_WATCH: usize = 200;

/// The cheap probe of a list that stays current: how many calls matching `q`'s filters (its cursor
/// and limit ignored) are newer than `since` (the list's newest row, [`HistoryPage::first`]),
/// counted by one bounded walk of the ordering index, and the rows of `watch` (calls the list
/// shows as running; at most [`MAX_WATCH`]) as they are now, within the same scope.
pub fn history_head(
    conn: &Connection,
    q: &HistoryQuery,
    since: Option<HistoryCursor>,
    watch: &[String],
) -> Result<HistoryHead> {
    let scope = history_scope::resolve(conn, q.project_root.as_deref())?;
    let (mut conds, mut args) = filters(q, scope);
    if let Some(c) = since {
        conds.push(keyset(c, ">", &mut args));
    }
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM tool_calls c {} LIMIT {MAX_NEWER})",
        where_of(&conds)
    );
    let newer: i64 = conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(args), |r| r.get(0))?;
    let watch = &watch[..watch.len().min(MAX_WATCH)];
    let mut rows = Vec::new();
    if !watch.is_empty() {
        let mut args: Vec<Value> = Vec::new();
        let mut conds: Vec<String> = Vec::new();
        if let Some(c) = scope.condition(|id| {
            args.push(Value::Integer(id));
            format!("?{}", args.len())
        }) {
            conds.push(c);
        }
        let marks: Vec<String> = watch
            .iter()
            .map(|id| {
                args.push(Value::Text(id.clone()));
                format!("?{}", args.len())
            })
            .collect();
        conds.push(format!("c.tool_call_id IN ({})", marks.join(", ")));
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM tool_calls c {} ORDER BY c.started_at DESC, c.seq DESC",
            where_of(&conds)
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut found = stmt.query(params_from_iter(args))?;
        while let Some(r) = found.next()? {
            rows.push(row_of(r)?.0);
        }
    }
    Ok(HistoryHead {
        newer: usize::try_from(newer).unwrap_or(0),
        rows,
    })
}

/// The distinct tool names and run ids of the calls `project_root` sees (`None`: every call;
/// see [`HistoryQuery::project_root`]), the filters' choices, newest run first, each list capped
/// at `limit`.
pub fn history_facets(
    conn: &Connection,
    project_root: Option<&str>,
    limit: usize,
) -> Result<(Vec<String>, Vec<String>)> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut args: Vec<Value> = vec![Value::Integer(limit)];
    let scope = history_scope::resolve(conn, project_root)?.condition(|id| {
        args.push(Value::Integer(id));
        format!("?{}", args.len())
    });
    let where_ = scope.map(|c| format!("WHERE {c}")).unwrap_or_default();
    let tools = conn
        .prepare_cached(&format!(
            "SELECT DISTINCT c.tool FROM tool_calls c {where_} ORDER BY c.tool LIMIT ?1"
        ))?
        .query_map(params_from_iter(args.iter()), |r| r.get(0))?
        .collect::<std::result::Result<Vec<String>, _>>()?;
    let runs = conn
        .prepare_cached(&format!(
            "SELECT c.run_id FROM tool_calls c {where_} GROUP BY c.run_id \
             ORDER BY max(c.started_at) DESC, max(c.seq) DESC LIMIT ?1"
        ))?
        .query_map(params_from_iter(args.iter()), |r| r.get(0))?
        .collect::<std::result::Result<Vec<String>, _>>()?;
    Ok((tools, runs))
}

impl Store {
    /// One page of the history browser (see [`HistoryQuery`]).
    pub async fn history_page(&self, q: HistoryQuery) -> Result<HistoryPage> {
        self.read(move |conn, _| history_page(conn, &q)).await
    }

    /// The probe of a list that stays current (see [`history_head`]).
    pub async fn history_head(
        &self,
        q: HistoryQuery,
        since: Option<HistoryCursor>,
        watch: Vec<String>,
    ) -> Result<HistoryHead> {
        self.read(move |conn, _| history_head(conn, &q, since, &watch))
            .await
    }

    /// The tools and runs that occur in the calls `project_root` sees (filter choices), at most
    /// `limit` each.
    pub async fn history_facets(
        &self,
        project_root: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Vec<String>)> {
        self.read(move |conn, _| history_facets(conn, project_root.as_deref(), limit))
            .await
    }

    /// Whether call `tool_call_id` is shown under the project `project_root` (it belongs to that
    /// project or to none); `None` when no such call is stored.
    pub async fn call_visible_in(
        &self,
        tool_call_id: &str,
        project_root: &str,
    ) -> Result<Option<bool>> {
        let (id, root) = (tool_call_id.to_string(), project_root.to_string());
        self.read(move |conn, _| history_scope::call_visible(conn, &id, &root))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_pages_by_keyset_never_offset() {
        let (sql, args, limit) = plan(
            &HistoryQuery {
                after: Some(HistoryCursor {
                    started_at_ms: 5,
                    seq: 9,
                }),
                statuses: vec![CallStatus::Interrupted, CallStatus::Error],
                stages: vec![aibuddy_common::Stage::Execution],
                search: Some("cargo test".into()),
                limit: Some(50_000),
                ..HistoryQuery::default()
            },
            Scope::All,
        );
        assert_eq!(limit, MAX_PAGE);
        assert!(!sql.contains("OFFSET"), "{sql}");
        assert!(sql.contains("(c.started_at, c.seq) < ("), "{sql}");
        assert!(sql.contains("ORDER BY c.started_at DESC, c.seq DESC"));
        assert!(sql.contains("c.status IN (?2, ?3)"), "{sql}");
        assert_eq!(args.len(), 6);
        assert_eq!(args[0], Value::Text("\"cargo\"* \"test\"*".into()));
    }

    #[test]
    fn blank_search_adds_no_condition() {
        let (sql, args, limit) = plan(
            &HistoryQuery {
                search: Some("   ".into()),
                ..HistoryQuery::default()
            },
            Scope::All,
        );
        assert!(!sql.contains("WHERE"), "{sql}");
        assert!(args.is_empty());
        assert_eq!(limit, 100);
    }

    #[test]
    fn a_project_scope_is_the_first_condition_so_the_project_index_leads() {
        let (sql, args, _) = plan(
            &HistoryQuery {
                tools: vec!["execute".into()],
                ..HistoryQuery::default()
            },
            Scope::Project {
                id: Some(7),
                unattributed: false,
            },
        );
        assert!(
            sql.contains("WHERE c.project_id = ?1 AND c.tool IN (?2)"),
            "{sql}"
        );
        assert_eq!(args[0], Value::Integer(7));
    }
}
