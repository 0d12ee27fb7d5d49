//! Start-up recovery in one process: a Store dropped with a running call stands for a dead
//! process (its instance lock is released); a Store still open stands for a live one.

use aibuddy_store::{CallFinish, CallStart, CallStatus, CompactionState, RawOutputLocation, Store};
use pretty_assertions::assert_eq;

fn start(id: &str) -> CallStart {
    CallStart {
        tool_call_id: id.into(),
        run_id: "run".into(),
        project_root: None,
        tool: "execute".into(),
        config: "exec".into(),
        input: "{}".into(),
        started_at_ms: None,
    }
}

#[tokio::test]
async fn running_calls_of_a_dead_owner_become_interrupted_with_spooled_output() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.begin_call(start("small")).await.unwrap();
        store.begin_call(start("large")).await.unwrap();
        store.begin_call(start("none")).await.unwrap();
        store
            .spool("small")
            .unwrap()
            .append(b"partial out")
            .unwrap();
        let mut big = store.spool("large").unwrap();
        big.append(&vec![b'z'; 100 * 1024]).unwrap();
        store.begin_call(start("done")).await.unwrap();
        store
            .finish_call(CallFinish::new("done", CallStatus::Ok))
            .await
            .unwrap();
        store
            .set_compaction("done", CompactionState::Pending, Some("trim"), None)
            .await
            .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let mut marked = store.interrupted_at_open().to_vec();
    marked.sort();
    assert_eq!(marked, ["large", "none", "small"]);

    let small = store.get_call("small").await.unwrap().unwrap();
    assert_eq!(small.status, CallStatus::Interrupted);
    assert_eq!(small.stage, Some(aibuddy_common::Stage::Execution));
    assert!(small.raw_output_partial);
    assert_eq!(
        store.read_raw_slice("small", 0, 100).await.unwrap().bytes,
        b"partial out"
    );

    let large = store.get_call("large").await.unwrap().unwrap();
    assert_eq!(
        large.raw_output,
        RawOutputLocation::File {
            path: "blobs/large.bin".into()
        }
    );
    assert_eq!(large.raw_output_len, Some(100 * 1024));

    let none = store.get_call("none").await.unwrap().unwrap();
    assert_eq!(none.status, CallStatus::Interrupted);
    assert!(!none.raw_output_partial);
    assert_eq!(
        store.get_call("done").await.unwrap().unwrap().status,
        CallStatus::Ok
    );
    assert!(!dir.path().join("spool/small.out").exists());
    let done = store.get_call("done").await.unwrap().unwrap();
    assert_eq!(done.compaction_state, CompactionState::Failed);
    assert!(done.compaction_error.unwrap().contains("ended"));
}

#[tokio::test]
async fn running_calls_of_a_live_process_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let live = Store::open(dir.path()).unwrap();
    live.begin_call(start("in-flight")).await.unwrap();
    let other = Store::open(dir.path()).unwrap();
    assert!(other.interrupted_at_open().is_empty());
    assert_eq!(
        other.get_call("in-flight").await.unwrap().unwrap().status,
        CallStatus::Running
    );
    // The live process finishes normally afterwards.
    live.finish_call(CallFinish::new("in-flight", CallStatus::Ok))
        .await
        .unwrap();
    assert_eq!(
        other.get_call("in-flight").await.unwrap().unwrap().status,
        CallStatus::Ok
    );
}

/// A long-lived process (the desktop app) sees the calls of a process that died after it opened
/// the store: `recover_calls` marks them `interrupted` (spooled output kept) once the owner's lock
/// is free, and leaves its own and a live process's running calls alone.
#[tokio::test]
async fn recover_calls_marks_calls_of_a_process_that_died_later_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let app = Store::open(dir.path()).unwrap();
    app.begin_call(start("mine")).await.unwrap();
    let terminal = Store::open(dir.path()).unwrap();
    terminal.begin_call(start("theirs")).await.unwrap();
    terminal
        .spool("theirs")
        .unwrap()
        .append(b"half done")
        .unwrap();
    let status = |id: &'static str| {
        let app = app.clone();
        async move { app.get_call(id).await.unwrap().unwrap().status }
    };

    // The terminal's process is alive: nothing is marked.
    assert!(app.recover_calls().await.unwrap().is_empty());
    assert_eq!(status("theirs").await, CallStatus::Running);

    // It dies (its instance lock is released).
    drop(terminal);
    assert_eq!(app.recover_calls().await.unwrap(), ["theirs"]);
    let theirs = app.get_call("theirs").await.unwrap().unwrap();
    assert_eq!(theirs.status, CallStatus::Interrupted);
    assert_eq!(theirs.stage, Some(aibuddy_common::Stage::Execution));
    assert!(theirs.raw_output_partial);
    assert_eq!(
        app.read_raw_slice("theirs", 0, 100).await.unwrap().bytes,
        b"half done"
    );
    // This process's own running call is not touched, and a second pass marks nothing.
    assert_eq!(status("mine").await, CallStatus::Running);
    assert!(app.recover_calls().await.unwrap().is_empty());
    app.finish_call(CallFinish::new("mine", CallStatus::Ok))
        .await
        .unwrap();
    assert_eq!(status("mine").await, CallStatus::Ok);
}
