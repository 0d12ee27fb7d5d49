//! `summaries` (version 4): conversation compaction. A summary replaces the messages
//! `covers_from..=covers_to` of its run in the next requests; the originals stay in `messages`.
//! A later summary whose range contains an earlier one supersedes it (`conversation::effective`).

use rusqlite::{Connection, params};

use crate::error::Result;
use crate::run_types::{NewSummary, SummaryRecord, Usage};

pub(crate) const MIGRATION_V4: &str = "
CREATE TABLE summaries (
    summary_id         INTEGER PRIMARY KEY,
    run_id             TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    covers_from        INTEGER NOT NULL,   -- first message seq replaced
    covers_to          INTEGER NOT NULL,   -- last message seq replaced
    text               TEXT NOT NULL,
    provider_kind      TEXT,
    model              TEXT,
    input_tokens       INTEGER,
    output_tokens      INTEGER,
    cache_read_tokens  INTEGER,
    cache_write_tokens INTEGER,
    created_at         INTEGER NOT NULL,
    CHECK (covers_from >= 1 AND covers_to >= covers_from)
);
CREATE INDEX summaries_run ON summaries(run_id, summary_id);
";

pub fn insert(conn: &Connection, run_id: &str, s: &NewSummary, now_ms: i64) -> Result<i64> {
    let u = s.usage;
    conn.prepare_cached(
        "INSERT INTO summaries (run_id, covers_from, covers_to, text, provider_kind, model,
             input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        run_id,
        s.covers_from,
        s.covers_to,
        s.text,
        s.provider_kind,
        s.model,
        u.map(|u| u.input_tokens),
        u.map(|u| u.output_tokens),
        u.map(|u| u.cache_read_tokens),
        u.map(|u| u.cache_write_tokens),
        now_ms
    ])?;
    Ok(conn.last_insert_rowid())
}

/// The run's summaries, oldest first.
pub fn list(conn: &Connection, run_id: &str) -> Result<Vec<SummaryRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT summary_id, covers_from, covers_to, text, provider_kind, model, input_tokens,
                output_tokens, cache_read_tokens, cache_write_tokens, created_at
         FROM summaries WHERE run_id = ?1 ORDER BY summary_id",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        let cols: [Option<i64>; 4] = [r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?];
        Ok(SummaryRecord {
            summary_id: r.get(0)?,
            run_id: run_id.to_string(),
            covers_from: r.get(1)?,
            covers_to: r.get(2)?,
            text: r.get(3)?,
            provider_kind: r.get(4)?,
            model: r.get(5)?,
            usage: (!cols.iter().all(Option::is_none)).then(|| Usage {
                input_tokens: cols[0].unwrap_or(0),
                output_tokens: cols[1].unwrap_or(0),
                cache_read_tokens: cols[2].unwrap_or(0),
                cache_write_tokens: cols[3].unwrap_or(0),
            }),
            created_at_ms: r.get(10)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
