//! Commands in the container: output, exit codes, no network, the output cap and projection,
//! heartbeats, the timeout, a stop that leaves no process behind (counted in the container), and
//! a piped stdin (a background process's `process_input`): its bytes, its close, a dropped call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_container::ContainerSandbox;
use aibuddy_sandbox::aibuddy_exec::{
    Confinement, ExecRequest, MODEL_CHAR_CAP, NullSink, Termination, project_for_model,
};
use aibuddy_sandbox::{Sandbox, Stage};
use tokio_util::sync::CancellationToken;

use crate::engine_or_skip;
use crate::sink::{Recorder, Started, start};
use crate::support::project;

/// The command every "leftover" test starts: three sleeps, one of them in its own session.
pub const SLEEPERS: &str =
    "sleep 300 & (sleep 300 &) ; sh -c 'exec sleep 300' & echo started; sleep 300";

/// Processes in the container running `sleep 300` (zombies have no command line: not counted).
pub async fn sleepers(sb: &ContainerSandbox) -> usize {
    let out = sb
        .exec(
            ExecRequest::new(
                "grep -lz '^300$' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
                "/",
            ),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
        .expect("count processes");
    String::from_utf8_lossy(&out.head)
        .trim()
        .parse()
        .expect("a count")
}

/// Processes in the container that are our wrapper or one of its subshells (an argument exactly
/// `aibuddy-exec`); the counting command's own wrapper included.
pub async fn wrappers(sb: &ContainerSandbox) -> usize {
    let out = sb
        .exec(
            ExecRequest::new(
                "grep -lz '^aibuddy-exec$' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
                "/",
            ),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
        .expect("count processes");
    String::from_utf8_lossy(&out.head)
        .trim()
        .parse()
        .expect("a count")
}

#[tokio::test]
async fn commands_run_inside_with_their_streams_code_and_no_network() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let rec = Arc::new(Recorder::default());
    let mut req = ExecRequest::new(
        "pwd; echo oops >&2; ls /sys/class/net; cat /proc/net/dev | grep -c : ; exit 7",
        "/",
    );
    req.heartbeat_interval = Duration::from_millis(50);
    let out = sb
        .exec(req, CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 7 });
    assert_eq!(
        rec.stdout(),
        "/workspace\nlo\n1\n",
        "only the loopback interface"
    );
    assert_eq!(String::from_utf8_lossy(&rec.err.lock().unwrap()), "oops\n");
    assert_eq!((out.stdout.total_bytes, out.stderr.total_bytes), (16, 5));
    assert!(matches!(
        &out.confinement,
        Confinement::Container { network_isolated: false, image, .. } if *image == engine.image
    ));
    assert_eq!(
        out.confinement.label(),
        "container",
        "the network on: through the proxy"
    );

    // Heartbeats while a command runs.
    let rec = Arc::new(Recorder::default());
    let mut req = ExecRequest::new("sleep 0.4", "/");
    req.heartbeat_interval = Duration::from_millis(50);
    sb.exec(req, CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    assert!(rec.beats.load(std::sync::atomic::Ordering::SeqCst) >= 3);

    let err = sb
        .exec(
            ExecRequest::new("  ", "/"),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), Stage::Parameters);
    sb.close().await.unwrap();
    // A closed sandbox makes no container again: a command fails at Execution and says why.
    let err = sb
        .exec(
            ExecRequest::new("true", "/"),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), Stage::Execution);
    assert!(err.to_string().contains("closed"), "{err}");
}

