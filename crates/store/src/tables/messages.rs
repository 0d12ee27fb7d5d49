//! `messages`: the conversation of a run, in order (content is provider-neutral JSON).

use rusqlite::{Connection, params};

use crate::error::{Result, StoreError};
use crate::types::MessageRecord;

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE messages (
    message_id  TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,       -- 1-based order within the run
    role        TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content     TEXT NOT NULL,          -- JSON
    created_at  INTEGER NOT NULL,
    UNIQUE (run_id, seq)
);
";

/// Appends a message at the end of the run's conversation; returns its sequence number.
pub fn append(
    conn: &Connection,
    message_id: &str,
    run_id: &str,
    role: &str,
    content: &serde_json::Value,
    now_ms: i64,
) -> Result<i64> {
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE run_id = ?1")?
        .query_row([run_id], |r| r.get(0))?;
    conn.prepare_cached(
        "INSERT INTO messages (message_id, run_id, seq, role, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        message_id,
        run_id,
        seq,
        role,
        content.to_string(),
        now_ms
    ])?;
    Ok(seq)
}

/// The run's messages in order.
pub fn list(conn: &Connection, run_id: &str) -> Result<Vec<MessageRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT message_id, run_id, seq, role, content, created_at FROM messages
         WHERE run_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, i64>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (message_id, run_id, seq, role, content, created_at_ms) = row?;
        let content = serde_json::from_str(&content)
            .map_err(|e| StoreError::Corrupt(format!("message {message_id} content: {e}")))?;
        out.push(MessageRecord {
            message_id,
            run_id,
            seq,
            role,
            content,
            created_at_ms,
        });
    }
    Ok(out)
}
