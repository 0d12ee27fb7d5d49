//! `confirm_decisions`: every confirm request (target, scope, expected consequence recorded BEFORE
//! the effect) and the person's decision. A decision is bound to one call and one action digest;
//! nothing here is consulted as permission for a later action.
//!
//! No foreign key to `tool_calls`: the request is recorded during authorization, which a pipeline
//! may run before the call row is written.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::types::{ConfirmRecord, Decision};

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE confirm_decisions (
    decision_id  INTEGER PRIMARY KEY,
    tool_call_id TEXT NOT NULL,
    run_id       TEXT,
    digest       TEXT NOT NULL,
    target       TEXT NOT NULL,
    scope        TEXT NOT NULL,
    consequence  TEXT NOT NULL,
    decision     TEXT NOT NULL CHECK (decision IN ('pending', 'approved', 'rejected', 'cancelled')),
    requested_at INTEGER NOT NULL,
    decided_at   INTEGER
);
CREATE INDEX confirm_decisions_call ON confirm_decisions(tool_call_id);
";

/// Version 4: per-run reading in order (context rebuild).
pub(crate) const MIGRATION_V4: &str = "
CREATE INDEX confirm_decisions_run ON confirm_decisions(run_id, decision_id);
";

/// Version 9: decisions made without asking by the person's standing policy (approval mode or
/// rule), with the reason.
pub(crate) const MIGRATION_V9: &str = "
ALTER TABLE confirm_decisions ADD COLUMN policy TEXT;
";

/// Records a request (normally with decision `pending`); returns its id.
pub fn insert(conn: &Connection, rec: &ConfirmRecord) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO confirm_decisions
         (tool_call_id, run_id, digest, target, scope, consequence, decision, requested_at, decided_at, policy)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        rec.tool_call_id,
        rec.run_id,
        rec.digest,
        rec.target,
        rec.scope,
        rec.consequence,
        rec.decision.as_str(),
        rec.requested_at_ms,
        rec.decided_at_ms,
        rec.policy
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Sets the decision of a pending request. Returns false when it was not pending.
pub fn decide(
    conn: &Connection,
    decision_id: i64,
    decision: Decision,
    now_ms: i64,
) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE confirm_decisions SET decision = ?2, decided_at = ?3
             WHERE decision_id = ?1 AND decision = 'pending'",
        )?
        .execute(params![decision_id, decision.as_str(), now_ms])?;
    Ok(n == 1)
}

/// All requests of one call, oldest first.
pub fn for_call(conn: &Connection, tool_call_id: &str) -> Result<Vec<ConfirmRecord>> {
    query(
        conn,
        "SELECT tool_call_id, run_id, digest, target, scope, consequence, decision, requested_at, decided_at, policy
         FROM confirm_decisions WHERE tool_call_id = ?1 ORDER BY decision_id",
        tool_call_id,
    )
}

/// The run's decided requests (never `pending`, never a policy's: the model is told only what
/// the person answered), in the order they were decided. A request
/// recorded without a run id belongs to the run of its call.
pub fn decided_for_run(conn: &Connection, run_id: &str) -> Result<Vec<ConfirmRecord>> {
    query(
        conn,
        "SELECT tool_call_id, run_id, digest, target, scope, consequence, decision, requested_at, decided_at, policy
         FROM confirm_decisions
         WHERE (run_id = ?1 OR (run_id IS NULL AND tool_call_id IN
                    (SELECT tool_call_id FROM tool_calls WHERE run_id = ?1)))
           AND decision != 'pending' AND policy IS NULL
         ORDER BY COALESCE(decided_at, requested_at), decision_id",
        run_id,
    )
}

fn query(conn: &Connection, sql: &str, key: &str) -> Result<Vec<ConfirmRecord>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([key], |r| {
        Ok((
            ConfirmRecord {
                tool_call_id: r.get(0)?,
                run_id: r.get(1)?,
                digest: r.get(2)?,
                target: r.get(3)?,
                scope: r.get(4)?,
                consequence: r.get(5)?,
                decision: Decision::Pending,
                requested_at_ms: r.get(7)?,
                decided_at_ms: r.get(8)?,
                policy: r.get(9)?,
            },
            r.get::<_, String>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (mut rec, decision) = row?;
        rec.decision = Decision::parse(&decision)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown decision {decision:?}")))?;
        out.push(rec);
    }
    Ok(out)
}

/// The decision of one request.
pub fn get_decision(conn: &Connection, decision_id: i64) -> Result<Option<Decision>> {
    let d: Option<String> = conn
        .prepare_cached("SELECT decision FROM confirm_decisions WHERE decision_id = ?1")?
        .query_row([decision_id], |r| r.get(0))
        .optional()?;
    d.map(|d| {
        Decision::parse(&d).ok_or_else(|| StoreError::Corrupt(format!("unknown decision {d:?}")))
    })
    .transpose()
}
