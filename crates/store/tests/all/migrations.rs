//! Schema migrations: from an empty file, from every earlier version, with data, and refusal
//! of a database written by a newer build.

use aibuddy_store::migrations::{LATEST_VERSION, current_version, upgrade, upgrade_to};
use aibuddy_store::rusqlite::Connection;
use aibuddy_store::{
    CallStatus, MessageRole, NewMessage, RunStatus, Store, StoreError, open_connection,
};
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
        "message_tool_calls",
        "summaries",
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

/// A database written by schema version 3 (before agent runs) with a call group, old-style
/// messages and answers: it upgrades in place, keeps every row, and gains the run columns.
#[tokio::test]
async fn a_version_3_database_with_data_upgrades_in_place_to_agent_runs() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = open_connection(dir.path()).unwrap();
        upgrade_to(&mut conn, 3).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, title, started_at) VALUES ('v3-run', 'old', 5);
             INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input,
                                     model_projection, raw_output_format)
             VALUES ('v3-call', 'v3-run', 'ls', 'fs', 'ok', 6, '{}', 'a b', 'text');
             INSERT INTO messages (message_id, run_id, seq, role, content, created_at)
             VALUES ('m1', 'v3-run', 1, 'user', '{\"text\": \"hi\"}', 7),
                    ('m2', 'v3-run', 2, 'assistant', '{\"text\":\"hello\"}', 8);
             INSERT INTO user_answers (tool_call_id, run_id, question, answer, answered_at)
             VALUES ('ask', 'v3-run', '{\"q\":1}', '\"yes\"', 9);",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let conn = open_connection(dir.path()).unwrap();
    assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
    // A call group is not an agent run: not listed, no status, counters zero.
    assert!(store.list_runs(10, None).await.unwrap().is_empty());
    let conv = store.conversation("v3-run").await.unwrap();
    assert_eq!(conv.run.status, None);
    assert_eq!(conv.run.title.as_deref(), Some("old"));
    assert_eq!(conv.run.steps, 0);
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.messages[0].role, MessageRole::User);
    assert_eq!(conv.messages[0].content, "{\"text\": \"hi\"}");
    assert_eq!(conv.messages[1].provider_kind, None);
    assert_eq!(conv.interactions.len(), 1);
    assert_eq!(
        store.get_call("v3-call").await.unwrap().unwrap().status,
        CallStatus::Ok
    );
    // It cannot be appended to or resumed as if it were an agent run.
    assert!(matches!(
        store
            .append_message("v3-run", NewMessage::user_text("x"))
            .await,
        Err(StoreError::RunNotRunning { .. })
    ));
    assert!(store.resume_run("v3-run").await.is_err());
    // New agent runs live beside it.
    let id = store
        .create_run(aibuddy_store::NewRun {
            run_id: None,
            title: None,
            provider: "openai".into(),
            model: "gpt-5.4".into(),
            presentation: "native".into(),
            project_root: None,
        })
        .await
        .unwrap();
    let rows = store.list_runs(10, None).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].run_id, id);
    assert_eq!(rows[0].status, RunStatus::Running);
}

/// A version 4 database with an agent run whose call kept the provider's id (`call_0`): after the
/// upgrade to version 5 the run keeps its ids (its conversation links the same result), and a new
/// run stores its own `call_0` under a run-scoped id, so the two no longer collide.
#[tokio::test]
async fn a_version_4_database_with_a_run_upgrades_to_run_scoped_call_ids() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = open_connection(dir.path()).unwrap();
        upgrade_to(&mut conn, 4).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, title, started_at, provider, model, presentation, status,
                               steps, tool_call_count)
             VALUES ('v4-run', 'old', 5, 'local', 'qwen3:8b', 'active_tools', 'completed', 1, 1);
             INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input,
                                     model_projection, raw_output_format)
             VALUES ('call_0', 'v4-run', 'read_file', 'filesystem', 'ok', 6, '{}', 'alpha', 'text');
             INSERT INTO messages (message_id, run_id, seq, role, content, created_at)
             VALUES ('m1', 'v4-run', 1, 'user', '{\"text\":\"hi\"}', 7);
             INSERT INTO messages (message_id, run_id, seq, role, content, created_at, provider_kind)
             VALUES ('m2', 'v4-run', 2, 'assistant', '{\"role\":\"assistant\",\"content\":[]}', 8,
                     'openai-chat');
             INSERT INTO message_tool_calls (message_id, position, run_id, tool_call_id, tool)
             VALUES ('m2', 0, 'v4-run', 'call_0', 'read_file');
             INSERT INTO messages (message_id, run_id, seq, role, content, created_at, tool_call_id)
             VALUES ('m3', 'v4-run', 3, 'tool', '{\"tool_call_id\":\"call_0\"}', 9, 'call_0');",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let conn = open_connection(dir.path()).unwrap();
    assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
    let conv = store.conversation("v4-run").await.unwrap();
    assert!(!conv.run.scoped_call_ids);
    assert_eq!(conv.run.stored_call_id("call_0"), "call_0");
    assert_eq!(conv.messages.len(), 3);
    let linked = conv.messages[2].result.as_ref().unwrap();
    assert_eq!(linked.model_projection.as_deref(), Some("alpha"));
    assert_eq!(conv.run.status, Some(RunStatus::Completed));
    // A new run with the same provider id: scoped, and its call row does not collide.
    let id = store
        .create_run(aibuddy_store::NewRun {
            run_id: None,
            title: None,
            provider: "local".into(),
            model: "qwen3:8b".into(),
            presentation: "active_tools".into(),
            project_root: None,
        })
        .await
        .unwrap();
    let run = store.get_run(&id).await.unwrap().unwrap();
    assert!(run.scoped_call_ids);
    let stored = run.stored_call_id("call_0");
    assert_eq!(stored, format!("{id}:call_0"));
    store
        .append_message(
            &id,
            NewMessage::assistant(
                "openai-chat",
                "{\"role\":\"assistant\",\"content\":[]}".into(),
                None,
                vec![aibuddy_store::RequestedCall {
                    tool_call_id: stored.clone(),
                    tool: "read_file".into(),
                }],
            ),
        )
        .await
        .unwrap();
    let linked = store.conversation(&id).await.unwrap();
    assert_eq!(linked.messages[0].requested_calls[0].tool_call_id, stored);
    // The old run's call is untouched.
    assert_eq!(
        store.get_call("call_0").await.unwrap().unwrap().tool,
        "read_file"
    );
}
