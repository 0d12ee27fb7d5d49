//! Real processes through `aibuddy_exec::run`: exits, streams, env, confinement, timeouts,
//! cancellation, heartbeats, bounded output (parent death: `boundary.rs`). Every test checks the
//! group is gone.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aibuddy_exec::{
    ConfinePolicy, Confinement, ErrorStage, ExecError, ExecRequest, ExecSink, NamespacePolicy,
    NullSink, Stream, Termination, project_for_model, run, with_hard_deadline,
};
use support::{Recorder, assert_group_gone};
use tokio_util::sync::CancellationToken;

fn req(cmd: &str, dir: &std::path::Path) -> ExecRequest {
    ExecRequest::new(cmd, dir)
}

/// Both launch paths: namespaces (bubblewrap, available on the development and CI machines) and
/// the Landlock-only fallback.
const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

async fn run_ok(r: ExecRequest) -> aibuddy_exec::ExecOutcome {
    run(r, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap()
}

#[tokio::test]
async fn exit_code_and_labelled_streams() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let out = run(
        req("printf out; printf err >&2; exit 3", dir.path()),
        CancellationToken::new(),
        rec.clone(),
    )
    .await
    .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 3 });
    assert_eq!(rec.stream(Stream::Stdout), b"out");
    assert_eq!(rec.stream(Stream::Stderr), b"err");
    assert_eq!((out.stdout.total_bytes, out.stderr.total_bytes), (3, 3));
    assert!(!out.timed_out && !out.cancelled);
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn death_by_signal_is_reported_as_that_signal() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(req("kill -9 $$", dir.path())).await;
    assert_eq!(out.termination, Termination::Signaled { signal: 9 });
    assert!(project_for_model(&out).starts_with("exit: signal 9 (SIGKILL)"));
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn streams_arrive_complete_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let out = run(
        req(
            "i=0; while [ $i -lt 2000 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done",
            dir.path(),
        ),
        CancellationToken::new(),
        rec.clone(),
    )
    .await
    .unwrap();
    let want = |p: &str| -> Vec<u8> {
        (0..2000)
            .map(|i| format!("{p}{i}\n"))
            .collect::<String>()
            .into_bytes()
    };
    assert_eq!(rec.stream(Stream::Stdout), want("out"));
    assert_eq!(rec.stream(Stream::Stderr), want("err"));
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn own_session_and_group_cwd_and_closed_stdin() {
    for path in PATHS {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::new();
        let mut r = req(
            "echo $$ $(cut -d' ' -f5,6 /proc/$$/stat); pwd; cat; read x; echo read=$?",
            dir.path(),
        );
        r.namespaces = path;
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        let text = String::from_utf8(rec.stream(Stream::Stdout)).unwrap();
        let mut lines = text.lines();
        let ids: Vec<i32> = lines
            .next()
            .unwrap()
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(ids[1], ids[0], "{path:?}: the shell leads its own group");
        if path == NamespacePolicy::Off {
            assert_eq!(ids[1], out.pgid, "the app signals the shell's group");
            // SAFETY: getsid(0) only reads our own session id.
            let our_session = unsafe { libc::getsid(0) };
            assert_ne!(ids[2], our_session, "the command runs in another session");
        } else {
            assert_eq!(
                ids[2], ids[0],
                "the shell leads its own session in the namespace"
            );
        }
        assert_eq!(
            lines.next().unwrap(),
            dir.path().canonicalize().unwrap().to_str().unwrap()
        );
        assert_eq!(lines.next().unwrap(), "read=1", "stdin is at EOF");
        assert_group_gone(out.pgid);
    }
}