#[tokio::test]
async fn output_over_the_cap_is_bounded_spooled_and_projected() {
    let engine = engine_or_skip!();
    let dir = project();
    let spool_dir = tempfile::tempdir().unwrap();
    let sb = engine.sandbox(dir.path());
    let mut req = ExecRequest::new("seq 1 200000; echo the-end", "/");
    req.spool_path = Some(spool_dir.path().join("call.out"));
    let out = sb
        .exec(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    let total: u64 = (1..=200_000u64)
        .map(|n| n.to_string().len() as u64 + 1)
        .sum::<u64>()
        + 8;
    assert_eq!(out.stdout.total_bytes, total);
    assert!(out.omitted_middle_bytes > 0);
    assert!(out.head.starts_with(b"1\n2\n3\n"));
    assert!(out.tail.ends_with(b"199999\n200000\nthe-end\n"));
    let spool = out.spool.as_ref().unwrap();
    assert_eq!(spool.written_bytes, total);
    assert_eq!(std::fs::metadata(&spool.path).unwrap().len(), total);
    let text = project_for_model(&out);
    assert!(text.chars().count() <= MODEL_CHAR_CAP, "{}", text.len());
    assert!(text.contains("the-end"));
    sb.close().await.unwrap();
}

#[tokio::test]
async fn a_stop_during_a_command_leaves_no_process_in_the_container() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let Started { task, rec, cancel } = start(&sb, ExecRequest::new(SLEEPERS, "/"));
    rec.wait_for("started", Duration::from_secs(30)).await;
    let before = sleepers(&sb).await;
    assert_eq!(before, 4, "the command's sleeps are running");
    let t = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    let took = t.elapsed();
    assert!(out.cancelled);
    assert_eq!(out.termination, Termination::Signaled { signal: 9 });
    let after = sleepers(&sb).await;
    eprintln!(
        "stop: {before} processes before, {after} after, the call returned {took:?} after the stop"
    );
    assert_eq!(after, 0);
    assert!(took < Duration::from_secs(5), "{took:?}");
    sb.close().await.unwrap();
}

/// Dropping the call (no cancel token, no kill exec: the future is gone) closes the HTTP
/// connection; the engine closes the wrapper's stdin and the wrapper kills the command's tree.
#[tokio::test]
async fn a_dropped_request_kills_the_tree_through_the_closed_connection() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let rec = Arc::new(Recorder::default());
    let call = sb.exec(
        ExecRequest::new(SLEEPERS, "/"),
        CancellationToken::new(),
        rec.clone(),
    );
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            _ = call => panic!("the command ended by itself"),
            _ = rec.wait_for("started", Duration::from_secs(30)) => {}
        }
    })
    .await;
    assert!(waited.is_ok());
    // `call` is dropped here: its connection closes.
    let t = Instant::now();
    let mut left = sleepers(&sb).await;
    while left > 0 && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = sleepers(&sb).await;
    }
    eprintln!(
        "dropped request: processes gone {:?} after the connection closed",
        t.elapsed()
    );
    assert_eq!(left, 0);
    sb.close().await.unwrap();
}

#[tokio::test]
async fn the_sandbox_timeout_ends_the_command_and_its_leftovers() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let mut req = ExecRequest::new(SLEEPERS, "/");
    req.timeout = Duration::from_millis(800);
    req.kill_grace = Duration::from_millis(300);
    let t = Instant::now();
    let out = sb
        .exec(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    assert!(out.timed_out);
    assert!(
        matches!(out.termination, Termination::Signaled { signal: 15 | 9 }),
        "{:?}",
        out.termination
    );
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    assert_eq!(sleepers(&sb).await, 0);
    sb.close().await.unwrap();
}

/// An image the engine does not have is never pulled: the command is an Execution error naming
/// it, and the next command tries again.
#[tokio::test]
async fn a_missing_image_is_an_execution_error_and_nothing_is_pulled() {
    let engine = engine_or_skip!();
    let dir = project();
    let mut opts = engine.options_on(&engine.socket, Duration::from_secs(30));
    opts.image = "localhost/aibuddy-no-such-image:1".into();
    let sb =
        ContainerSandbox::open(&aibuddy_sandbox::SandboxSettings::new(dir.path()), opts).unwrap();
    for _ in 0..2 {
        let err = sb
            .exec(
                ExecRequest::new("true", "/"),
                CancellationToken::new(),
                Arc::new(NullSink),
            )
            .await
            .unwrap_err();
        assert_eq!(err.stage(), Stage::Execution);
        assert!(
            err.to_string()
                .contains("localhost/aibuddy-no-such-image:1"),
            "{err}"
        );
    }
    assert!(sb.container_id().is_none());
}

