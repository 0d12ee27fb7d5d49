//! `runs`: one row per run (task): an agent run, a CLI invocation, a UI console session.
//!
//! Version 4 makes a row an agent run when `status` is set (rows created only by tool calls keep
//! `status` NULL and are not listed as runs): provider, model, presentation, status, stage,
//! cumulative usage and counters, and `owner`, the instance id of the process running it (its
//! liveness is the instance's `flock`, see `recovery`).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::iso;
use crate::error::{Result, StoreError};
use crate::run_types::{RunEnd, RunListRow, RunRecord, RunStatus, Usage};

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

/// Version 4: agent-run columns. Existing rows (call groups) keep `status` NULL.
pub(crate) const MIGRATION_V4: &str = "
ALTER TABLE runs ADD COLUMN provider TEXT;
ALTER TABLE runs ADD COLUMN model TEXT;
ALTER TABLE runs ADD COLUMN presentation TEXT;
ALTER TABLE runs ADD COLUMN status TEXT CHECK (status IS NULL OR status IN
    ('running', 'completed', 'cancelled', 'error', 'max_steps', 'interrupted'));
ALTER TABLE runs ADD COLUMN stage TEXT CHECK (stage IS NULL OR stage IN ('Discovery',
    'Parameters', 'Authorization', 'Execution', 'Projection', 'Verification'));
ALTER TABLE runs ADD COLUMN error_message TEXT;
ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN tool_call_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN owner TEXT;
CREATE INDEX runs_listing ON runs(started_at DESC, run_id DESC) WHERE status IS NOT NULL;
CREATE INDEX runs_running ON runs(owner) WHERE status = 'running';
";

/// Version 5: call ids scoped to the run. A provider may reuse ids like `call_0` in every run, but
/// `tool_calls.tool_call_id` (and the blob and spool files named after it) is unique across runs:
/// runs created from version 5 on store each call under `<run_id>:<provider id>`
/// ([`crate::scoped_call_id`]) and give the model its own id back; existing runs keep the ids they
/// were stored with (`scoped_call_ids = 0`), so their data stays as it is.
pub(crate) const MIGRATION_V5: &str = "
ALTER TABLE runs ADD COLUMN scoped_call_ids INTEGER NOT NULL DEFAULT 0;
";

/// Version 8: why the model's last step stopped when a run ended on an answer the model did not
/// finish normally (`max_tokens`, `refusal`, `pause_turn`, or the provider's word); NULL otherwise
/// and for runs stored before.
pub(crate) const MIGRATION_V8: &str = "
ALTER TABLE runs ADD COLUMN stop_reason TEXT;
";

/// Version 12: subagent runs. A run started by a parent run's `agent` tool call names that run
/// and that call (the stored, run-scoped call id), and keeps its shape as the core gave it
/// (`child_shape`: opaque JSON, its tool set and system text, so a continued child keeps them);
/// NULL for every other run and for runs stored before. Listing a parent's children uses the
/// index.
pub(crate) const MIGRATION_V12: &str = "
ALTER TABLE runs ADD COLUMN parent_run_id TEXT REFERENCES runs(run_id) ON DELETE SET NULL;
ALTER TABLE runs ADD COLUMN parent_call_id TEXT;
ALTER TABLE runs ADD COLUMN child_shape TEXT;
CREATE INDEX runs_parent ON runs(parent_run_id) WHERE parent_run_id IS NOT NULL;
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

/// Fields of a new agent run.
pub struct Create<'a> {
    pub run_id: &'a str,
    pub project_id: Option<i64>,
    pub title: Option<&'a str>,
    pub provider: &'a str,
    pub model: &'a str,
    pub presentation: &'a str,
    pub owner: &'a str,
    /// `(parent run id, parent call id, shape)` of a subagent run.
    pub parent: Option<(&'a str, &'a str, Option<&'a str>)>,
}

