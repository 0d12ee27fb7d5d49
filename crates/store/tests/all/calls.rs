//! The store's call lifecycle against a real SQLite file in a temp directory.

use aibuddy_store::{
    CallFinish, CallStart, CallStatus, CompactionState, ConfirmRecord, Decision, HistoryFilter,
    INLINE_LIMIT, RawOutputLocation, RawSource, Store, StoreError, UserAnswer,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn start(id: &str, run: &str, tool: &str, input: &str) -> CallStart {
    CallStart {
        tool_call_id: id.into(),
        run_id: run.into(),
        project_root: Some("/projects/demo".into()),
        tool: tool.into(),
        config: "fs".into(),
        input: input.into(),
        started_at_ms: Some(1_700_000_000_000),
    }
}

fn ok(id: &str, output: &[u8]) -> CallFinish {
    let mut f = CallFinish::new(id, CallStatus::Ok);
    f.raw_output = output.to_vec();
    f.model_projection = Some(String::from_utf8_lossy(output).into_owned());
    f.client_projection = Some(json!({"title": format!("done {id}")}));
    f.display_text = Some(format!("display of {id}"));
    f.finished_at_ms = Some(1_700_000_000_250);
    f
}

#[tokio::test]
async fn a_call_is_running_before_it_finishes_and_complete_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .begin_call(start("call_1", "run1", "read_file", r#"{"path":"a.txt"}"#))
        .await
        .unwrap();
    let running = store.get_call("call_1").await.unwrap().unwrap();
    assert_eq!(running.status, CallStatus::Running);
    assert_eq!(running.raw_output, RawOutputLocation::None);

    store.finish_call(ok("call_1", b"hello\n")).await.unwrap();
    let rec = store.get_call("call_1").await.unwrap().unwrap();
    assert_eq!(rec.status, CallStatus::Ok);
    assert_eq!(rec.input, json!({"path": "a.txt"}));
    assert_eq!(rec.started_at, "2023-11-14T22:13:20.000Z");
    assert_eq!(rec.duration_ms, Some(250));
    assert_eq!(rec.raw_output, RawOutputLocation::Inline);
    assert_eq!(rec.raw_output_len, Some(6));
    assert_eq!(rec.client_projection, Some(json!({"title": "done call_1"})));
    assert_eq!(rec.compaction_state, CompactionState::None);

    // A second finish is refused: a finished call never changes.
    let again = store.finish_call(ok("call_1", b"other")).await;
    assert!(
        matches!(again, Err(StoreError::NotRunning { .. })),
        "{again:?}"
    );
    let missing = store.finish_call(ok("nope", b"x")).await;
    assert!(
        matches!(missing, Err(StoreError::CallNotFound(_))),
        "{missing:?}"
    );
    let dup = store
        .begin_call(start("call_1", "run1", "read_file", "{}"))
        .await;
    assert!(matches!(dup, Err(StoreError::DuplicateCall(_))), "{dup:?}");
}

#[tokio::test]
async fn large_raw_output_goes_to_a_blob_file_and_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let small: Vec<u8> = (0..INLINE_LIMIT).map(|i| (i % 251) as u8).collect();
    let big: Vec<u8> = (0..INLINE_LIMIT + 1).map(|i| (i % 253) as u8).collect();
    for (id, bytes) in [("small", &small), ("big", &big)] {
        store
            .begin_call(start(id, "run1", "execute", "{}"))
            .await
            .unwrap();
        let mut fin = ok(id, b"");
        fin.raw_output = bytes.clone();
        store.finish_call(fin).await.unwrap();
    }
    let s = store.get_call("small").await.unwrap().unwrap();
    assert_eq!(s.raw_output, RawOutputLocation::Inline);
    let b = store.get_call("big").await.unwrap().unwrap();
    assert_eq!(
        b.raw_output,
        RawOutputLocation::File {
            path: "blobs/big.bin".into()
        }
    );
    assert_eq!(
        std::fs::read(dir.path().join("blobs/big.bin")).unwrap(),
        big
    );

    for (id, bytes) in [("small", &small), ("big", &big)] {
        let slice = store.read_raw_slice(id, 1000, 500).await.unwrap();
        assert_eq!(slice.bytes, bytes[1000..1500].to_vec());
        assert_eq!(slice.total_len, bytes.len() as u64);
        let tail = store
            .read_raw_slice(id, bytes.len() as u64 - 10, 500)
            .await
            .unwrap();
        assert_eq!(tail.bytes, bytes[bytes.len() - 10..].to_vec());
        let past = store
            .read_raw_slice(id, bytes.len() as u64 + 5, 10)
            .await
            .unwrap();
        assert!(past.bytes.is_empty());
    }
    assert_eq!(
        store.raw_source("small").await.unwrap(),
        RawSource::Inline(small)
    );
    assert_eq!(
        store.raw_source("big").await.unwrap(),
        RawSource::File(dir.path().join("blobs/big.bin"))
    );
}

#[tokio::test]
async fn history_is_newest_first_and_filters_narrow_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for (i, (run, tool)) in [
        ("r1", "read_file"),
        ("r1", "grep"),
        ("r2", "read_file"),
        ("r2", "execute"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("c{i}");
        store
            .begin_call(start(&id, run, tool, &format!("{{\"n\":{i}}}")))
            .await
            .unwrap();
        if i == 3 {
            let mut f = CallFinish::new(&id, CallStatus::Error);
            f.stage = Some(aibuddy_common::Stage::Execution);
            f.error_message = Some("exit 1".into());
            store.finish_call(f).await.unwrap();
        } else {
            store.finish_call(ok(&id, b"x")).await.unwrap();
        }
    }
    let ids = |rows: Vec<aibuddy_store::HistoryRow>| {
        rows.into_iter().map(|r| r.tool_call_id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.history(HistoryFilter::default()).await.unwrap()),
        ["c3", "c2", "c1", "c0"]
    );
    let f = |run: Option<&str>, tool: Option<&str>, status: Option<CallStatus>| HistoryFilter {
        run_id: run.map(Into::into),
        tool: tool.map(Into::into),
        status,
        ..HistoryFilter::default()
    };
    assert_eq!(
        ids(store.history(f(Some("r1"), None, None)).await.unwrap()),
        ["c1", "c0"]
    );
    assert_eq!(
        ids(store
            .history(f(None, Some("read_file"), None))
            .await
            .unwrap()),
        ["c2", "c0"]
    );
    let errors = store
        .history(f(None, None, Some(CallStatus::Error)))
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].stage, Some(aibuddy_common::Stage::Execution));
    assert_eq!(errors[0].input, json!({"n": 3}));
    let page = HistoryFilter {
        limit: Some(2),
        ..HistoryFilter::default()
    };
    assert_eq!(ids(store.history(page).await.unwrap()), ["c3", "c2"]);
    let next = HistoryFilter {
        limit: Some(2),
        before: Some("c2".into()),
        ..HistoryFilter::default()
    };
    assert_eq!(ids(store.history(next).await.unwrap()), ["c1", "c0"]);
}

