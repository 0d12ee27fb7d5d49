//! Versioned schema migrations (`rusqlite_migration`, tracked in SQLite's `user_version`).
//! Each version's SQL lives beside the table code in `tables/`; this list only orders them.
//!
//! | version | content |
//! |---|---|
//! | 1 | core tables: projects, runs, messages, tool_calls, confirm_decisions, user_answers |
//! | 2 | FTS5 index over tool calls (`tool_calls_fts`) + triggers, rebuilt from existing rows |
//! | 3 | `tool_calls.raw_output_format`, `tool_calls.output_json` |
//! | 4 | agent runs: `runs` status/provider/usage/owner columns, `messages` provider content and
//! |   | tool-call links (`message_tool_calls`), `summaries`, per-run interaction indexes |
//! | 5 | `runs.scoped_call_ids`: calls of new runs are stored under `<run_id>:<provider id>` |
//! | 6 | history browser: `(started_at, seq)` and `stage` indexes; `tool_calls_fts` rebuilt with `model_projection` |
//! | 7 | history per project: `tool_calls.project_id` (the run's, by trigger) + `(project_id, started_at, seq)` index |
//! | 8 | `runs.stop_reason`: a run that ended on an answer cut at the output limit, refused, or otherwise not finished normally |
//! | 9 | `confirm_decisions.policy`: a decision made without asking by the approval mode or a rule, with its reason |
//! | 10 | `call_changes`: the checkpoints (before/after snapshot ids) and change set of each call that may change the project |
//! | 11 | `hook_runs`: every run of a person's hook, with its call (or only its run): outcome, exit, duration, the bounded record |
//! | 12 | `runs.parent_run_id`, `runs.parent_call_id`, `runs.child_shape`: a subagent run names the run and the `agent` call that started it, and keeps its shape |
//!
//! Never edit a released version: append a new one.

use std::sync::LazyLock;

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

use crate::error::{Result, StoreError};
use crate::tables;

static V1: LazyLock<String> = LazyLock::new(|| {
    [
        tables::projects::MIGRATION_V1,
        tables::runs::MIGRATION_V1,
        tables::messages::MIGRATION_V1,
        tables::tool_calls::MIGRATION_V1,
        tables::confirm_decisions::MIGRATION_V1,
        tables::user_answers::MIGRATION_V1,
    ]
    .concat()
});

static V4: LazyLock<String> = LazyLock::new(|| {
    [
        tables::runs::MIGRATION_V4,
        tables::messages::MIGRATION_V4,
        tables::summaries::MIGRATION_V4,
        tables::user_answers::MIGRATION_V4,
        tables::confirm_decisions::MIGRATION_V4,
    ]
    .concat()
});

/// The ordered list of schema versions.
pub fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(&V1),
        M::up(tables::search::MIGRATION_V2),
        M::up(tables::tool_calls::MIGRATION_V3),
        M::up(&V4),
        M::up(tables::runs::MIGRATION_V5),
        M::up(tables::search::MIGRATION_V6),
        M::up(crate::history_scope::MIGRATION_V7),
        M::up(tables::runs::MIGRATION_V8),
        M::up(tables::confirm_decisions::MIGRATION_V9),
        M::up(tables::call_changes::MIGRATION_V10),
        M::up(tables::hook_runs::MIGRATION_V11),
        M::up(tables::runs::MIGRATION_V12),
    ])
}

/// The newest schema version this build knows.
pub const LATEST_VERSION: usize = 12;

/// The database's current schema version (`user_version`).
pub fn current_version(conn: &Connection) -> Result<usize> {
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok(usize::try_from(v).unwrap_or(0))
}

/// Upgrades to `LATEST_VERSION`; refuses a database written by a newer build.
pub fn upgrade(conn: &mut Connection) -> Result<()> {
    let found = current_version(conn)?;
    if found > LATEST_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: LATEST_VERSION,
        });
    }
    if found < LATEST_VERSION {
        tracing::info!(
            from = found,
            to = LATEST_VERSION,
            "migrating the aibuddy database"
        );
    }
    migrations().to_latest(conn)?;
    Ok(())
}

/// Migrates to exactly `version` (tests of upgrades from earlier versions).
pub fn upgrade_to(conn: &mut Connection, version: usize) -> Result<()> {
    migrations().to_version(conn, version)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_list_is_valid_and_matches_latest_version() {
        migrations().validate().unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        upgrade(&mut conn).unwrap();
        assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
    }

    /// The crate README's table of schema versions has one row per version, in order, and no more.
    #[test]
    fn the_readme_lists_every_schema_version() {
        let readme = include_str!("../README.md");
        let rows: Vec<usize> = readme
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(" |").next())
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        assert_eq!(rows, (1..=LATEST_VERSION).collect::<Vec<_>>());
    }
}
