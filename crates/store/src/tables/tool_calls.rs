//! `tool_calls`: one row per call, written `running` before execution and finished after.
//!
//! `seq` is the stable rowid (insertion order, newest first = highest `seq`, and the FTS key);
//! `tool_call_id` is the public id. Raw output is inline (`raw_output` BLOB) up to
//! `blobs::INLINE_LIMIT` bytes, else in `raw_output_file` (see `blobs`); never both.

use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter, types::Value};

use super::iso;
use crate::error::{Result, StoreError};
use crate::types::{
    CallFinish, CallRecord, CallStart, CallStatus, CompactionState, HistoryFilter, HistoryRow,
    RawFormat, RawOutputLocation,
};

/// Where call `c` ran, as a column (see `confinement_detail_column!` in `lib.rs`).
pub(crate) const CONFINEMENT_DETAIL_COLUMN: &str = confinement_detail_column!();

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE tool_calls (
    seq                 INTEGER PRIMARY KEY,
    tool_call_id        TEXT NOT NULL UNIQUE,
    run_id              TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    tool                TEXT NOT NULL,
    config              TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN
                            ('running', 'ok', 'error', 'cancelled', 'rejected', 'interrupted')),
    stage               TEXT CHECK (stage IS NULL OR stage IN ('Discovery', 'Parameters',
                            'Authorization', 'Execution', 'Projection', 'Verification')),
    error_code          TEXT,
    error_message       TEXT,
    started_at          INTEGER NOT NULL,   -- unix ms
    finished_at         INTEGER,
    duration_ms         INTEGER,
    input               TEXT NOT NULL,      -- raw arguments as received
    raw_output          BLOB,               -- inline raw output (<= 64 KiB)
    raw_output_file     TEXT,               -- else: path relative to the data dir
    raw_output_len      INTEGER,
    raw_output_partial  INTEGER NOT NULL DEFAULT 0 CHECK (raw_output_partial IN (0, 1)),
    model_projection    TEXT,
    client_projection   TEXT,               -- JSON
    display_text        TEXT,
    recovery_pointer    TEXT,               -- compacted_outputs/<run>/<id>.json, relative
    compaction_state    TEXT NOT NULL DEFAULT 'none' CHECK (compaction_state IN
                            ('none', 'pending', 'compacted', 'dropped', 'not_smaller', 'failed')),
    compaction_strategy TEXT,
    compaction_error    TEXT,
    owner               TEXT,               -- instance id of the process that ran the call
    CHECK (raw_output IS NULL OR raw_output_file IS NULL)
);
CREATE INDEX tool_calls_run ON tool_calls(run_id);
CREATE INDEX tool_calls_tool ON tool_calls(tool);
CREATE INDEX tool_calls_status ON tool_calls(status);
";

/// Version 3: how raw bytes relate to the tool's result, and the structured result when the raw
/// bytes are a spooled stream. Rows from earlier versions keep NULL (unknown format).
pub(crate) const MIGRATION_V3: &str = "
ALTER TABLE tool_calls ADD COLUMN raw_output_format TEXT
    CHECK (raw_output_format IS NULL OR raw_output_format IN ('text', 'json', 'bytes'));
ALTER TABLE tool_calls ADD COLUMN output_json TEXT;
";

