//! `messages`: the conversation of a run, in order (`seq`, 1-based per run).
//!
//! Version 4: `content` is the provider's JSON text kept byte-identical, `provider_kind` names
//! the wire format that produced it, usage per message, and the tool-call links:
//! - `message_tool_calls`: the calls an assistant message requested (id, tool name, position);
//! - a `tool` message names one call (`tool_call_id`); its result stays in `tool_calls`.
//!
//! No foreign key from either link to `tool_calls`: a call is requested before its row exists,
//! and a call the process never started (killed first) has no row until `resume_run` answers it.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::run_types::{
    LinkedResult, MessageRecord, MessageRole, NewMessage, RequestedCall, Usage,
};
use crate::types::{CallStatus, CompactionState};

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

pub(crate) const MIGRATION_V4: &str = "
ALTER TABLE messages ADD COLUMN provider_kind TEXT;
ALTER TABLE messages ADD COLUMN tool_call_id TEXT;    -- role 'tool': the call answered
ALTER TABLE messages ADD COLUMN input_tokens INTEGER; -- usage: NULL when none was reported
ALTER TABLE messages ADD COLUMN output_tokens INTEGER;
ALTER TABLE messages ADD COLUMN cache_read_tokens INTEGER;
ALTER TABLE messages ADD COLUMN cache_write_tokens INTEGER;
CREATE UNIQUE INDEX messages_result ON messages(run_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;
CREATE TABLE message_tool_calls (
    message_id   TEXT NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,      -- 0-based order within the message
    run_id       TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool         TEXT NOT NULL,
    PRIMARY KEY (message_id, position),
    UNIQUE (run_id, tool_call_id)
);
";

/// Appends a message at the end of the run's conversation; returns its sequence number.
/// The caller validated the message (`conversation::check_append`).
pub fn append(
    conn: &Connection,
    message_id: &str,
    run_id: &str,
    msg: &NewMessage,
    now_ms: i64,
) -> Result<i64> {
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE run_id = ?1")?
        .query_row([run_id], |r| r.get(0))?;
    let u = msg.usage;
    conn.prepare_cached(
        "INSERT INTO messages (message_id, run_id, seq, role, content, created_at, provider_kind,
             tool_call_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        message_id,
        run_id,
        seq,
        msg.role.as_str(),
        msg.content,
        now_ms,
        msg.provider_kind,
        msg.tool_call_id,
        u.map(|u| u.input_tokens),
        u.map(|u| u.output_tokens),
        u.map(|u| u.cache_read_tokens),
        u.map(|u| u.cache_write_tokens),
    ])?;
    let mut link = conn.prepare_cached(
        "INSERT INTO message_tool_calls (message_id, position, run_id, tool_call_id, tool)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (pos, call) in msg.requested_calls.iter().enumerate() {
        link.execute(params![
            message_id,
            i64::try_from(pos).unwrap_or(i64::MAX),
            run_id,
            call.tool_call_id,
            call.tool
        ])?;
    }
    Ok(seq)
}

/// Whether an assistant message of the run requested this call id.
pub fn is_requested(conn: &Connection, run_id: &str, tool_call_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM message_tool_calls WHERE run_id = ?1 AND tool_call_id = ?2")?
        .query_row([run_id, tool_call_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Whether the run already has a result message for this call id.
pub fn is_answered(conn: &Connection, run_id: &str, tool_call_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM messages WHERE run_id = ?1 AND tool_call_id = ?2")?
        .query_row([run_id, tool_call_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Requested calls of the run that have no result message yet, in request order.
pub fn dangling(conn: &Connection, run_id: &str) -> Result<Vec<RequestedCall>> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.tool_call_id, c.tool FROM message_tool_calls c
         JOIN messages m ON m.message_id = c.message_id
         WHERE c.run_id = ?1 AND NOT EXISTS
             (SELECT 1 FROM messages r WHERE r.run_id = ?1 AND r.tool_call_id = c.tool_call_id)
         ORDER BY m.seq, c.position",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok(RequestedCall {
            tool_call_id: r.get(0)?,
            tool: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn requested_by_message(
    conn: &Connection,
    run_id: &str,
) -> Result<HashMap<String, Vec<RequestedCall>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT message_id, tool_call_id, tool FROM message_tool_calls
         WHERE run_id = ?1 ORDER BY message_id, position",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            RequestedCall {
                tool_call_id: r.get(1)?,
                tool: r.get(2)?,
            },
        ))
    })?;
    let mut out: HashMap<String, Vec<RequestedCall>> = HashMap::new();
    for row in rows {
        let (mid, call) = row?;
        out.entry(mid).or_default().push(call);
    }
    Ok(out)
}