#[tokio::test]
async fn search_matches_tool_input_and_display_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .begin_call(start("a", "r1", "read_file", r#"{"path":"src/main.rs"}"#))
        .await
        .unwrap();
    store.finish_call(ok("a", b"fn main")).await.unwrap();
    store
        .begin_call(start("b", "r1", "grep", r#"{"pattern":"TODO"}"#))
        .await
        .unwrap();
    let mut fb = ok("b", b"");
    fb.display_text = Some("3 matches in quarterly report".into());
    store.finish_call(fb).await.unwrap();
    store
        .begin_call(start("c", "r1", "execute", r#"{"command":"cargo test"}"#))
        .await
        .unwrap();

    let ids = |rows: Vec<aibuddy_store::HistoryRow>| {
        rows.into_iter().map(|r| r.tool_call_id).collect::<Vec<_>>()
    };
    assert_eq!(ids(store.search("main.rs", 10).await.unwrap()), ["a"]);
    assert_eq!(ids(store.search("quarter", 10).await.unwrap()), ["b"]);
    assert_eq!(ids(store.search("grep", 10).await.unwrap()), ["b"]);
    assert_eq!(
        ids(store.search("cargo", 10).await.unwrap()),
        ["c"],
        "running calls are searchable"
    );
    assert!(
        store
            .search("nothing-like-this", 10)
            .await
            .unwrap()
            .is_empty()
    );
    // FTS syntax typed by a person is taken as words, never a query error.
    assert!(
        store
            .search("\"unbalanced AND ( NEAR", 10)
            .await
            .unwrap()
            .is_empty()
    );
    let filtered = HistoryFilter {
        search: Some("r".into()),
        tool: Some("grep".into()),
        ..HistoryFilter::default()
    };
    assert_eq!(ids(store.history(filtered).await.unwrap()), ["b"]);
}

#[tokio::test]
async fn compacted_projection_replaces_the_original_only_when_smaller() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .begin_call(start("c1", "run1", "grep", "{}"))
        .await
        .unwrap();
    store
        .finish_call(ok("c1", "line\n".repeat(100).as_bytes()))
        .await
        .unwrap();

    let bigger = "x".repeat(1000);
    let replaced = store
        .replace_model_projection("c1", &bigger, CompactionState::Compacted, "trim", Some("p"))
        .await
        .unwrap();
    assert!(!replaced);
    let rec = store.get_call("c1").await.unwrap().unwrap();
    assert_eq!(
        rec.model_projection.as_deref(),
        Some("line\n".repeat(100).as_str())
    );
    assert_eq!(rec.compaction_state, CompactionState::NotSmaller);
    assert_eq!(rec.recovery_pointer, None);

    let doc = json!({"input": {}, "output": "line\n".repeat(100)});
    let pointer = store
        .write_compacted_output("run1", "c1", &doc)
        .await
        .unwrap();
    assert_eq!(pointer, "compacted_outputs/run1/c1.json");
    assert!(
        store
            .replace_model_projection(
                "c1",
                "line (100 lines)",
                CompactionState::Compacted,
                "trim",
                Some(&pointer)
            )
            .await
            .unwrap()
    );
    let rec = store.get_call("c1").await.unwrap().unwrap();
    assert_eq!(rec.model_projection.as_deref(), Some("line (100 lines)"));
    assert_eq!(rec.compaction_state, CompactionState::Compacted);
    assert_eq!(rec.recovery_pointer.as_deref(), Some(pointer.as_str()));
    assert_eq!(store.read_compacted_output(&pointer).await.unwrap(), doc);
    assert!(
        store
            .read_compacted_output("blobs/../../etc/passwd")
            .await
            .is_err()
    );

    store
        .set_compaction(
            "c1",
            CompactionState::Failed,
            Some("summarize"),
            Some("model unavailable"),
        )
        .await
        .unwrap();
    let rec = store.get_call("c1").await.unwrap().unwrap();
    assert_eq!(rec.compaction_error.as_deref(), Some("model unavailable"));
    assert_eq!(rec.model_projection.as_deref(), Some("line (100 lines)"));
}

#[tokio::test]
async fn a_call_that_never_ran_is_recorded_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut fin = CallFinish::new("bad", CallStatus::Error);
    fin.stage = Some(aibuddy_common::Stage::Parameters);
    fin.error_message = Some("/path: required".into());
    store
        .record_call(start("bad", "r", "read_file", "{not json"), fin)
        .await
        .unwrap();
    let rec = store.get_call("bad").await.unwrap().unwrap();
    assert_eq!(rec.status, CallStatus::Error);
    assert_eq!(rec.stage, Some(aibuddy_common::Stage::Parameters));
    assert_eq!(
        rec.input,
        json!("{not json"),
        "malformed input is kept as text"
    );
}

#[tokio::test]
async fn decisions_and_answers_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let req = ConfirmRecord {
        tool_call_id: "c1".into(),
        run_id: Some("r1".into()),
        digest: "abc".into(),
        target: "rm -rf build".into(),
        scope: "/projects/demo/build".into(),
        consequence: "deletes the build folder".into(),
        decision: Decision::Pending,
        requested_at_ms: 1,
        decided_at_ms: None,
        policy: None,
    };
    let id = store.record_confirm_request(req.clone()).await.unwrap();
    assert!(store.record_decision(id, Decision::Rejected).await.unwrap());
    assert!(
        !store.record_decision(id, Decision::Approved).await.unwrap(),
        "decided once"
    );
    let recs = store.confirm_records("c1").await.unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].decision, Decision::Rejected);
    assert!(recs[0].decided_at_ms.is_some());
    assert_eq!(recs[0].target, req.target);

    let ans = UserAnswer {
        tool_call_id: "q1".into(),
        run_id: Some("r1".into()),
        question: json!({"text": "Which branch?"}),
        answer: json!({"choice": "main"}),
        answered_at_ms: 5,
    };
    store.record_user_answer(ans.clone()).await.unwrap();
    assert_eq!(store.user_answers("q1").await.unwrap(), vec![ans]);
}

