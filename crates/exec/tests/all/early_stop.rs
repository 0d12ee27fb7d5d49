//! "Every action stoppable" at every moment: a command stopped in its first milliseconds (while
//! bubblewrap is still setting the sandbox up, before the init or the shell exists) leaves no
//! process of its tree behind, whether it is cancelled through its token or its run is dropped
//! (the hard deadline), with the init program and without it, and on the Landlock-only path.
//!
//! Each case carries a unique marker in its command line (`sleep 977.<pid><n>`); after the stop the
//! test scans /proc for any process whose command line contains it (a bubblewrap stuck in its setup
//! carries the command in its own arguments too), kills what it finds so nothing outlives the test,
//! and then fails.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use aibuddy_exec::{ExecRequest, NamespacePolicy, NullSink, run};
use tokio_util::sync::CancellationToken;

/// Stop moments after the run starts; the early ones land inside bubblewrap's setup.
const DELAYS_MS: [u64; 20] = [
    0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 25, 30, 40, 50, 75, 100, 200,
];

#[derive(Debug, Clone, Copy)]
enum Launch {
    /// bubblewrap + the init program as PID 1.
    WithInit,
    /// bubblewrap's own reaper (the init program could not be found).
    NoInit,
    /// Landlock only (no namespaces).
    Landlock,
}

#[derive(Debug, Clone, Copy)]
enum Stop {
    /// The cancellation token fires: `run` returns a cancelled outcome.
    Cancel,
    /// The run future is dropped (what the hard deadline does).
    Drop,
}

fn marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "977.{}{:03}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live processes (zombies have no command line) whose command line contains `needle`.
fn processes_containing(needle: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let me = std::process::id();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                out.push((pid, format!("{cmd} | {stat}")));
            }
        }
    }
    out
}

/// Kills every process found (so a failing case leaves nothing running) and returns them.
fn reap_leftovers(needle: &str) -> Vec<(u32, String)> {
    let found = processes_containing(needle);
    for (pid, _) in &found {
        // SAFETY: plain kill(2) of a process this test started (its marker is unique).
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    found
}

fn request(launch: Launch, mark: &str, dir: &std::path::Path) -> ExecRequest {
    let mut r = ExecRequest::new(format!("sleep {mark} & sleep {mark}"), dir);
    r.timeout = Duration::from_secs(60);
    match launch {
        Launch::WithInit => {
            r.init_program = Some(PathBuf::from(env!("CARGO_BIN_EXE_aibuddy-exec-init")));
        }
        Launch::NoInit => r.init_program = Some("/nonexistent/aibuddy-exec-init".into()),
        Launch::Landlock => r.namespaces = NamespacePolicy::Off,
    }
    r
}

/// Runs one stop and returns what is left of the tree (empty = good).
async fn stop_once(launch: Launch, stop: Stop, delay: Duration) -> Vec<(u32, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mark = marker();
    let r = request(launch, &mark, dir.path());
    match stop {
        Stop::Cancel => {
            let cancel = CancellationToken::new();
            let trigger = cancel.clone();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                trigger.cancel();
            });
            if delay.is_zero() {
                cancel.cancel();
            }
            let out = run(r, cancel, Arc::new(NullSink)).await.unwrap();
            timer.abort();
            assert!(out.cancelled, "{launch:?} {delay:?}: {out:?}");
            // The invariant holds when `run` returns: no grace period here.
            let left = processes_containing(&mark);
            if left.is_empty() {
                return left;
            }
            // Report what was there at return, but clean up before failing.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut left = left;
            left.extend(reap_leftovers(&mark));
            left
        }
        Stop::Drop => {
            let fut = run(r, CancellationToken::new(), Arc::new(NullSink));
            let res = tokio::time::timeout(delay, fut).await;
            assert!(
                res.is_err(),
                "{launch:?} {delay:?}: the run ended by itself"
            );
            // Dropping cannot wait for the kernel to deliver SIGKILL: allow a generous bound.
            let start = Instant::now();
            while !processes_containing(&mark).is_empty()
                && start.elapsed() < Duration::from_secs(5)
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            reap_leftovers(&mark)
        }
    }
}

async fn every_moment(launch: Launch, stop: Stop) {
    let mut failures = Vec::new();
    for ms in DELAYS_MS {
        let left = stop_once(launch, stop, Duration::from_millis(ms)).await;
        if !left.is_empty() {
            failures.push(format!("{ms} ms: {left:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{launch:?} {stop:?}: processes left after the stop:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn a_cancel_at_any_moment_leaves_nothing_with_the_init() {
    every_moment(Launch::WithInit, Stop::Cancel).await;
}

#[tokio::test]
async fn a_cancel_at_any_moment_leaves_nothing_without_the_init() {
    every_moment(Launch::NoInit, Stop::Cancel).await;
}

#[tokio::test]
async fn a_cancel_at_any_moment_leaves_nothing_on_the_landlock_path() {
    every_moment(Launch::Landlock, Stop::Cancel).await;
}

#[tokio::test]
async fn a_drop_at_any_moment_leaves_nothing_with_the_init() {
    every_moment(Launch::WithInit, Stop::Drop).await;
}

#[tokio::test]
async fn a_drop_at_any_moment_leaves_nothing_without_the_init() {
    every_moment(Launch::NoInit, Stop::Drop).await;
}

#[tokio::test]
async fn a_drop_at_any_moment_leaves_nothing_on_the_landlock_path() {
    every_moment(Launch::Landlock, Stop::Drop).await;
}
