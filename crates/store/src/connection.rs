//! Opening SQLite connections with the store's settings.
//!
//! - `journal_mode = WAL`: readers never block the writer and vice versa.
//! - `synchronous = NORMAL` by default: a commit survives the process being killed (it is in the
//!   WAL, in the OS page cache). The writer switches to `FULL` for batches that finish a call or
//!   record a decision, so those also survive power loss (see `writer`).
//! - `foreign_keys = ON`, `busy_timeout = 5 s` (another aibuddy process may hold the write lock).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Result;

pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the writer connection (creates the file).
pub fn open_writer(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    Ok(conn)
}

/// Opens a read-only connection (after the writer has created and migrated the file).
pub fn open_reader(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "SQLite refused WAL mode; using {mode}");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}
