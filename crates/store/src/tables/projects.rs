//! `projects`: one row per project folder a run worked in.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

pub(crate) const MIGRATION_V1: &str = "
CREATE TABLE projects (
    project_id  INTEGER PRIMARY KEY,
    root        TEXT NOT NULL UNIQUE,   -- canonical project folder path
    created_at  INTEGER NOT NULL        -- unix ms
);
";

/// The id of the project with this root, creating the row on first use.
pub fn ensure(conn: &Connection, root: &str, now_ms: i64) -> Result<i64> {
    if let Some(id) = conn
        .prepare_cached("SELECT project_id FROM projects WHERE root = ?1")?
        .query_row([root], |r| r.get(0))
        .optional()?
    {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO projects (root, created_at) VALUES (?1, ?2)")?
        .execute(params![root, now_ms])?;
    Ok(conn.last_insert_rowid())
}