#[tokio::test]
async fn env_policy_drops_secrets_and_reports_them_and_tmpdir_is_private() {
    // SAFETY: set before any command of this test reads the environment; names are unique to it.
    unsafe {
        std::env::set_var("AIBUDDY_T_GITHUB_TOKEN", "t");
        std::env::set_var("AIBUDDY_T_API_KEY", "k");
        std::env::set_var("AIBUDDY_T_PLAIN", "p");
        std::env::set_var("AIBUDDY_T_VISIBLE", "v");
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let mut r = req(
        "env; echo TMP=$TMPDIR; touch \"$TMPDIR/x\" && echo wrote",
        dir.path(),
    );
    r.env.include = vec!["AIBUDDY_T_API_KEY".into()];
    r.env.always_drop = vec!["AIBUDDY_T_PLAIN".into()];
    r.env.set = vec![("AIBUDDY_T_SET".into(), "s".into())];
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let text = String::from_utf8(rec.stream(Stream::Stdout)).unwrap();
    assert!(!text.contains("AIBUDDY_T_GITHUB_TOKEN"));
    assert!(!text.contains("AIBUDDY_T_PLAIN"));
    assert!(text.contains("AIBUDDY_T_API_KEY=k"));
    assert!(text.contains("AIBUDDY_T_VISIBLE=v"));
    assert!(text.contains("AIBUDDY_T_SET=s"));
    assert!(
        out.env_dropped
            .contains(&"AIBUDDY_T_GITHUB_TOKEN".to_string())
    );
    assert!(out.env_dropped.contains(&"AIBUDDY_T_PLAIN".to_string()));
    assert!(!out.env_dropped.contains(&"AIBUDDY_T_API_KEY".to_string()));
    let tmp = text.lines().find_map(|l| l.strip_prefix("TMP=")).unwrap();
    assert!(tmp.contains("aibuddy-exec-"), "{tmp}");
    assert!(text.contains("wrote"));
    assert!(
        !std::path::Path::new(tmp).exists(),
        "private temp dir removed afterwards"
    );
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn landlock_confines_writes_to_the_project_and_writable_roots() {
    for path in PATHS {
        confines_writes(path).await;
    }
}

async fn confines_writes(path: NamespacePolicy) {
    let project = tempfile::tempdir().unwrap();
    // Outside /tmp, which the namespace path replaces by a private tmpfs (so it would be
    // invisible), wherever the clone (and so `CARGO_TARGET_TMPDIR`) is.
    let outside = support::visible_tempdir();
    let extra = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "original").unwrap();
    let o = outside.path().display();
    let cmd = format!(
        "echo inside > inside.txt && echo ok-inside; \
         echo x > {o}/new.txt || echo denied-create; \
         echo x >> {o}/victim.txt || echo denied-append; \
         rm -f {o}/victim.txt || echo denied-rm; \
         mv {o}/victim.txt moved.txt || echo denied-mv; \
         mkdir {o}/d || echo denied-mkdir; \
         ln -s /etc/passwd {o}/link || echo denied-link; \
         cat {o}/victim.txt; echo; \
         echo e > {x}/cache.txt && echo ok-extra; \
         echo t > \"$TMPDIR/t\" && echo ok-tmp; \
         echo n > /dev/null && echo ok-devnull; \
         echo s > /dev/stderr && echo ok-stderr",
        x = extra.path().display()
    );
    let mut r = req(&cmd, project.path());
    r.writable_roots = vec![extra.path().canonicalize().unwrap()];
    r.confine = ConfinePolicy::Required;
    r.namespaces = path;
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let text = String::from_utf8(rec.stream(Stream::Stdout)).unwrap();
    for want in [
        "ok-inside",
        "denied-create",
        "denied-append",
        "denied-rm",
        "denied-mv",
        "denied-mkdir",
        "denied-link",
        "original",
        "ok-extra",
        "ok-tmp",
        "ok-devnull",
        "ok-stderr",
    ] {
        assert!(text.contains(want), "missing {want} in:\n{text}");
    }
    match path {
        NamespacePolicy::Off => assert!(
            matches!(
                &out.confinement,
                Confinement::Landlock {
                    network: false,
                    scopes: true,
                    no_namespaces: Some(_),
                    ..
                }
            ),
            "{:?}",
            out.confinement
        ),
        NamespacePolicy::Auto => assert!(
            matches!(
                out.confinement,
                Confinement::Namespaces {
                    landlock_abi: Some(_),
                    network_isolated: false,
                    scopes: true
                }
            ),
            "{:?}",
            out.confinement
        ),
    }
    // Nothing outside changed.
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("victim.txt")]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
    assert_eq!(
        std::fs::read_to_string(project.path().join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(extra.path().join("cache.txt").exists());
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn confinement_off_can_write_outside() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut r = req(
        &format!("echo x > {}/f", outside.path().display()),
        project.path(),
    );
    r.confine = ConfinePolicy::Off;
    let out = run_ok(r).await;
    assert_eq!(out.confinement, Confinement::Disabled);
    assert!(outside.path().join("f").exists());
}

#[tokio::test]
async fn network_off_denies_tcp_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = tempfile::tempdir().unwrap();
    let cmd =
        format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected || echo refused");
    for path in PATHS {
        let rec_on = Recorder::new();
        let mut r = req(&cmd, project.path());
        r.namespaces = path;
        let on = run(r, CancellationToken::new(), rec_on.clone())
            .await
            .unwrap();
        // Network on: host loopback ports are out of reach too (issue 22; only the proxy).
        assert!(
            String::from_utf8_lossy(&rec_on.stream(Stream::Stdout)).contains("refused"),
            "{path:?}"
        );
        let mut r = req(&cmd, project.path());
        r.network_allowed = false;
        r.namespaces = path;
        let rec_off = Recorder::new();
        let off = run(r, CancellationToken::new(), rec_off.clone())
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&rec_off.stream(Stream::Stdout)).contains("refused"));
        match path {
            NamespacePolicy::Off => assert!(matches!(
                off.confinement,
                Confinement::Landlock { network: true, .. }
            )),
            NamespacePolicy::Auto => assert!(matches!(
                off.confinement,
                Confinement::Namespaces {
                    network_isolated: true,
                    ..
                }
            )),
        }
        assert_group_gone(on.pgid);
        assert_group_gone(off.pgid);
    }
}

