//! `runs`: one row per run (task): an agent run, a CLI invocation, a UI console session.

use rusqlite::{Connection, params};

use crate::error::Result;

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE runs (
    run_id      TEXT PRIMARY KEY,
    project_id  INTEGER REFERENCES projects(project_id) ON DELETE SET NULL,
    title       TEXT,
    started_at  INTEGER NOT NULL,       -- unix ms
    finished_at INTEGER
);
CREATE INDEX runs_project ON runs(project_id);
";

/// Creates the run row if it does not exist yet (the first call of a run creates it).
pub fn ensure(conn: &Connection, run_id: &str, project_id: Option<i64>, now_ms: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO runs (run_id, project_id, started_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (run_id) DO UPDATE SET project_id = COALESCE(runs.project_id, excluded.project_id)",
    )?
    .execute(params![run_id, project_id, now_ms])?;
    Ok(())
}

/// Sets the run's finish time.
pub fn finish(conn: &Connection, run_id: &str, now_ms: i64) -> Result<bool> {
    let n = conn
        .prepare_cached("UPDATE runs SET finished_at = ?2 WHERE run_id = ?1")?
        .execute(params![run_id, now_ms])?;
    Ok(n == 1)
}