/// Inserts a `running` agent run. Fails with `DuplicateRun` when the id exists.
pub fn create(conn: &Connection, c: &Create<'_>, now_ms: i64) -> Result<()> {
    let res = conn
        .prepare_cached(
            "INSERT INTO runs (run_id, project_id, title, started_at, provider, model,
                              presentation, status, owner, scoped_call_ids, parent_run_id,
                              parent_call_id, child_shape)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, 1, ?9, ?10, ?11)",
        )?
        .execute(params![
            c.run_id,
            c.project_id,
            c.title,
            now_ms,
            c.provider,
            c.model,
            c.presentation,
            c.owner,
            c.parent.map(|p| p.0),
            c.parent.map(|p| p.1),
            c.parent.and_then(|p| p.2)
        ]);
    match res {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Err(StoreError::DuplicateRun(c.run_id.to_string()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Adds to the run's counters and usage. Fails with `RunNotRunning` unless the run is `running`
/// and owned by `owner`, so nothing is appended to a run another process owns or that ended.
pub fn add_counters(
    conn: &Connection,
    run_id: &str,
    owner: &str,
    steps: i64,
    tool_calls: i64,
    usage: &Usage,
) -> Result<()> {
    let n = conn
        .prepare_cached(
            "UPDATE runs SET steps = steps + ?3, tool_call_count = tool_call_count + ?4,
                input_tokens = input_tokens + ?5, output_tokens = output_tokens + ?6,
                cache_read_tokens = cache_read_tokens + ?7,
                cache_write_tokens = cache_write_tokens + ?8
             WHERE run_id = ?1 AND status = 'running' AND owner = ?2",
        )?
        .execute(params![
            run_id,
            owner,
            steps,
            tool_calls,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ])?;
    if n == 1 {
        Ok(())
    } else {
        Err(not_running(conn, run_id)?)
    }
}

/// The error for a run that is missing or not running under this owner.
pub fn not_running(conn: &Connection, run_id: &str) -> Result<StoreError> {
    Ok(match status_and_owner(conn, run_id)? {
        None => StoreError::RunNotFound(run_id.to_string()),
        Some((status, _)) => StoreError::RunNotRunning {
            id: run_id.to_string(),
            status: status.unwrap_or_else(|| "a tool-call group".into()),
        },
    })
}

/// (status, owner) of a run.
pub fn status_and_owner(
    conn: &Connection,
    run_id: &str,
) -> Result<Option<(Option<String>, Option<String>)>> {
    Ok(conn
        .prepare_cached("SELECT status, owner FROM runs WHERE run_id = ?1")?
        .query_row([run_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Ends a running run owned by `owner`.
pub fn finish(
    conn: &Connection,
    run_id: &str,
    owner: &str,
    end: &RunEnd,
    now_ms: i64,
) -> Result<()> {
    let n = conn
        .prepare_cached(
            "UPDATE runs SET status = ?3, stage = ?4, error_message = ?5, finished_at = ?6,
                stop_reason = ?7
             WHERE run_id = ?1 AND status = 'running' AND owner = ?2",
        )?
        .execute(params![
            run_id,
            owner,
            end.status.as_str(),
            crate::stage_column::text(end.stage),
            end.error_message,
            now_ms,
            end.stop_reason
        ])?;
    if n == 1 {
        Ok(())
    } else {
        Err(not_running(conn, run_id)?)
    }
}

/// Takes over a run that is not running (or whose owner is dead: `owner_dead`) for `owner`.
pub fn take_over(conn: &Connection, run_id: &str, owner: &str, owner_dead: bool) -> Result<()> {
    let n = conn
        .prepare_cached(
            "UPDATE runs SET status = 'running', owner = ?2, stage = NULL, error_message = NULL,
                finished_at = NULL, stop_reason = NULL
             WHERE run_id = ?1 AND status IS NOT NULL AND (status != 'running' OR ?3)",
        )?
        .execute(params![run_id, owner, owner_dead])?;
    if n == 1 {
        Ok(())
    } else {
        Err(not_running(conn, run_id).map(|e| match e {
            StoreError::RunNotRunning { id, status } if status == "running" => {
                StoreError::RunBusy(id)
            }
            other => other,
        })?)
    }
}

pub fn set_title(conn: &Connection, run_id: &str, title: &str) -> Result<bool> {
    let n = conn
        .prepare_cached("UPDATE runs SET title = ?2 WHERE run_id = ?1")?
        .execute(params![run_id, title])?;
    Ok(n == 1)
}

/// Distinct owners of running runs.
pub fn running_owners(conn: &Connection) -> Result<Vec<Option<String>>> {
    let mut stmt =
        conn.prepare_cached("SELECT DISTINCT owner FROM runs WHERE status = 'running'")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Marks every running run of `owner` (a dead process) `interrupted`; returns their ids.
pub fn interrupt_of_owner(
    conn: &Connection,
    owner: Option<&str>,
    now_ms: i64,
) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE runs SET status = 'interrupted', finished_at = ?2
         WHERE status = 'running' AND owner IS ?1 RETURNING run_id",
    )?;
    let rows = stmt.query_map(params![owner, now_ms], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

const RECORD_COLUMNS: &str = "r.run_id, r.title, r.provider, r.model, r.presentation, r.status, \
     r.stage, r.error_message, r.started_at, r.finished_at, r.input_tokens, r.output_tokens, \
     r.cache_read_tokens, r.cache_write_tokens, r.steps, r.tool_call_count, p.root, r.owner";

fn parse_status(s: Option<String>) -> Result<Option<RunStatus>> {
    s.map(|s| {
        RunStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("unknown run status {s:?}")))
    })
    .transpose()
}

fn record_from_row(r: &Row<'_>) -> Result<RunRecord> {
    Ok(RunRecord {
        run_id: r.get(0)?,
        title: r.get(1)?,
        provider: r.get(2)?,
        model: r.get(3)?,
        presentation: r.get(4)?,
        status: parse_status(r.get(5)?)?,
        stage: crate::stage_column::read(r, 6)?,
        error_message: r.get(7)?,
        started_at: r.get(18)?,
        started_at_ms: r.get(8)?,
        finished_at_ms: r.get(9)?,
        usage: Usage {
            input_tokens: r.get(10)?,
            output_tokens: r.get(11)?,
            cache_read_tokens: r.get(12)?,
            cache_write_tokens: r.get(13)?,
        },
        steps: r.get(14)?,
        tool_calls: r.get(15)?,
        project_root: r.get(16)?,
        owner: r.get(17)?,
        scoped_call_ids: r.get(19)?,
        stop_reason: r.get(20)?,
        parent_run_id: r.get(21)?,
        parent_call_id: r.get(22)?,
        child_shape: r.get(23)?,
    })
}

pub fn get(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>> {
    let sql = format!(
        "SELECT {RECORD_COLUMNS}, {}, r.scoped_call_ids, r.stop_reason, r.parent_run_id,
                r.parent_call_id, r.child_shape FROM runs r
         LEFT JOIN projects p ON p.project_id = r.project_id WHERE r.run_id = ?1",
        iso!("r.started_at")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([run_id])?;
    match rows.next()? {
        Some(r) => Ok(Some(record_from_row(r)?)),
        None => Ok(None),
    }
}

/// Agent runs newest first; `before`: only runs older than this run (keyset pagination).
pub fn list(conn: &Connection, limit: usize, before: Option<&str>) -> Result<Vec<RunListRow>> {
    let cursor: Option<(i64, String)> = match before {
        None => None,
        Some(id) => Some(
            conn.prepare_cached("SELECT started_at, run_id FROM runs WHERE run_id = ?1")?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?
                .ok_or_else(|| StoreError::RunNotFound(id.to_string()))?,
        ),
    };
    let (at, id) = cursor.unwrap_or((i64::MAX, String::new()));
    let sql = format!(
        "SELECT run_id, title, provider, model, status, {}, started_at, steps, tool_call_count,
                parent_run_id, parent_call_id
         FROM runs WHERE status IS NOT NULL
           AND (?1 OR started_at < ?2 OR (started_at = ?2 AND run_id < ?3))
         ORDER BY started_at DESC, run_id DESC LIMIT ?4",
        iso!("started_at")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let limit = i64::try_from(limit.min(10_000)).unwrap_or(10_000);
    let mut rows = stmt.query(params![before.is_none(), at, id, limit])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let status: Option<String> = r.get(4)?;
        out.push(RunListRow {
            run_id: r.get(0)?,
            title: r.get(1)?,
            provider: r.get(2)?,
            model: r.get(3)?,
            status: parse_status(status)?
                .ok_or_else(|| StoreError::Corrupt("listed run without status".into()))?,
            started_at: r.get(5)?,
            started_at_ms: r.get(6)?,
            steps: r.get(7)?,
            tool_calls: r.get(8)?,
            parent_run_id: r.get(9)?,
            parent_call_id: r.get(10)?,
        });
    }
    Ok(out)
}

/// The subagent runs a run started, oldest first: `(run id, parent call id)`.
pub fn children(conn: &Connection, run_id: &str) -> Result<Vec<(String, Option<String>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT run_id, parent_call_id FROM runs WHERE parent_run_id = ?1
         ORDER BY started_at, run_id",
    )?;
    let rows = stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