#[tokio::test]
async fn timeout_terminates_then_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    // The shell traps TERM and exits 7; its children die of the group's SIGTERM.
    let mut r = req(
        "trap 'echo got-term; exit 7' TERM; sleep 1000 & (sleep 1000 &); sleep 1000 & wait",
        dir.path(),
    );
    // Long enough for the shell to install its trap even on a loaded machine.
    r.timeout = Duration::from_millis(1000);
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    assert!(out.timed_out && !out.cancelled);
    assert_eq!(out.termination, Termination::Exited { code: 7 });
    assert!(String::from_utf8_lossy(&rec.stream(Stream::Stdout)).contains("got-term"));
    assert_group_gone(out.pgid);

    // A tree that ignores SIGTERM is SIGKILLed after the grace.
    let mut r = req("trap '' TERM; sleep 1000 & sleep 1000", dir.path());
    r.timeout = Duration::from_millis(1000);
    r.kill_grace = Duration::from_millis(300);
    let start = Instant::now();
    let out = run_ok(r).await;
    assert!(out.timed_out);
    assert_eq!(out.termination, Termination::Signaled { signal: 9 });
    assert!(
        start.elapsed() >= Duration::from_millis(1300),
        "grace was honoured"
    );
    assert!(project_for_model(&out).contains("status: timed out"));
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn cancellation_ends_the_tree_and_keeps_output_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let cancel = CancellationToken::new();
    let r = req(
        "echo started; sleep 1000 & (sleep 1000 &); while true; do echo tick; sleep 0.02; done",
        dir.path(),
    );
    let task = tokio::spawn(run(r, cancel.clone(), rec.clone()));
    let wait_start = Instant::now();
    while !String::from_utf8_lossy(&rec.stream(Stream::Stdout)).contains("tick") {
        assert!(wait_start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    let latency = cancelled_at.elapsed();
    assert!(out.cancelled && !out.timed_out);
    assert_eq!(out.termination, Termination::Signaled { signal: 9 });
    assert!(out.head.starts_with(b"started\ntick\n"));
    assert!(project_for_model(&out).contains("status: cancelled"));
    // Generous bound for a loaded CI box; the benchmark measures the p99 (target < 200 ms).
    assert!(latency < Duration::from_secs(1), "cancel took {latency:?}");
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn cancelled_before_start_still_reports_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = run(req("sleep 1000", dir.path()), cancel, Arc::new(NullSink))
        .await
        .unwrap();
    assert!(out.cancelled);
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn heartbeats_follow_the_interval_and_stop_with_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    let mut r = req("sleep 0.55", dir.path());
    r.heartbeat_interval = Duration::from_millis(100);
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let beats = rec.heartbeats();
    assert!((3..=6).contains(&beats.len()), "{beats:?}");
    assert!(
        beats[0] >= Duration::from_millis(95),
        "first beat after one interval: {beats:?}"
    );
    for pair in beats.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_millis(80), "{beats:?}");
    }
    // Heartbeats never enter the outcome.
    assert!(out.head.is_empty() && out.tail.is_empty());
    let rec = Recorder::new();
    let mut r = req("true", dir.path());
    r.heartbeat_interval = Duration::from_millis(100);
    run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    assert!(rec.heartbeats().is_empty());
}

#[derive(Default)]
struct Counting {
    bytes: AtomicU64,
}
impl ExecSink for Counting {
    fn output(&self, _s: Stream, chunk: &[u8]) {
        self.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    }
    fn heartbeat(&self) {}
}

