//! The process cap (`ExecRequest::max_processes`, `RLIMIT_NPROC`): a fork bomb or a flood of
//! background jobs stays inside its call, on both launch paths.
//!
//! The kernel never enforces `RLIMIT_NPROC` for the host's root (uid 0 is exempt, even inside a
//! user namespace with every capability dropped), and an unbounded fork bomb on a shared machine
//! would exhaust its pids. So every command here runs through the helper app
//! `aibuddy-exec-run`, started as `nobody` when the tests run as root (CI): the cap is then what
//! a person's app gets. The helper and the init beside it are copied, with the project, into a
//! directory `nobody` can reach, so the tests pass wherever the repository is cloned.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

struct Helper {
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Helper {
    fn pgid(&self) -> i32 {
        self.stderr
            .lines()
            .find_map(|l| l.strip_prefix("pgid: "))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pgid in: {}", self.stderr))
    }

    /// The largest `started N` the command printed.
    fn started(&self) -> u32 {
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("started "))
            .filter_map(|n| n.trim().parse().ok())
            .max()
            .unwrap_or(0)
    }
}

/// The helper runs one at a time: on the Landlock-only path the cap counts every process of the
/// user (`nobody` here), so a concurrent test's processes would eat into the allowance.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn helper(namespaces: bool, max_processes: u32, timeout_ms: u64, command: &str) -> Helper {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // `nobody` must reach the project and the binaries wherever the clone is (under `/root`,
    // mode 0700, it reaches neither): both live in a fresh world-traversable directory.
    let project = support::visible_tempdir();
    std::fs::set_permissions(project.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (_bin_dir, bins) = support::reachable_copies(&[
        env!("CARGO_BIN_EXE_aibuddy-exec-run"),
        env!("CARGO_BIN_EXE_aibuddy-exec-init"),
    ]);
    let mut cmd = std::process::Command::new(&bins[0]);
    cmd.current_dir(project.path());
    if !namespaces {
        cmd.arg("--no-namespaces");
    }
    cmd.arg("--max-processes")
        .arg(max_processes.to_string())
        .arg("--timeout-ms")
        .arg(timeout_ms.to_string())
        .arg(project.path())
        .arg(command)
        .env("TMPDIR", "/tmp")
        .env("HOME", project.path());
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: setgroups, setgid and setuid are async-signal-safe; they drop root for
        // `nobody` (supplementary groups first, while still allowed).
        unsafe {
            cmd.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) == -1
                    || libc::setgid(65534) == -1
                    || libc::setuid(65534) == -1
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let h = Helper {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
    };
    assert!(out.status.success(), "helper failed: {}", h.stderr);
    h
}

/// Starts `sleep 30 &` up to 200 times, printing how many it started; the shell stops at the
/// first fork that fails.
const FLOOD: &str =
    "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); echo started $i; done; echo flood-done";

fn assert_flood_capped(namespaces: bool) {
    let h = helper(namespaces, 32, 20_000, FLOOD);
    let started = h.started();
    // Namespace path: the init and the shell count, so at most 30 jobs. Landlock-only path: the
    // person's tasks when the command started plus 32; a few of the helper's threads may end
    // meanwhile, leaving room for as many more.
    let most = if namespaces { 30 } else { 40 };
    assert!(
        !h.stdout.contains("flood-done") && started <= most,
        "namespaces={namespaces}: the flood was not stopped at the cap (started {started}): {}\n{}",
        h.stdout,
        h.stderr
    );
    // The cap, not something else, stopped it: most of the allowance was used.
    assert!(
        started >= 16,
        "namespaces={namespaces}: started only {started}: {}\n{}",
        h.stdout,
        h.stderr
    );
    assert!(h.elapsed < Duration::from_secs(15), "{:?}", h.elapsed);
    assert!(h.stderr.contains("spawn after: ok"), "{}", h.stderr);
    support::assert_group_gone(h.pgid());
}

#[test]
fn a_flood_of_background_jobs_stops_at_the_cap_on_the_namespace_path() {
    assert_flood_capped(true);
}

#[test]
fn a_flood_of_background_jobs_stops_at_the_cap_on_the_landlock_path() {
    assert_flood_capped(false);
}