/// How `finish` stores the raw output (decided by `blobs::StoredOutput`).
#[derive(Debug, Clone, Copy)]
pub enum OutputRef<'a> {
    Inline(&'a [u8]),
    File { rel_path: &'a str, len: u64 },
}

/// Inserts the `running` row. Fails with `DuplicateCall` when the id exists.
pub fn insert_start(conn: &Connection, start: &CallStart, owner: &str, now_ms: i64) -> Result<()> {
    let started = start.started_at_ms.unwrap_or(now_ms);
    let res = conn
        .prepare_cached(
            "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input, owner)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
        )?
        .execute(params![
            start.tool_call_id,
            start.run_id,
            start.tool,
            start.config,
            started,
            start.input,
            owner
        ]);
    match res {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
        {
            Err(StoreError::DuplicateCall(start.tool_call_id.clone()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Finishes a running call. Fails with `NotRunning`/`CallNotFound` when it is not running.
pub fn finish(
    conn: &Connection,
    fin: &CallFinish,
    output: OutputRef<'_>,
    now_ms: i64,
) -> Result<()> {
    let finished = fin.finished_at_ms.unwrap_or(now_ms);
    let (inline, file, len): (Option<&[u8]>, Option<&str>, i64) = match output {
        OutputRef::Inline(b) => (Some(b), None, len_i64(b.len() as u64)),
        OutputRef::File { rel_path, len } => (None, Some(rel_path), len_i64(len)),
    };
    let client = fin.client_projection.as_ref().map(|v| v.to_string());
    let n = conn
        .prepare_cached(
            "UPDATE tool_calls SET status = ?2, stage = ?3, error_code = ?4, error_message = ?5,
                finished_at = ?6, duration_ms = MAX(0, ?6 - started_at),
                raw_output = ?7, raw_output_file = ?8, raw_output_len = ?9, raw_output_partial = 0,
                model_projection = ?10, client_projection = ?11, display_text = ?12,
                raw_output_format = ?13, output_json = ?14
             WHERE tool_call_id = ?1 AND status = 'running'",
        )?
        .execute(params![
            fin.tool_call_id,
            fin.status.as_str(),
            crate::stage_column::text(fin.stage),
            fin.error_code,
            fin.error_message,
            finished,
            inline,
            file,
            len,
            fin.model_projection,
            client,
            fin.display_text,
            fin.raw_format.as_str(),
            fin.output_json.as_ref().map(|v| v.to_string()),
        ])?;
    if n == 1 {
        return Ok(());
    }
    match status_of(conn, &fin.tool_call_id)? {
        None => Err(StoreError::CallNotFound(fin.tool_call_id.clone())),
        Some(s) => Err(StoreError::NotRunning {
            id: fin.tool_call_id.clone(),
            status: s,
        }),
    }
}

fn len_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The status text of a call.
pub fn status_of(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT status FROM tool_calls WHERE tool_call_id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Owners (process instance ids) that still have `running` calls or `pending` compactions.
pub fn running_owners(conn: &Connection) -> Result<Vec<Option<String>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT owner FROM tool_calls
         WHERE status = 'running' OR compaction_state = 'pending'",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Running calls of one (dead) owner.
pub fn running_of_owner(conn: &Connection, owner: Option<&str>) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool_call_id FROM tool_calls WHERE status = 'running' AND owner IS ?1",
    )?;
    let rows = stmt.query_map([owner], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Compactions a dead owner left `pending` become `failed` (the original projection stays).
pub fn fail_pending_compactions(conn: &Connection, owner: Option<&str>) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE tool_calls SET compaction_state = 'failed',
                compaction_error = 'the process ended before precompaction finished'
             WHERE compaction_state = 'pending' AND owner IS ?1",
        )?
        .execute([owner])?)
}

/// Marks a running call `interrupted` (Execution stage), attaching the partial output if any.
pub fn interrupt(
    conn: &Connection,
    id: &str,
    partial: Option<OutputRef<'_>>,
    now_ms: i64,
) -> Result<bool> {
    let (inline, file, len, is_partial): (Option<&[u8]>, Option<&str>, Option<i64>, bool) =
        match partial {
            None => (None, None, None, false),
            Some(OutputRef::Inline(b)) => (Some(b), None, Some(len_i64(b.len() as u64)), true),
            Some(OutputRef::File { rel_path, len }) => {
                (None, Some(rel_path), Some(len_i64(len)), true)
            }
        };
    let n = conn
        .prepare_cached(
            "UPDATE tool_calls SET status = 'interrupted', stage = 'Execution',
                error_code = 'interrupted',
                error_message = 'the process running this call ended before it finished',
                finished_at = ?2, duration_ms = MAX(0, ?2 - started_at),
                raw_output = ?3, raw_output_file = ?4, raw_output_len = ?5, raw_output_partial = ?6,
                raw_output_format = 'bytes'
             WHERE tool_call_id = ?1 AND status = 'running'",
        )?
        .execute(params![id, now_ms, inline, file, len, is_partial])?;
    Ok(n == 1)
}

const RECORD_COLUMNS: &str = concat!(
    "tool_call_id, run_id, tool, config, status, stage, error_code, error_message, ",
    iso!("started_at"),
    ", started_at, ",
    iso!("finished_at"),
    ", finished_at, duration_ms, input, raw_output_len, raw_output_file, raw_output IS NOT NULL, \
     raw_output_partial, model_projection, client_projection, display_text, recovery_pointer, \
     compaction_state, compaction_strategy, compaction_error, raw_output_format, output_json"
);

fn parse_status(s: String) -> Result<CallStatus> {
    CallStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("unknown status {s:?}")))
}

fn parse_compaction(s: String) -> Result<CompactionState> {
    CompactionState::parse(&s)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown compaction state {s:?}")))
}

/// Raw input as JSON: parsed when it parses, else the text itself as a JSON string.
pub fn input_json(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

fn record_from_row(r: &Row<'_>) -> Result<CallRecord> {
    let raw_file: Option<String> = r.get(15)?;
    let has_inline: bool = r.get(16)?;
    let client: Option<String> = r.get(19)?;
    Ok(CallRecord {
        tool_call_id: r.get(0)?,
        run_id: r.get(1)?,
        tool: r.get(2)?,
        config: r.get(3)?,
        status: parse_status(r.get(4)?)?,
        stage: crate::stage_column::read(r, 5)?,
        error_code: r.get(6)?,
        error_message: r.get(7)?,
        started_at: r.get(8)?,
        started_at_ms: r.get(9)?,
        finished_at: r.get(10)?,
        finished_at_ms: r.get(11)?,
        duration_ms: r.get(12)?,
        input: input_json(r.get(13)?),
        raw_output_len: r.get(14)?,
        raw_output: match (raw_file, has_inline) {
            (Some(path), _) => RawOutputLocation::File { path },
            (None, true) => RawOutputLocation::Inline,
            (None, false) => RawOutputLocation::None,
        },
        raw_output_partial: r.get(17)?,
        model_projection: r.get(18)?,
        client_projection: client
            .map(|c| serde_json::from_str(&c))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("client projection: {e}")))?,
        display_text: r.get(20)?,
        recovery_pointer: r.get(21)?,
        compaction_state: parse_compaction(r.get(22)?)?,
        compaction_strategy: r.get(23)?,
        compaction_error: r.get(24)?,
        raw_format: r
            .get::<_, Option<String>>(25)?
            .map(|f| {
                RawFormat::parse(&f).ok_or_else(|| StoreError::Corrupt(format!("raw format {f:?}")))
            })
            .transpose()?,
        output_json: r
            .get::<_, Option<String>>(26)?
            .map(|j| serde_json::from_str(&j))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("output_json: {e}")))?,
    })
}