#[tokio::test]
async fn ids_that_could_escape_the_data_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for bad in ["../x", "a/b", ""] {
        let r = store.begin_call(start(bad, "r", "t", "{}")).await;
        assert!(
            matches!(r, Err(StoreError::InvalidId { .. })),
            "{bad:?}: {r:?}"
        );
    }
    assert!(store.spool("../../etc/x").is_err());
    assert!(
        store
            .write_compacted_output("..", "c", &json!({}))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn concurrent_writers_all_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                let id = format!("t{t}-{i}");
                store
                    .begin_call(start(&id, "r", "echo", "{}"))
                    .await
                    .unwrap();
                store.finish_call(ok(&id, id.as_bytes())).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = store
        .history(HistoryFilter {
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 200);
    assert!(all.iter().all(|r| r.status == CallStatus::Ok));
}

#[tokio::test]
async fn raw_output_from_a_file_moves_the_own_spool_and_copies_any_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 97) as u8).collect();

    store
        .begin_call(start("spooled", "r", "execute", "{}"))
        .await
        .unwrap();
    let spool = store.spool_path("spooled").unwrap();
    store.spool("spooled").unwrap().append(&big).unwrap();
    let mut fin = ok("spooled", b"");
    fin.raw_output_file = Some(spool.clone());
    fin.raw_format = aibuddy_store::RawFormat::Bytes;
    fin.output_json = Some(json!({"exit_code": 0}));
    store.finish_call(fin).await.unwrap();
    assert!(!spool.exists(), "the spool was moved into blobs/");
    let rec = store.get_call("spooled").await.unwrap().unwrap();
    assert_eq!(rec.raw_format, Some(aibuddy_store::RawFormat::Bytes));
    assert_eq!(rec.output_json, Some(json!({"exit_code": 0})));
    assert_eq!(
        store
            .read_raw_slice("spooled", 0, 1 << 20)
            .await
            .unwrap()
            .bytes,
        big
    );

    let foreign = dir.path().join("tool-owned.log");
    std::fs::write(&foreign, &big).unwrap();
    store
        .begin_call(start("copied", "r", "execute", "{}"))
        .await
        .unwrap();
    let mut fin = ok("copied", b"");
    fin.raw_output_file = Some(foreign.clone());
    store.finish_call(fin).await.unwrap();
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        big,
        "a tool's own file is left as it was"
    );
    assert_eq!(
        store
            .read_raw_slice("copied", 0, 1 << 20)
            .await
            .unwrap()
            .bytes,
        big
    );

    let small = dir.path().join("small.log");
    std::fs::write(&small, b"tiny").unwrap();
    store
        .begin_call(start("tiny", "r", "execute", "{}"))
        .await
        .unwrap();
    let mut fin = ok("tiny", b"");
    fin.raw_output_file = Some(small);
    store.finish_call(fin).await.unwrap();
    assert_eq!(
        store.get_call("tiny").await.unwrap().unwrap().raw_output,
        RawOutputLocation::Inline
    );
    assert_eq!(
        store.read_raw_slice("tiny", 0, 100).await.unwrap().bytes,
        b"tiny"
    );
}

#[tokio::test]
async fn the_read_only_reader_sees_committed_calls() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        aibuddy_store::Reader::open(dir.path()).is_err(),
        "no database yet"
    );
    let store = Store::open(dir.path()).unwrap();
    store
        .begin_call(start("r1", "run", "grep", "{}"))
        .await
        .unwrap();
    store.finish_call(ok("r1", b"abcdef")).await.unwrap();
    let reader = aibuddy_store::Reader::open(dir.path()).unwrap();
    assert_eq!(
        reader.get_call("r1").unwrap().unwrap().status,
        CallStatus::Ok
    );
    assert_eq!(reader.read_raw_slice("r1", 2, 3).unwrap().bytes, b"cde");
    assert_eq!(reader.history(&HistoryFilter::default()).unwrap().len(), 1);
    assert_eq!(
        reader.project_root_of("r1").unwrap(),
        Some(Some("/projects/demo".to_string()))
    );
    assert_eq!(reader.project_root_of("nope").unwrap(), None);
}
