//! `call_changes` (version 10): the checkpoints of a call that may change the project. The
//! before-snapshot is committed before the call runs (so a call whose process was killed can
//! still be rewound: its after-state is then the tree as found at rewind time); the
//! after-snapshot and the change set (JSON, `aibuddy_checkpoint::ChangeSet`) when it ends.
//! Snapshot ids name manifests in `<data_dir>/checkpoints/<project_key>/objects/`.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::error::Result;

pub(crate) const MIGRATION_V10: &str = "
CREATE TABLE call_changes (
    tool_call_id    TEXT PRIMARY KEY REFERENCES tool_calls(tool_call_id) ON DELETE CASCADE,
    project_key     TEXT NOT NULL,
    before_snapshot TEXT NOT NULL,
    after_snapshot  TEXT,              -- NULL while the call runs, or when its process died
    changes         TEXT,              -- JSON change set, with the after-snapshot
    rewind_of       TEXT,              -- for a rewind: the JSON list of the calls it put back
    started_at      INTEGER NOT NULL,  -- unix ms
    finished_at     INTEGER
);
";

/// A call's checkpoints as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallChanges {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    pub project_key: String,
    pub before_snapshot: String,
    pub after_snapshot: Option<String>,
    /// The change set as stored (JSON text), once the call ended.
    pub changes: Option<String>,
    pub rewind_of: Option<String>,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

pub fn insert_before(
    conn: &Connection,
    call_id: &str,
    project_key: &str,
    before: &str,
    now_ms: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO call_changes (tool_call_id, project_key, before_snapshot, started_at)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(tool_call_id) DO UPDATE SET project_key = ?2, before_snapshot = ?3,
             after_snapshot = NULL, changes = NULL, started_at = ?4, finished_at = NULL",
    )?
    .execute(params![call_id, project_key, before, now_ms])?;
    Ok(())
}

pub fn set_after(
    conn: &Connection,
    call_id: &str,
    after: &str,
    changes: &str,
    rewind_of: Option<&str>,
    now_ms: i64,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE call_changes SET after_snapshot = ?2, changes = ?3, rewind_of = ?4,
             finished_at = ?5 WHERE tool_call_id = ?1",
    )?
    .execute(params![call_id, after, changes, rewind_of, now_ms])?;
    Ok(())
}

const SELECT: &str = "SELECT c.tool_call_id, t.run_id, t.tool, c.project_key, c.before_snapshot,
        c.after_snapshot, c.changes, c.rewind_of, c.started_at, c.finished_at
     FROM call_changes c JOIN tool_calls t ON t.tool_call_id = c.tool_call_id";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CallChanges> {
    Ok(CallChanges {
        tool_call_id: r.get(0)?,
        run_id: r.get(1)?,
        tool: r.get(2)?,
        project_key: r.get(3)?,
        before_snapshot: r.get(4)?,
        after_snapshot: r.get(5)?,
        changes: r.get(6)?,
        rewind_of: r.get(7)?,
        started_at: r.get(8)?,
        finished_at: r.get(9)?,
    })
}

pub fn get(conn: &Connection, call_id: &str) -> Result<Option<CallChanges>> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE c.tool_call_id = ?1"))?
        .query_row([call_id], row)
        .optional()?)
}

/// The checkpointed calls of a run, oldest first.
pub fn of_run(conn: &Connection, run_id: &str) -> Result<Vec<CallChanges>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE t.run_id = ?1 ORDER BY t.seq"))?;
    let rows = stmt.query_map([run_id], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