/// One call by id.
pub fn get(conn: &Connection, id: &str) -> Result<Option<CallRecord>> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM tool_calls WHERE tool_call_id = ?1");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([id])?;
    match rows.next()? {
        Some(r) => Ok(Some(record_from_row(r)?)),
        None => Ok(None),
    }
}

/// The inline raw output bytes `[offset, offset+limit)` (or `None` when not inline).
pub fn inline_slice(
    conn: &Connection,
    id: &str,
    offset: u64,
    limit: u64,
) -> Result<Option<Vec<u8>>> {
    // substr on a BLOB counts bytes, 1-based.
    Ok(conn
        .prepare_cached(
            "SELECT substr(raw_output, ?2, ?3) FROM tool_calls
             WHERE tool_call_id = ?1 AND raw_output IS NOT NULL",
        )?
        .query_row(
            params![id, len_i64(offset).saturating_add(1), len_i64(limit)],
            |r| r.get::<_, Option<Vec<u8>>>(0),
        )
        .optional()?
        .map(|b| b.unwrap_or_default()))
}

/// Page of calls, newest first, narrowed by `filter`.
pub fn history(conn: &Connection, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
    let limit = filter.limit.unwrap_or(50).min(10_000);
    let mut conds: Vec<String> = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    let mut arg = |v: Value| {
        args.push(v);
        format!("?{}", args.len())
    };
    let search = filter.search.as_deref().and_then(super::search::fts_query);
    let from = if let Some(q) = search {
        conds.push(format!("tool_calls_fts MATCH {}", arg(Value::Text(q))));
        "tool_calls_fts f JOIN tool_calls c ON c.seq = f.rowid"
    } else {
        "tool_calls c"
    };
    // With search, FTS5 yields rowids in descending order itself: order by f.rowid.
    let key = if filter.search.is_some() && from.starts_with("tool_calls_fts") {
        "f.rowid"
    } else {
        "c.seq"
    };
    if let Some(run) = &filter.run_id {
        conds.push(format!("c.run_id = {}", arg(Value::Text(run.clone()))));
    }
    if let Some(tool) = &filter.tool {
        conds.push(format!("c.tool = {}", arg(Value::Text(tool.clone()))));
    }
    if let Some(st) = filter.status {
        conds.push(format!(
            "c.status = {}",
            arg(Value::Text(st.as_str().into()))
        ));
    }
    if let Some(before) = &filter.before {
        let Some(seq) = seq_of(conn, before)? else {
            return Err(StoreError::CallNotFound(before.clone()));
        };
        conds.push(format!("{key} < {}", arg(Value::Integer(seq))));
    }
    let where_ = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    let sql = format!(
        "SELECT c.tool_call_id, c.run_id, c.tool, c.config, c.status, c.stage, c.error_message, {}, \
         c.started_at, c.duration_ms, c.input, c.display_text, c.compaction_state, {} \
         FROM {from} {where_} ORDER BY {key} DESC LIMIT {limit}",
        iso!("c.started_at"),
        CONFINEMENT_DETAIL_COLUMN,
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(args))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(HistoryRow {
            tool_call_id: r.get(0)?,
            run_id: r.get(1)?,
            tool: r.get(2)?,
            config: r.get(3)?,
            status: parse_status(r.get(4)?)?,
            stage: crate::stage_column::read(r, 5)?,
            error_message: r.get(6)?,
            started_at: r.get(7)?,
            started_at_ms: r.get(8)?,
            duration_ms: r.get(9)?,
            input: input_json(r.get(10)?),
            display_text: r.get(11)?,
            compaction_state: parse_compaction(r.get(12)?)?,
            confinement_detail: r.get(13)?,
        });
    }
    Ok(out)
}