fn usage(cols: [Option<i64>; 4]) -> Option<Usage> {
    if cols.iter().all(Option::is_none) {
        return None;
    }
    Some(Usage {
        input_tokens: cols[0].unwrap_or(0),
        output_tokens: cols[1].unwrap_or(0),
        cache_read_tokens: cols[2].unwrap_or(0),
        cache_write_tokens: cols[3].unwrap_or(0),
    })
}

/// The run's messages in order, with requested calls and linked results.
pub fn list(conn: &Connection, run_id: &str) -> Result<Vec<MessageRecord>> {
    let mut requested = requested_by_message(conn, run_id)?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT m.message_id, m.seq, m.role, m.content, m.created_at, m.provider_kind,
                m.tool_call_id, m.input_tokens, m.output_tokens, m.cache_read_tokens,
                m.cache_write_tokens,
                c.tool, c.status, c.stage, c.error_message, c.model_projection, c.compaction_state,
                CASE WHEN json_valid(c.client_projection)
                     THEN json_extract(c.client_projection, '$.model_images') END,
                {CONFINEMENT_DETAIL},
                CASE WHEN json_valid(c.client_projection)
                     THEN CASE WHEN json_type(c.client_projection, '$.sync') = 'object'
                     THEN json_extract(c.client_projection, '$.sync') END END
         FROM messages m
         LEFT JOIN tool_calls c ON c.tool_call_id = m.tool_call_id AND c.run_id = m.run_id
         WHERE m.run_id = ?1 ORDER BY m.seq",
        CONFINEMENT_DETAIL = crate::tables::tool_calls::CONFINEMENT_DETAIL_COLUMN,
    ))?;
    let mut rows = stmt.query([run_id])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let message_id: String = r.get(0)?;
        let role: String = r.get(2)?;
        let role = MessageRole::parse(&role)
            .ok_or_else(|| StoreError::Corrupt(format!("message {message_id} role {role:?}")))?;
        let result = match r.get::<_, Option<String>>(11)? {
            None => None,
            Some(tool) => {
                let status: String = r.get(12)?;
                let compaction: String = r.get(16)?;
                Some(LinkedResult {
                    tool,
                    status: CallStatus::parse(&status)
                        .ok_or_else(|| StoreError::Corrupt(format!("call status {status:?}")))?,
                    stage: crate::stage_column::read(r, 13)?,
                    error_message: r.get(14)?,
                    model_projection: r.get(15)?,
                    compaction_state: CompactionState::parse(&compaction).ok_or_else(|| {
                        StoreError::Corrupt(format!("compaction state {compaction:?}"))
                    })?,
                    model_images: r.get(17)?,
                    confinement_detail: r.get(18)?,
                    sync: r.get(19)?,
                })
            }
        };
        out.push(MessageRecord {
            requested_calls: requested.remove(&message_id).unwrap_or_default(),
            run_id: run_id.to_string(),
            seq: r.get(1)?,
            role,
            content: r.get(3)?,
            created_at_ms: r.get(4)?,
            provider_kind: r.get(5)?,
            tool_call_id: r.get(6)?,
            usage: usage([r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?]),
            result,
            message_id,
        });
    }
    Ok(out)
}
