//! A Ctrl-C in the first milliseconds of `aibuddy call --yes execute …` (while the app is still
//! opening) ends the process promptly — interrupted, or cancelled when the command had started —
//! and no process of the command is left, whether SIGINT reached the child with its default
//! disposition (a terminal) or inherited as ignored (a background job of a non-interactive shell,
//! where an early Ctrl-C used to be lost and the call ran to its timeout).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support;

use support::aibuddy_cmd;

/// Live processes whose command line contains `needle`.
fn processes_containing(needle: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                out.push((pid, format!("{} | {stat}", &cmd[..cmd.len().min(60)])));
            }
        }
    }
    out
}

/// The thread count of `pid` (0 when unknown).
fn threads_of(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Starts the call with SIGINT at `disposition`, sends SIGINT after `delay`, and returns how it
/// ended and what of its command was left (killed afterwards so nothing outlives the test).
fn early_sigint(
    disposition: libc::sighandler_t,
    delay: Duration,
    marker: &str,
) -> (std::process::ExitStatus, Duration, Vec<(u32, String)>) {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut cmd = aibuddy_cmd(p.path(), d.path());
    cmd.args([
        "call",
        "--yes",
        "execute",
        &format!(r#"{{"command":"sleep {marker}"}}"#),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGINT, disposition);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    if disposition == libc::SIG_IGN {
        // An ignored signal sent before the process runs any code of its own is gone (nothing can
        // catch it): count from `main` (it starts the sandbox-probe thread right after installing
        // its handler), which a loaded machine may reach only after tens of milliseconds.
        let start = Instant::now();
        while threads_of(child.id()) < 2 && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    std::thread::sleep(delay);
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    // The tree ends with the app (init EOF / parent death); give the kernel a moment.
    let start = Instant::now();
    while !processes_containing(marker).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = processes_containing(marker);
    for (pid, _) in &left {
        // SAFETY: kill(2) of a process carrying this test's unique marker.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    (status, took, left)
}

fn check(disposition: libc::sighandler_t, label: &str, tag: u32) {
    let mut problems = Vec::new();
    for (i, ms) in [0u64, 5, 20, 35, 50, 80, 150, 300].into_iter().enumerate() {
        let marker = format!("977.5{}{tag}{i}", std::process::id());
        let (status, took, left) = early_sigint(disposition, Duration::from_millis(ms), &marker);
        // Interrupted (killed by SIGINT during start-up) or cancelled (130) once running.
        let ended_as_stopped = status.signal() == Some(libc::SIGINT) || status.code() == Some(130);
        if !ended_as_stopped || took > Duration::from_secs(20) || !left.is_empty() {
            problems.push(format!(
                "{label} at {ms} ms: {status:?} after {took:?}, left: {left:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_early_sigint_ends_the_call_with_sigint_at_its_default() {
    check(libc::SIG_DFL, "default", 1);
}

#[test]
fn an_early_sigint_ends_the_call_even_when_inherited_as_ignored() {
    check(libc::SIG_IGN, "ignored", 2);
}
