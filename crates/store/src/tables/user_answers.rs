//! `user_answers`: answers the person gave to `ask_user_question`.

use rusqlite::{Connection, params};

use crate::error::{Result, StoreError};
use crate::types::UserAnswer;

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE user_answers (
    answer_id    INTEGER PRIMARY KEY,
    tool_call_id TEXT NOT NULL,
    run_id       TEXT,
    question     TEXT NOT NULL,         -- JSON
    answer       TEXT NOT NULL,         -- JSON
    answered_at  INTEGER NOT NULL
);
CREATE INDEX user_answers_call ON user_answers(tool_call_id);
";

/// Version 4: per-run reading in order (context rebuild).
pub(crate) const MIGRATION_V4: &str = "
CREATE INDEX user_answers_run ON user_answers(run_id, answered_at, answer_id);
";

pub fn insert(conn: &Connection, a: &UserAnswer) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO user_answers (tool_call_id, run_id, question, answer, answered_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        a.tool_call_id,
        a.run_id,
        a.question.to_string(),
        a.answer.to_string(),
        a.answered_at_ms
    ])?;
    Ok(conn.last_insert_rowid())
}

pub fn for_call(conn: &Connection, tool_call_id: &str) -> Result<Vec<UserAnswer>> {
    query(
        conn,
        "SELECT tool_call_id, run_id, question, answer, answered_at FROM user_answers
         WHERE tool_call_id = ?1 ORDER BY answer_id",
        tool_call_id,
    )
}

/// The run's answers in the order they were given.
pub fn for_run(conn: &Connection, run_id: &str) -> Result<Vec<UserAnswer>> {
    query(
        conn,
        "SELECT tool_call_id, run_id, question, answer, answered_at FROM user_answers
         WHERE run_id = ?1 ORDER BY answered_at, answer_id",
        run_id,
    )
}

fn query(conn: &Connection, sql: &str, key: &str) -> Result<Vec<UserAnswer>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([key], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (tool_call_id, run_id, q, a, answered_at_ms) = row?;
        let parse = |s: &str| {
            serde_json::from_str(s)
                .map_err(|e| StoreError::Corrupt(format!("user answer of {tool_call_id}: {e}")))
        };
        out.push(UserAnswer {
            question: parse(&q)?,
            answer: parse(&a)?,
            tool_call_id: tool_call_id.clone(),
            run_id,
            answered_at_ms,
        });
    }
    Ok(out)
}
