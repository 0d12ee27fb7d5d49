//! `hook_runs` (version 11): every run of a person's hook (the core's `crate::hooks`), kept with
//! its call (`tool_call_id`, for `pre_tool_call` / `post_tool_call`) or only with its run (run
//! events). The columns hold what queries need; `record` is the core's JSON of the run (command,
//! outcome, bounded stdout and stderr, decision, reason, note, problem), kept as given: the store
//! knows nothing of its meaning.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use crate::error::Result;

pub(crate) const MIGRATION_V11: &str = "
CREATE TABLE hook_runs (
    id            INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL,
    tool_call_id  TEXT,              -- NULL for run events (run_start, run_end, waiting_for_person)
    event         TEXT NOT NULL,
    outcome       TEXT NOT NULL,     -- ok | blocked | failed | timed_out | cancelled
    exit_code     INTEGER,           -- NULL: killed, timed out or never started
    duration_ms   INTEGER NOT NULL,
    record        TEXT NOT NULL,     -- JSON of the hook run (bounded output)
    recorded_at   INTEGER NOT NULL   -- unix ms
);
CREATE INDEX hook_runs_call ON hook_runs(tool_call_id, id);
CREATE INDEX hook_runs_run ON hook_runs(run_id, id);
";

/// One stored hook run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRunRow {
    pub run_id: String,
    pub tool_call_id: Option<String>,
    pub event: String,
    pub outcome: String,
    pub exit_code: Option<i64>,
    pub duration_ms: i64,
    /// The core's JSON of the run.
    pub record: serde_json::Value,
    pub recorded_at: i64,
}

pub fn insert(conn: &Connection, row: &HookRunRow) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO hook_runs (run_id, tool_call_id, event, outcome, exit_code, duration_ms,
             record, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        row.run_id,
        row.tool_call_id,
        row.event,
        row.outcome,
        row.exit_code,
        row.duration_ms,
        row.record.to_string(),
        row.recorded_at
    ])?;
    Ok(conn.last_insert_rowid())
}

const SELECT: &str = "SELECT run_id, tool_call_id, event, outcome, exit_code, duration_ms, record,
        recorded_at FROM hook_runs";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HookRunRow> {
    let text: String = r.get(6)?;
    Ok(HookRunRow {
        run_id: r.get(0)?,
        tool_call_id: r.get(1)?,
        event: r.get(2)?,
        outcome: r.get(3)?,
        exit_code: r.get(4)?,
        duration_ms: r.get(5)?,
        record: serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
        recorded_at: r.get(7)?,
    })
}

/// The hook runs of one call, in order.
pub fn for_call(conn: &Connection, call_id: &str) -> Result<Vec<HookRunRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE tool_call_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([call_id], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The hook runs of the calls named in `call_ids` (a JSON array of ids), in order.
pub fn for_calls(conn: &Connection, call_ids_json: &str) -> Result<Vec<HookRunRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE tool_call_id IN (SELECT value FROM json_each(?1)) ORDER BY id"
    ))?;
    let rows = stmt.query_map([call_ids_json], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every hook run of a run (its calls' and its own), in order.
pub fn for_run(conn: &Connection, run_id: &str) -> Result<Vec<HookRunRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE run_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([run_id], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