fn seq_of(conn: &Connection, id: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT seq FROM tool_calls WHERE tool_call_id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Sets the compaction state (and error / strategy) without touching the projection.
pub fn set_compaction(
    conn: &Connection,
    id: &str,
    state: CompactionState,
    strategy: Option<&str>,
    error: Option<&str>,
) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE tool_calls SET compaction_state = ?2,
                compaction_strategy = COALESCE(?3, compaction_strategy), compaction_error = ?4
             WHERE tool_call_id = ?1",
        )?
        .execute(params![id, state.as_str(), strategy, error])?;
    Ok(n == 1)
}

/// Replaces the model projection with `compacted` only when it is strictly smaller (in bytes)
/// than the stored one. Returns whether it was replaced; when not, the state becomes `not_smaller`.
pub fn replace_model_projection(
    conn: &Connection,
    id: &str,
    compacted: &str,
    state: CompactionState,
    strategy: &str,
    recovery_pointer: Option<&str>,
) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE tool_calls SET model_projection = ?2, compaction_state = ?3,
                compaction_strategy = ?4, recovery_pointer = ?5, compaction_error = NULL
             WHERE tool_call_id = ?1 AND model_projection IS NOT NULL
               AND length(CAST(?2 AS BLOB)) < length(CAST(model_projection AS BLOB))",
        )?
        .execute(params![
            id,
            compacted,
            state.as_str(),
            strategy,
            recovery_pointer
        ])?;
    if n == 1 {
        return Ok(true);
    }
    if status_of(conn, id)?.is_none() {
        return Err(StoreError::CallNotFound(id.to_string()));
    }
    set_compaction(conn, id, CompactionState::NotSmaller, Some(strategy), None)?;
    Ok(false)
}

/// The project root of the run a call belongs to (`None` when the run has no project).
pub fn project_root_of(conn: &Connection, id: &str) -> Result<Option<Option<String>>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.root FROM tool_calls c JOIN runs r ON r.run_id = c.run_id
             LEFT JOIN projects p ON p.project_id = r.project_id
             WHERE c.tool_call_id = ?1",
        )?
        .query_row([id], |r| r.get::<_, Option<String>>(0))
        .optional()?)
}

/// Every raw-output file path referenced from a row (for orphan clean-up).
pub fn referenced_files(conn: &Connection) -> Result<std::collections::HashSet<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT raw_output_file FROM tool_calls WHERE raw_output_file IS NOT NULL",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
