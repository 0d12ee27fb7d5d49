//! The history browser's query against a real SQLite store of 10,000 calls: keyset paging walks
//! every call exactly once newest first, filters narrow, full-text search reaches the model's text.

use std::collections::HashSet;

use aibuddy_store::{
    CallStatus, HistoryCursor, HistoryQuery, Store, open_connection, rusqlite::params,
};

const CALLS: i64 = 10_000;
const TOOLS: [&str; 4] = ["execute", "read", "write", "tool_search"];

/// Status of call `i` (every 7th an error at Execution, every 11th interrupted).
fn status_of(i: i64) -> (&'static str, Option<&'static str>) {
    if i % 7 == 0 {
        ("error", Some("Execution"))
    } else if i % 11 == 0 {
        ("interrupted", None)
    } else {
        ("ok", None)
    }
}

/// A store with `CALLS` calls in 10 runs, written straight to the database in one transaction.
/// Every tenth call shares its start time with the next one (ties are ordered by `seq`).
fn seeded() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let mut conn = open_connection(dir.path()).unwrap();
    let tx = conn.transaction().unwrap();
    for r in 0..10 {
        tx.execute(
            "INSERT INTO runs (run_id, title, started_at) VALUES (?1, 't', ?2)",
            params![format!("run{r}"), 1_000 + r],
        )
        .unwrap();
    }
    {
        let mut ins = tx
            .prepare(
                "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, stage, \
                 started_at, duration_ms, input, model_projection) \
                 VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, 5, ?7, ?8)",
            )
            .unwrap();
        for i in 0..CALLS {
            let (status, stage) = status_of(i);
            let started = 1_700_000_000_000 + i - i64::from(i % 10 == 1);
            let model = if i == 4242 {
                "exit 0 zanzibarword".to_string()
            } else {
                format!("output {i}")
            };
            ins.execute(params![
                format!("c{i:05}"),
                format!("run{}", i % 10),
                TOOLS[(i % 4) as usize],
                status,
                stage,
                started,
                format!("{{\"command\":\"echo {i}\"}}"),
                model,
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
    drop(conn);
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

async fn walk(store: &Store, mut q: HistoryQuery) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let page = store.history_page(q.clone()).await.unwrap();
        ids.extend(page.rows.into_iter().map(|r| r.tool_call_id));
        match page.next {
            Some(c) => q.after = Some(c),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn keyset_paging_walks_every_call_once_newest_first() {
    let (_dir, store) = seeded();
    let ids = walk(
        &store,
        HistoryQuery {
            limit: Some(333),
            ..HistoryQuery::default()
        },
    )
    .await;
    assert_eq!(ids.len(), CALLS as usize);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert_eq!(ids[0], "c09999");
    assert_eq!(ids.last().unwrap(), "c00000");
    // c00001 starts at the same millisecond as c00000: the tie is broken by insertion order.
    let pos = |id: &str| ids.iter().position(|x| x == id).unwrap();
    assert!(pos("c00001") < pos("c00000"));
    assert!(pos("c00011") < pos("c00010"));
}

#[tokio::test]
async fn filters_narrow_and_combine() {
    let (_dir, store) = seeded();
    let q = HistoryQuery {
        statuses: vec![CallStatus::Interrupted],
        tools: vec!["read".into()],
        limit: Some(1000),
        ..HistoryQuery::default()
    };
    let ids = walk(&store, q).await;
    let want: Vec<String> = (0..CALLS)
        .rev()
        .filter(|i| status_of(*i).0 == "interrupted" && i % 4 == 1)
        .map(|i| format!("c{i:05}"))
        .collect();
    assert_eq!(ids, want);

    let page = store
        .history_page(HistoryQuery {
            stages: vec![aibuddy_common::Stage::Execution],
            run_id: Some("run3".into()),
            since_ms: Some(1_700_000_000_000 + 100),
            until_ms: Some(1_700_000_000_000 + 200),
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    let got: Vec<&str> = page.rows.iter().map(|r| r.tool_call_id.as_str()).collect();
    // i in [100, 200), i % 7 == 0, i % 10 == 3 -> 133, 203 is out of range, 63 too early.
    assert_eq!(got, vec!["c00133"]);
    assert_eq!(page.next, None);
}

#[tokio::test]
async fn full_text_search_reaches_input_and_model_text() {
    let (_dir, store) = seeded();
    let page = store
        .history_page(HistoryQuery {
            search: Some("zanzibar".into()),
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    let got: Vec<&str> = page.rows.iter().map(|r| r.tool_call_id.as_str()).collect();
    assert_eq!(got, vec!["c04242"]);
    let page = store
        .history_page(HistoryQuery {
            search: Some("echo 777".into()),
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    // Prefix terms: 777, 7770..7779.
    assert_eq!(page.rows.len(), 11);
    assert_eq!(page.rows[0].tool_call_id, "c07779");
    // A cursor in the middle of a search keeps the search.
    let older = store
        .history_page(HistoryQuery {
            search: Some("echo 777".into()),
            after: Some(HistoryCursor {
                started_at_ms: 1_700_000_000_000 + 7775,
                seq: i64::MAX,
            }),
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    // At or before 7775 (any seq at that millisecond): 7775..7770 and 777.
    assert_eq!(older.rows.len(), 7);
}

#[tokio::test]
async fn facets_list_tools_and_runs() {
    let (_dir, store) = seeded();
    let (tools, runs) = store.history_facets(None, 100).await.unwrap();
    assert_eq!(tools, vec!["execute", "read", "tool_search", "write"]);
    assert_eq!(runs.len(), 10);
    assert_eq!(runs[0], "run9");
}

#[tokio::test]
async fn a_version_5_database_gets_the_model_text_into_its_search_index() {
    use aibuddy_store::migrations::{LATEST_VERSION, current_version, upgrade_to};
    let dir = tempfile::tempdir().unwrap();
    {
        let mut conn = open_connection(dir.path()).unwrap();
        upgrade_to(&mut conn, 5).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, title, started_at) VALUES ('r5', 'old', 5);
             INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, input,
                                     model_projection)
             VALUES ('old1', 'r5', 'execute', 'execute', 'ok', 6, '{}', 'quokka says hi');",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let conn = open_connection(dir.path()).unwrap();
    assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
    let page = store
        .history_page(HistoryQuery {
            search: Some("quokka".into()),
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.rows[0].tool_call_id, "old1");
}

fn begin(id: &str, root: Option<&str>, tool: &str, at: i64) -> aibuddy_store::CallStart {
    aibuddy_store::CallStart {
        tool_call_id: id.into(),
        run_id: format!("run-{}", root.unwrap_or("none").replace('/', "_")),
        project_root: root.map(str::to_string),
        tool: tool.into(),
        config: tool.into(),
        input: format!("{{\"command\":\"echo {id}\"}}"),
        started_at_ms: Some(at),
    }
}

fn finish(id: &str, status: CallStatus) -> aibuddy_store::CallFinish {
    aibuddy_store::CallFinish {
        tool_call_id: id.into(),
        status,
        stage: None,
        error_code: None,
        error_message: None,
        raw_output: b"done\n".to_vec(),
        raw_output_file: None,
        raw_format: aibuddy_store::RawFormat::Text,
        output_json: None,
        model_projection: Some("done".into()),
        client_projection: None,
        display_text: None,
        finished_at_ms: None,
    }
}

/// The probe of a list that stays current: after the first page, calls stored later (by any
/// process writing the same store) are counted as newer, within the filters and the project;
/// a watched running call comes back finished, with its duration.
#[tokio::test]
async fn the_head_counts_newer_calls_of_the_project_and_reports_watched_rows() {
    const A: &str = "/work/projects/alpha";
    const B: &str = "/work/projects/beta";
    let (_dir, store) = seeded();
    let q = |tools: Vec<String>| HistoryQuery {
        project_root: Some(A.into()),
        tools,
        limit: Some(50),
        ..HistoryQuery::default()
    };
    // Project A has no row yet: it sees the 10,000 unattributed calls (newest first).
    let page = store.history_page(q(vec![])).await.unwrap();
    assert_eq!(page.rows[0].tool_call_id, "c09999");
    let first = page.first.expect("a page with rows has a first cursor");
    let head = |tools: Vec<String>, watch: Vec<String>| {
        let store = store.clone();
        async move {
            store
                .history_head(q(tools), Some(first), watch)
                .await
                .unwrap()
        }
    };
    assert_eq!(head(vec![], vec![]).await.newer, 0, "nothing new yet");

    let now = 1_800_000_000_000;
    store
        .begin_call(begin("new-a1", Some(A), "execute", now))
        .await
        .unwrap();
    store
        .begin_call(begin("new-b1", Some(B), "execute", now + 1))
        .await
        .unwrap();
    store
        .begin_call(begin("new-a2", Some(A), "read", now + 2))
        .await
        .unwrap();
    store
        .begin_call(begin("new-none", None, "read", now + 3))
        .await
        .unwrap();
    let h = head(
        vec![],
        vec!["new-a1".into(), "new-b1".into(), "c09999".into()],
    )
    .await;
    assert_eq!(
        h.newer, 3,
        "A's two calls and the unattributed one, never B's"
    );
    let watched: Vec<(&str, CallStatus)> = h
        .rows
        .iter()
        .map(|r| (r.tool_call_id.as_str(), r.status))
        .collect();
    assert_eq!(
        watched,
        vec![
            ("new-a1", CallStatus::Running),
            ("c09999", CallStatus::Interrupted)
        ],
        "B's call is not A's to see"
    );
    assert_eq!(head(vec!["execute".into()], vec![]).await.newer, 1);

    // The running call finishes: the watched row says so, with its duration.
    store
        .finish_call(finish("new-a1", CallStatus::Ok))
        .await
        .unwrap();
    let h = head(vec![], vec!["new-a1".into()]).await;
    assert_eq!(h.rows.len(), 1);
    assert_eq!(h.rows[0].status, CallStatus::Ok);
    assert!(h.rows[0].duration_ms.is_some(), "{:?}", h.rows[0]);

    // The list takes the new first page: nothing is newer than its head any more.
    let again = store.history_page(q(vec![])).await.unwrap();
    assert_eq!(again.rows[0].tool_call_id, "new-none");
    let since = again.first;
    let h = store.history_head(q(vec![]), since, vec![]).await.unwrap();
    assert_eq!(h.newer, 0);
    // Without a head (an empty list) every matching call counts, up to the cap.
    let all = store.history_head(q(vec![]), None, vec![]).await.unwrap();
    assert_eq!(all.newer, aibuddy_store::history_query::MAX_NEWER);
    // The probe is cheap: one bounded index walk (measured, printed, asserted loosely).
    let t = std::time::Instant::now();
    for _ in 0..100 {
        store
            .history_head(q(vec![]), since, vec!["new-a1".into()])
            .await
            .unwrap();
    }
    let per = t.elapsed() / 100;
    println!("history_head over 10,004 calls: {per:?} per probe");
    assert!(per < std::time::Duration::from_millis(50), "{per:?}");
}

/// `changed_path` keeps the calls whose stored change set touched the path (as `path`, as a
/// rename's `from`, or as a changed path that was not checkpointed) or a path beneath it; `%` and
/// `_` are plain characters; a call without a finished change set never matches.
#[tokio::test]
async fn the_changed_path_filter_keeps_the_calls_that_changed_that_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let sets = [
        (
            "w1",
            r#"{"files":[{"path":"src/main.rs","change":"modified"}],"skipped":[]}"#,
        ),
        (
            "w2",
            r#"{"files":[{"path":"docs/new.md","change":"renamed","from":"src/old.md"}],"skipped":[]}"#,
        ),
        (
            "w3",
            r#"{"files":[],"skipped":[{"path":"src/big.bin","reason":"too_large"}]}"#,
        ),
        (
            "w4",
            r#"{"files":[{"path":"srcx/a_b.rs","change":"added"}],"skipped":[]}"#,
        ),
    ];
    for (i, (id, set)) in sets.iter().enumerate() {
        store
            .begin_call(begin(id, None, "execute", 1_000 + i as i64))
            .await
            .unwrap();
        store.begin_call_changes(id, "key", "before").await.unwrap();
        store
            .finish_call_changes(id, "after", set.to_string(), None)
            .await
            .unwrap();
        store.finish_call(finish(id, CallStatus::Ok)).await.unwrap();
    }
    // A call that never finished: its change set is not stored.
    store
        .begin_call(begin("w5", None, "execute", 2_000))
        .await
        .unwrap();
    store
        .begin_call_changes("w5", "key", "before")
        .await
        .unwrap();
    let by = |p: &str| {
        let store = store.clone();
        let q = HistoryQuery {
            changed_path: Some(p.into()),
            ..HistoryQuery::default()
        };
        async move {
            let mut ids: Vec<String> = walk(&store, q).await;
            ids.sort();
            ids
        }
    };
    assert_eq!(by("src/main.rs").await, ["w1"]);
    assert_eq!(
        by("./src/").await,
        ["w1", "w2", "w3"],
        "a folder: paths beneath it"
    );
    assert_eq!(by("src/old.md").await, ["w2"], "a rename's source");
    assert_eq!(by("docs").await, ["w2"]);
    assert_eq!(
        by("src/big.bin").await,
        ["w3"],
        "changed but not checkpointed"
    );
    assert_eq!(
        by("srcx/a%").await,
        Vec::<String>::new(),
        "no LIKE wildcards"
    );
    assert_eq!(by("srcx/a_b.rs").await, ["w4"]);
    assert!(by("nowhere").await.is_empty());
    assert_eq!(walk(&store, HistoryQuery::default()).await.len(), 5);
}

/// Rows and linked results carry the client projection's `confinement_detail` as JSON text when
/// it is an object (where the call ran; the core reads it), and nothing, never an error, for a
/// projection without one, one whose detail is not an object, or one that is not JSON at all.
#[tokio::test]
async fn rows_and_results_carry_the_confinement_detail_only_when_it_is_an_object() {
    use aibuddy_store::{HistoryFilter, NewMessage, NewRun};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let run = store
        .create_run(NewRun {
            run_id: None,
            title: None,
            provider: "p".into(),
            model: "m".into(),
            presentation: "native".into(),
            project_root: None,
        })
        .await
        .unwrap();
    let ids = ["c_obj", "c_num", "c_none", "c_bad"];
    let requested = ids
        .iter()
        .map(|id| aibuddy_store::RequestedCall {
            tool_call_id: id.to_string(),
            tool: "execute".into(),
        })
        .collect();
    store
        .append_message(
            &run,
            NewMessage::assistant("anthropic", "{}".into(), None, requested),
        )
        .await
        .unwrap();
    for id in ids {
        store
            .append_message(&run, NewMessage::tool_result(id))
            .await
            .unwrap();
    }
    drop(store);
    let detail = r#"{"kind":"container","image":"debian:12"}"#;
    let cases = [
        (
            "c_obj",
            format!(r#"{{"exit_code":0,"confinement_detail":{detail}}}"#),
        ),
        ("c_num", r#"{"confinement_detail":7}"#.to_string()),
        ("c_none", r#"{"exit_code":0}"#.to_string()),
        ("c_bad", "not json {".to_string()),
    ];
    {
        let conn = open_connection(dir.path()).unwrap();
        for (i, (id, client)) in cases.iter().enumerate() {
            conn.execute(
                "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, \
                 input, client_projection) VALUES (?1, ?2, 'execute', 'execute', 'ok', ?3, '{}', ?4)",
                params![id, run, 1_000 + i as i64, client],
            )
            .unwrap();
        }
    }
    let store = Store::open(dir.path()).unwrap();
    let want = |id: &str| (id == "c_obj").then(|| detail.to_string());
    let page = store.history_page(HistoryQuery::default()).await.unwrap();
    assert_eq!(page.rows.len(), 4);
    for r in &page.rows {
        assert_eq!(
            r.confinement_detail,
            want(&r.tool_call_id),
            "{}",
            r.tool_call_id
        );
    }
    let listed = store.history(HistoryFilter::default()).await.unwrap();
    assert_eq!(listed.len(), 4);
    for r in &listed {
        assert_eq!(
            r.confinement_detail,
            want(&r.tool_call_id),
            "{}",
            r.tool_call_id
        );
    }
    let conv = store.conversation(&run).await.unwrap();
    let results: Vec<_> = conv
        .messages
        .iter()
        .filter(|m| m.result.is_some())
        .map(|m| {
            let id = m.tool_call_id.clone().unwrap();
            let got = m.result.as_ref().unwrap().confinement_detail.clone();
            (want(&id), got)
        })
        .collect();
    assert_eq!(results.len(), 4);
    for (want, got) in results {
        assert_eq!(got, want);
    }
}