#[tokio::test]
async fn ten_megabytes_stay_bounded_spooled_and_projected() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = tempfile::tempdir().unwrap();
    let total: u64 = 10 * 1024 * 1024;
    let mut r = req(
        &format!(
            "echo FIRST; head -c {} /dev/zero | tr '\\0' 'a'; echo; echo LAST",
            total
        ),
        dir.path(),
    );
    r.spool_path = Some(spool_dir.path().join("call.out"));
    r.spool_cap = 1024 * 1024;
    let sink = Arc::new(Counting::default());
    let out = run(r, CancellationToken::new(), sink.clone())
        .await
        .unwrap();
    let produced = total + 6 + 1 + 5;
    assert_eq!(
        sink.bytes.load(Ordering::Relaxed),
        produced,
        "the live stream is complete"
    );
    assert_eq!(out.stdout.total_bytes, produced);
    assert_eq!(out.head.len(), aibuddy_exec::DEFAULT_HEAD_BYTES);
    assert_eq!(out.tail.len(), aibuddy_exec::DEFAULT_TAIL_BYTES);
    assert_eq!(
        out.head.len() as u64 + out.tail.len() as u64 + out.omitted_middle_bytes,
        produced
    );
    let spool = out.spool.clone().unwrap();
    assert_eq!(
        (spool.written_bytes, spool.omitted_bytes),
        (1024 * 1024, produced - 1024 * 1024)
    );
    assert_eq!(out.stdout.spool_omitted_bytes, produced - 1024 * 1024);
    assert_eq!(std::fs::metadata(&spool.path).unwrap().len(), 1024 * 1024);
    let p = project_for_model(&out);
    assert!(p.chars().count() <= aibuddy_exec::MODEL_CHAR_CAP);
    assert!(p.contains("--- output ---\nFIRST\naaa"));
    assert!(p.ends_with("aaa\nLAST\n\n--- end of output ---"));
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn exactly_at_the_capture_boundary() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, omitted) in [(0u64, 0u64), (1, 1)] {
        let mut r = req("", dir.path());
        r.head_bytes = 1000;
        r.tail_bytes = 500;
        r.command = format!("head -c {} /dev/zero | tr '\\0' 'b'", 1500 + extra);
        let out = run_ok(r).await;
        assert_eq!(out.omitted_middle_bytes, omitted);
        assert_eq!((out.head.len(), out.tail.len()), (1000, 500));
        assert_group_gone(out.pgid);
    }
}

#[tokio::test]
async fn binary_output_never_panics_the_projection() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(req(
        "head -c 300000 /dev/urandom; printf '\\r50%%\\r100%%'",
        dir.path(),
    ))
    .await;
    let p = project_for_model(&out);
    assert!(p.chars().count() <= aibuddy_exec::MODEL_CHAR_CAP);
    assert!(p.contains("100%"));
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn leftover_background_jobs_are_killed_when_the_shell_ends() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = run_ok(req("sleep 1000 & echo done", dir.path())).await;
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    assert!(out.killed_leftovers);
    assert_group_gone(out.pgid);
}

#[tokio::test]
async fn dropping_the_run_at_the_hard_deadline_kills_the_group() {
    for (path, tag) in [
        (NamespacePolicy::Auto, "1051"),
        (NamespacePolicy::Off, "1052"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut r = req(&format!("sleep {tag} & sleep {tag}"), dir.path());
        r.timeout = Duration::from_secs(60);
        r.namespaces = path;
        let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(3) {
                    if support::processes_with_args(&["sleep", tag]).len() == 2 {
                        seen.store(true, Ordering::SeqCst);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let err = with_hard_deadline(
            run(r, CancellationToken::new(), Arc::new(NullSink)),
            Duration::from_millis(1500),
            Duration::from_millis(100),
        )
        .await
        .unwrap_err();
        watcher.join().unwrap();
        assert!(
            seen.load(Ordering::SeqCst),
            "{path:?}: the sleeps never ran"
        );
        assert!(matches!(err, ExecError::HardDeadline { .. }));
        assert_eq!(err.stage(), ErrorStage::Execution);
        assert!(
            support::wait_no_process_with_args(&["sleep", tag], Duration::from_secs(5)),
            "{path:?}: `sleep {tag}` survived the drop"
        );
    }
}

#[tokio::test]
async fn bad_requests_fail_with_their_stage() {
    let dir = tempfile::tempdir().unwrap();
    let err = run(
        req("true", std::path::Path::new("rel")),
        CancellationToken::new(),
        Arc::new(NullSink),
    )
    .await
    .unwrap_err();
    assert_eq!(err.stage(), ErrorStage::Parameters);
    let missing = dir.path().join("missing");
    let err = run(
        req("true", &missing),
        CancellationToken::new(),
        Arc::new(NullSink),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ExecError::Cwd { .. }));
    assert_eq!(err.stage(), ErrorStage::Execution);
}

#[tokio::test]
async fn finished_background_jobs_are_not_reported_as_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(req("(true &); true & sleep 0.1; echo done", dir.path())).await;
    assert!(!out.killed_leftovers);
    assert_group_gone(out.pgid);
}