fn assert_bomb_contained(namespaces: bool) {
    let h = helper(namespaces, 64, 5_000, "b(){ b|b& }; b; sleep 10");
    assert!(
        h.stderr.contains("status: timed out") || h.stderr.contains("status: completed"),
        "namespaces={namespaces}: {}",
        h.stderr
    );
    assert!(
        h.elapsed < Duration::from_secs(20),
        "namespaces={namespaces}: run took {:?}",
        h.elapsed
    );
    assert!(h.stderr.contains("spawn after: ok"), "{}", h.stderr);
    support::assert_group_gone(h.pgid());
    // The test process can still start processes.
    assert!(
        std::process::Command::new("true")
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn a_fork_bomb_ends_with_its_call_on_the_namespace_path() {
    assert_bomb_contained(true);
}

#[test]
fn a_fork_bomb_ends_with_its_call_on_the_landlock_path() {
    assert_bomb_contained(false);
}

/// In this process, as it runs (root in CI): on the namespace path the cap holds whoever runs
/// the app; as root the init counts the processes and kills the command past the cap (the kernel
/// would not stop it), otherwise `RLIMIT_NPROC` makes the fork fail.
#[tokio::test]
async fn the_namespace_path_caps_processes_whoever_runs_the_app() {
    let project = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut req = aibuddy_exec::ExecRequest::new(
        "i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); echo started $i; done; echo flood-done",
        project.path(),
    );
    req.max_processes = 32;
    req.timeout = Duration::from_secs(20);
    let rec = support::Recorder::new();
    let start = Instant::now();
    let out = aibuddy_exec::run(req, tokio_util::sync::CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&rec.stream(aibuddy_exec::Stream::Stdout)).into_owned();
    let stderr = String::from_utf8_lossy(&rec.stream(aibuddy_exec::Stream::Stderr)).into_owned();
    if !matches!(
        out.confinement,
        aibuddy_exec::Confinement::Namespaces {
            landlock_abi: Some(_),
            ..
        }
    ) {
        eprintln!(
            "skipped: no namespace path with the init here ({:?})",
            out.confinement
        );
        return;
    }
    let started = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("started "))
        .filter_map(|n| n.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    assert!(
        !stdout.contains("flood-done") && started < 2000,
        "the flood ran to its end (started {started}): {stderr}"
    );
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        assert!(stderr.contains("exceeded its process cap (32"), "{stderr}");
    } else {
        assert!(started < 32, "started {started}");
    }
    assert!(!out.timed_out, "stopped by the timeout, not the cap");
    assert!(start.elapsed() < Duration::from_secs(15));
    support::assert_group_gone(out.pgid);
}

/// As root (CI) the kernel would let a fork bomb run to the timeout: the counting init stops it
/// at once. (Not run for other users: `RLIMIT_NPROC` covers them, tested through the helper.)
#[tokio::test]
async fn as_root_a_fork_bomb_is_killed_at_the_cap_long_before_its_timeout() {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("skipped: not root");
        return;
    }
    let project = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut req = aibuddy_exec::ExecRequest::new("b(){ b|b& }; b; sleep 10", project.path());
    req.max_processes = 64;
    // Generous, so a loaded machine (load 20+ seen with parallel builds) cannot turn the cap's
    // kill into a timeout; without the cap the bomb runs until this timeout, far past the bound
    // checked below.
    req.timeout = Duration::from_secs(60);
    let rec = support::Recorder::new();
    let start = Instant::now();
    let out = aibuddy_exec::run(req, tokio_util::sync::CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    if !matches!(
        out.confinement,
        aibuddy_exec::Confinement::Namespaces {
            landlock_abi: Some(_),
            ..
        }
    ) {
        eprintln!("skipped: no namespace path with the init here");
        return;
    }
    let stderr = String::from_utf8_lossy(&rec.stream(aibuddy_exec::Stream::Stderr)).into_owned();
    assert!(stderr.contains("exceeded its process cap (64"), "{stderr}");
    assert!(!out.timed_out);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    support::assert_group_gone(out.pgid);
    assert!(
        std::process::Command::new("true")
            .status()
            .unwrap()
            .success()
    );
}
