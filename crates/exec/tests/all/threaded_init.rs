//! The init program when the binary playing it already runs other threads (the desktop app: a
//! library constructor starts one before `main`). Before the fix the shell's SIGCHLD went to that
//! other thread, the init's signalfd never woke, and the command printed its output and then hung
//! until its timeout (18 of 20 runs with the desktop binary). Several runs in a row, each bounded.

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_exec::{Confinement, ExecRequest, Termination, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

fn threaded_init() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aibuddy-exec-threaded-init"))
}

async fn run_with_threaded_init(cmd: &str) -> (aibuddy_exec::ExecOutcome, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut r = ExecRequest::new(cmd, dir.path());
    r.init_program = Some(threaded_init());
    // Far above a normal run (milliseconds), far below the default 120 s.
    r.timeout = Duration::from_secs(15);
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let stdout = String::from_utf8_lossy(&rec.stream(aibuddy_exec::Stream::Stdout)).into_owned();
    let stderr = String::from_utf8_lossy(&rec.stream(aibuddy_exec::Stream::Stderr)).into_owned();
    (out, stdout, stderr)
}

#[tokio::test]
async fn a_multithreaded_init_ends_with_its_command_every_time() {
    for i in 0..10 {
        let (out, stdout, _) = run_with_threaded_init(&format!("echo run {i}")).await;
        assert!(
            !out.timed_out,
            "run {i}: the command ended but the init did not: {out:?}"
        );
        assert_eq!(out.termination, Termination::Exited { code: 0 }, "run {i}");
        assert_eq!(stdout, format!("run {i}\n"));
        // The helper really was the init: it applied Landlock inside the namespaces.
        assert!(
            matches!(
                out.confinement,
                Confinement::Namespaces {
                    landlock_abi: Some(_),
                    ..
                }
            ),
            "{:?}",
            out.confinement
        );
    }
}

#[tokio::test]
async fn commands_under_the_init_get_default_sigpipe() {
    // With SIGPIPE ignored (the init's Rust runtime ignores it) `yes` would see EPIPE and complain.
    let (out, stdout, stderr) = run_with_threaded_init("yes | head -n 1").await;
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    assert_eq!(stdout, "y\n");
    assert_eq!(stderr, "", "the writer of a closed pipe should die quietly");
}

#[tokio::test]
async fn a_multithreaded_init_still_ends_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = ExecRequest::new("echo up; sleep 977.31", dir.path());
    r.init_program = Some(threaded_init());
    let rec = Recorder::new();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(r, cancel.clone(), Arc::clone(&rec) as _));
    let start = std::time::Instant::now();
    while rec.stream(aibuddy_exec::Stream::Stdout).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(20), "never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert!(out.cancelled && !out.timed_out, "{out:?}");
    assert!(support::processes_with_args(&["sleep", "977.31"]).is_empty());
}
