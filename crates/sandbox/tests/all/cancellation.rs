//! Cancellation is honoured promptly: a grep over a big tree and a read of a huge file stop
//! mid-way, and the async call returns as soon as the token fires.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_sandbox::*;
use tokio_util::sync::CancellationToken;

fn big_tree(root: &std::path::Path, files: usize, lines_per_file: usize) {
    let mut body = String::new();
    for i in 0..lines_per_file {
        body.push_str(&format!(
            "line {i} hello world with some padding text to search through\n"
        ));
    }
    for f in 0..files {
        let dir = root.join(format!("d{}", f % 50));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{f}.txt")), &body).unwrap();
    }
}

/// Wait until the sandbox's blocking workers have all stopped; how long that took.
async fn workers_stopped(sb: &LocalSandbox) -> Duration {
    let t = Instant::now();
    while sb.workers_in_flight() > 0 && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    t.elapsed()
}

async fn cancelled_after<T: std::fmt::Debug>(
    delay: Duration,
    run: impl FnOnce(CancellationToken) -> tokio::task::JoinHandle<Result<T, SandboxError>>,
) -> (Result<T, SandboxError>, Duration) {
    let token = CancellationToken::new();
    let handle = run(token.clone());
    tokio::time::sleep(delay).await;
    let fired = Instant::now();
    token.cancel();
    let result = handle.await.unwrap();
    (result, fired.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_over_a_big_tree_stops_on_cancel() {
    let tmp = tempfile::tempdir().unwrap();
    big_tree(tmp.path(), 400, 6000);
    let local = Arc::new(LocalSandbox::open(&SandboxSettings::new(tmp.path())).unwrap());
    let sb: Arc<dyn Sandbox> = local.clone();
    // Uncancelled it takes a while (it counts every matching line past the cap).
    let t = Instant::now();
    let full = sb
        .grep(
            GrepRequest {
                pattern: "hello".into(),
                ..Default::default()
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let full_time = t.elapsed();
    assert_eq!(full.total_matches, 400 * 6000);
    assert_eq!(full.matches.len(), 200);
    assert_eq!(full.omitted, 400 * 6000 - 200);

    let sb2 = sb.clone();
    let (result, latency) = cancelled_after(full_time / 10, move |token| {
        tokio::spawn(async move {
            sb2.grep(
                GrepRequest {
                    pattern: "hello".into(),
                    ..Default::default()
                },
                token,
            )
            .await
        })
    })
    .await;
    assert!(
        matches!(result, Err(SandboxError::Cancelled { .. })),
        "{result:?}"
    );
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after cancel"
    );
    // The walk itself stops too (not only the await): the blocking worker is gone within
    // 100 ms of the cancel.
    let stopped = workers_stopped(&local).await;
    assert!(
        stopped < Duration::from_millis(100),
        "worker ran {stopped:?} more (full grep {full_time:?})"
    );
    eprintln!(
        "full grep {full_time:?}; returned {latency:?} after cancel; worker stopped {stopped:?} later"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_of_a_huge_file_stops_midway() {
    let tmp = tempfile::tempdir().unwrap();
    // 8 KiB of text, then a sparse 20 GiB hole: one endless line the reader must walk through.
    let path = tmp.path().join("huge.txt");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&b"text line\n".repeat(1000)).unwrap();
    f.set_len(20 * 1024 * 1024 * 1024).unwrap();
    drop(f);
    let local = Arc::new(LocalSandbox::open(&SandboxSettings::new(tmp.path())).unwrap());
    let sb2: Arc<dyn Sandbox> = local.clone();
    let (result, latency) = cancelled_after(Duration::from_millis(50), move |token| {
        tokio::spawn(async move {
            sb2.read(
                ReadRequest {
                    path: "huge.txt".into(),
                    offset: Some(1100),
                    limit: Some(5),
                },
                token,
            )
            .await
        })
    })
    .await;
    assert!(
        matches!(result, Err(SandboxError::Cancelled { .. })),
        "{result:?}"
    );
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after cancel"
    );
    // Reading all 20 GiB would take many seconds; the worker stops at its next chunk.
    let stopped = workers_stopped(&local).await;
    assert!(
        stopped < Duration::from_secs(1),
        "worker ran {stopped:?} more"
    );
    eprintln!("read returned {latency:?} after cancel; worker stopped {stopped:?} later");
}

#[tokio::test]
async fn an_already_cancelled_token_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(tmp.path())).unwrap();
    let token = CancellationToken::new();
    token.cancel();
    let err = sb
        .write(
            WriteRequest {
                path: "a.txt".into(),
                content: "x".into(),
                expect: None,
            },
            token,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled { op: "write" }));
    assert_eq!(err.stage(), Stage::Execution);
    assert!(!tmp.path().join("a.txt").exists());
}
