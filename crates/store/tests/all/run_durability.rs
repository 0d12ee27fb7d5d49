//! Runs and `kill -9`: a real child process (`aibuddy-store-runwriter`) drives a run step after
//! step. While it lives, another `Store` on the same database leaves its run alone and cannot
//! resume it. It is killed at a varying moment; the next open marks the run `interrupted`, the
//! counters equal what the stored messages say (no half-written step), every step the child
//! reported is there, and `resume_run` answers each dangling call so the protocol is valid again.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use aibuddy_store::{
    CallStatus, MessageRole, NewMessage, RunEnd, RunStatus, Store, StoreError, Usage,
    open_connection,
};

struct Writer {
    child: Child,
    lines: mpsc::Receiver<String>,
    reader: std::thread::JoinHandle<()>,
}

fn spawn(dir: &std::path::Path) -> Writer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aibuddy-store-runwriter"))
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Writer {
        child,
        lines,
        reader,
    }
}

/// Reads lines until the child reported `steps` steps (sets the run id and last step).
fn wait_for(w: &Writer, run: &mut Option<String>, last: &mut u64, steps: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while *last < steps {
        assert!(Instant::now() < deadline, "the child made no progress");
        let line = match w.lines.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the child exited"),
        };
        match line.split_once(' ') {
            Some(("RUN", id)) => *run = Some(id.to_string()),
            Some(("STEP", n)) => *last = n.parse().unwrap(),
            _ => panic!("unexpected line {line:?}"),
        }
    }
}

/// The run's counters are exactly what its stored messages add up to.
async fn assert_counters_match_messages(store: &Store, run: &str) -> usize {
    let conv = store.conversation(run).await.unwrap();
    let assistants: Vec<_> = conv
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .collect();
    let requested: usize = assistants.iter().map(|m| m.requested_calls.len()).sum();
    let mut usage = Usage::default();
    for m in &conv.messages {
        if let Some(u) = &m.usage {
            usage.add(u);
        }
    }
    assert_eq!(conv.run.steps, assistants.len() as i64, "steps of {run}");
    assert_eq!(conv.run.tool_calls, requested as i64, "tool_calls of {run}");
    assert_eq!(conv.run.usage, usage, "usage of {run}");
    let seqs: Vec<i64> = conv.messages.iter().map(|m| m.seq).collect();
    let want: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, want, "messages of {run} are not contiguous");
    assistants.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_run_leaves_it_interrupted_consistent_and_resumable() {
    let dir = tempfile::tempdir().unwrap();
    let mut resumed_calls = 0;
    for round in 0..5u64 {
        let w = spawn(dir.path());
        let (mut run, mut last) = (None, 0);
        wait_for(&w, &mut run, &mut last, 2 + round);
        let run = run.expect("the child reported its run");

        // A second process-like Store while the child lives: the run is not touched.
        {
            let live = Store::open(dir.path()).unwrap();
            assert!(!live.runs_interrupted_at_open().contains(&run));
            let rec = live.get_run(&run).await.unwrap().unwrap();
            assert_eq!(rec.status, Some(RunStatus::Running));
            assert!(live.recover_runs().await.unwrap().is_empty());
            let busy = live.resume_run(&run).await.unwrap_err();
            assert!(matches!(busy, StoreError::RunBusy(_)), "{busy}");
        }

        std::thread::sleep(Duration::from_millis(round * 3));
        let mut child = w.child;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        w.reader.join().unwrap();
        for line in w.lines.try_iter() {
            if let Some(("STEP", n)) = line.split_once(' ') {
                last = n.parse().unwrap();
            }
        }

        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.runs_interrupted_at_open(), std::slice::from_ref(&run));
        let rec = store.get_run(&run).await.unwrap().unwrap();
        assert_eq!(rec.status, Some(RunStatus::Interrupted));
        assert!(rec.finished_at_ms.is_some());
        let steps = assert_counters_match_messages(&store, &run).await;
        assert!(
            steps as u64 >= last,
            "round {round}: {steps} steps stored, the child reported {last}"
        );

        // --continue: every dangling call is answered as interrupted, then the run goes on.
        let before = store.conversation(&run).await.unwrap();
        let dangling: Vec<String> = before
            .dangling_calls()
            .iter()
            .map(|c| c.tool_call_id.clone())
            .collect();
        let answered = store.resume_run(&run).await.unwrap();
        assert_eq!(answered, dangling);
        resumed_calls += answered.len();
        let conv = store.conversation(&run).await.unwrap();
        assert!(conv.dangling_calls().is_empty());
        assert_eq!(conv.run.status, Some(RunStatus::Running));
        assert_eq!(conv.run.owner.as_deref(), Some(store.instance_id()));
        for id in &answered {
            let m = conv
                .messages
                .iter()
                .find(|m| m.tool_call_id.as_deref() == Some(id.as_str()))
                .unwrap();
            // A call that finished before the kill keeps its real result (its effects happened);
            // one that never started or was running is answered as interrupted.
            let result = m.result.as_ref().expect("an answered call has a row");
            assert!(
                matches!(result.status, CallStatus::Ok | CallStatus::Interrupted),
                "{id}: {:?}",
                result.status
            );
        }
        assert_counters_match_messages(&store, &run).await;
        store
            .append_message(&run, NewMessage::user_text("continue"))
            .await
            .unwrap();
        store
            .finish_run(
                &run,
                RunEnd {
                    status: RunStatus::Completed,
                    stage: None,
                    error_message: None,
                    stop_reason: None,
                },
            )
            .await
            .unwrap();
        drop(store);
        let conn = open_connection(dir.path()).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
    let store = Store::open(dir.path()).unwrap();
    let rows = store.list_runs(100, None).await.unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r.status == RunStatus::Completed));
    eprintln!("run durability: 5 kills, {resumed_calls} dangling calls answered on resume");
    assert!(
        resumed_calls > 0,
        "no kill landed between a call and its result in 5 rounds"
    );
}

#[tokio::test]
async fn a_run_of_a_store_that_is_gone_is_interrupted_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let run = {
        let store = Store::open(dir.path()).unwrap();
        let run = store
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
        // Still open in this process: a second Store leaves it alone.
        let second = Store::open(dir.path()).unwrap();
        assert!(second.runs_interrupted_at_open().is_empty());
        drop(second);
        run
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.runs_interrupted_at_open(), std::slice::from_ref(&run));
    assert!(store.resume_run(&run).await.unwrap().is_empty());
    let err = store.resume_run(&run).await.unwrap_err();
    assert!(matches!(err, StoreError::RunBusy(_)), "{err}");
}