/// The environment policy inside: the variables the person included (`exec.env_include`) and the
/// request's `set` ones reach the command; nothing else of this machine's environment does.
#[tokio::test]
async fn only_included_variables_of_this_machine_reach_the_command() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let name = std::env::var("CARGO_PKG_NAME").expect("cargo sets CARGO_PKG_NAME for tests");
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let mut req = ExecRequest::new(
        "echo \"$CARGO_PKG_NAME|$LANG|${CARGO_MANIFEST_DIR-unset}\"",
        "/",
    );
    req.env.include = vec!["CARGO_PKG_NAME".into()];
    req.env.set = vec![("LANG".into(), "C.UTF-8".into())];
    let rec = Arc::new(Recorder::default());
    let out = sb
        .exec(req, CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    assert!(out.termination.success(), "{:?}", out.termination);
    assert_eq!(rec.stdout(), format!("{name}|C.UTF-8|unset\n"));
    sb.close().await.unwrap();
}

/// A piped stdin (`stdin_piped`, a background process's `process_input`): bytes written in two
/// parts reach the command exactly (every byte value, NUL included), the command still runs
/// after them, and closing the pipe is the command's end of file: it ends by itself, exit 0.
#[tokio::test]
async fn a_piped_stdin_carries_input_and_its_close_is_the_commands_end_of_file() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let mut req = ExecRequest::new("echo ready; cat; echo; wc -c </dev/null; echo end", "/");
    req.stdin_piped = true;
    req.untimed = true;
    let Started { task, rec, .. } = start(&sb, req);
    rec.wait_for("ready\n", Duration::from_secs(30)).await;
    rec.write_stdin(b"first part, ").await;
    rec.wait_for("first part, ", Duration::from_secs(10)).await;
    let every: Vec<u8> = (0..=255u8).chain(*b"%s\\n-x").collect();
    rec.write_stdin(&every).await;
    let t = Instant::now();
    while !rec.stdout_bytes().ends_with(b"%s\\n-x") {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{:?}",
            rec.stdout_bytes()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !task.is_finished(),
        "the command ended before its stdin was closed"
    );
    let t = Instant::now();
    rec.close_stdin();
    let out = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the close ends the command")
        .unwrap()
        .unwrap();
    eprintln!(
        "piped stdin: the command ended {:?} after the close",
        t.elapsed()
    );
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    let want = [b"ready\nfirst part, ".as_slice(), &every, b"\n0\nend\n"].concat();
    assert_eq!(rec.stdout_bytes(), want);
    assert_eq!(out.stdout.total_bytes, want.len() as u64);
    sb.close().await.unwrap();
}

/// Dropping the call of a command with a piped stdin (its pipe still open: no close frame) closes
/// the HTTP connection: the wrapper's forwarder sees the exec's stdin end and kills the tree.
#[tokio::test]
async fn a_dropped_request_with_a_piped_stdin_kills_the_tree() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let rec = Arc::new(Recorder::default());
    let mut req = ExecRequest::new(
        "sleep 300 & (sleep 300 &) ; sh -c 'exec sleep 300' & read line; echo started:$line; sleep 300",
        "/",
    );
    req.stdin_piped = true;
    req.untimed = true;
    let base = wrappers(&sb).await;
    let mut call = Box::pin(sb.exec(req, CancellationToken::new(), rec.clone()));
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            _ = &mut call => panic!("the command ended by itself"),
            _ = async {
                rec.write_stdin(b"hello\n").await;
                rec.wait_for("started:hello\n", Duration::from_secs(30)).await;
            } => {}
        }
    })
    .await;
    assert!(waited.is_ok());
    assert_eq!(sleepers(&sb).await, 4, "the command's sleeps are running");
    assert_eq!(
        wrappers(&sb).await,
        base + 3,
        "the wrapper, its forwarder and the part that runs the command"
    );
    // The call is dropped: its connection closes; the stdin pipe is still open.
    drop(call);
    let t = Instant::now();
    let mut left = (sleepers(&sb).await, wrappers(&sb).await);
    while left != (0, base) && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = (sleepers(&sb).await, wrappers(&sb).await);
    }
    eprintln!(
        "dropped request with a piped stdin: processes gone {:?} after the connection closed",
        t.elapsed()
    );
    assert_eq!(left, (0, base), "(sleeps, wrapper processes) left");
    assert!(
        rec.stdin.lock().unwrap().is_some(),
        "the pipe was held open"
    );
    sb.close().await.unwrap();
}
