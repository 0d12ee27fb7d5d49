//! Schema migrations: from an empty file, from every earlier version, with data, and refusal
//! of a database written by a newer build.

use aibuddy_store::migrations::{LATEST_VERSION, current_version, upgrade, upgrade_to};
use aibuddy_store::rusqlite::Connection;
use aibuddy_store::{CallStatus, Store, StoreError, open_connection};
use pretty_assertions::assert_eq;

/// Every schema object (tables, indexes, triggers) as (type, name, sql), sorted.
fn schema(conn: &Connection) -> Vec<(String, String, Option<String>)> {
    let mut stmt = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn an_empty_directory_gets_the_latest_schema_with_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let conn = open_connection(dir.path()).unwrap();
    assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    let names: Vec<String> = schema(&conn)
        .into_iter()
        .filter(|s| s.0 == "table")
        .map(|s| s.1)
        .collect();
    for t in [
        "projects",
        "runs",
        "messages",
        "tool_calls",
        "confirm_decisions",
        "user_answers",
        "tool_calls_fts",
    ] {
        assert!(names.contains(&t.to_string()), "{t} missing from {names:?}");
    }
}

#[test]
fn upgrading_from_every_earlier_version_yields_the_fresh_schema() {
    let mut fresh = Connection::open_in_memory().unwrap();
    upgrade(&mut fresh).unwrap();
    let want = schema(&fresh);
    for from in 0..LATEST_VERSION {
        let mut conn = Connection::open_in_memory().unwrap();
        upgrade_to(&mut conn, from).unwrap();
        assert_eq!(current_version(&conn).unwrap(), from);
        upgrade(&mut conn).unwrap();
        assert_eq!(schema(&conn), want, "upgrade from version {from}");
    }
}

#[tokio::test]
async fn rows_written_at_version_1_are_searchable_after_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = open_connection(dir.path()).unwrap();
        upgrade_to(&mut conn, 1).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, started_at) VALUES ('old-run', 1);
             INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input,
                                     raw_output, raw_output_len, display_text)
             VALUES ('old-call', 'old-run', 'grep', 'fs', 'ok', 1, '{\"pattern\":\"legacy\"}',
                     X'6869', 2, 'found legacy');",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let hits = store.search("legacy", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].tool_call_id, "old-call");
    assert_eq!(hits[0].status, CallStatus::Ok);
    assert_eq!(
        store.read_raw_slice("old-call", 0, 10).await.unwrap().bytes,
        b"hi"
    );
}

#[test]
fn a_database_from_a_newer_build_is_refused_not_modified() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    {
        let conn = open_connection(dir.path()).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
    let conn = open_connection(dir.path()).unwrap();
    assert_eq!(current_version(&conn).unwrap(), 99);
}
