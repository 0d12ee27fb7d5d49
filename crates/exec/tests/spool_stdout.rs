//! The spool as the command's stdout (`ExecRequest::spool_as_stdout`, the default): what a command
//! sees and may do with it, on both launch paths, and how the runner keeps the disk bounded.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_exec::{ExecOutcome, ExecRequest, ExecSink, NamespacePolicy, NullSink, Stream, run};
use support::assert_group_gone;
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

fn request(
    cmd: &str,
    dir: &std::path::Path,
    spool: &std::path::Path,
    ns: NamespacePolicy,
) -> ExecRequest {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = ns;
    r.spool_path = Some(spool.to_path_buf());
    r.timeout = Duration::from_secs(60);
    r
}

async fn run_quiet(r: ExecRequest) -> ExecOutcome {
    let out = run(r, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    assert_group_gone(out.pgid);
    out
}

fn text(out: &ExecOutcome) -> String {
    let mut all = out.head.clone();
    all.extend_from_slice(&out.tail);
    String::from_utf8_lossy(&all).into_owned()
}

/// `> /dev/stdout`, `tee /dev/stdout` and `dd of=/dev/stdout` reopen the spool: they work as with
/// a pipe (Landlock grants the spool file itself, nothing beside it).
#[tokio::test]
async fn reopening_dev_stdout_works_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let spool = data.path().join("call.out");
        let cmd = "printf 'first\\n' > /dev/stdout && printf 'second\\n' >> /dev/stdout \
                   && printf 'third\\n' | dd of=/dev/stdout oflag=append conv=notrunc status=none";
        let out = run_quiet(request(cmd, dir.path(), &spool, ns)).await;
        assert!(out.termination.success(), "{ns:?}: {}", text(&out));
        assert_eq!(text(&out), "first\nsecond\nthird\n", "{ns:?}");
        assert_eq!(
            std::fs::read(&spool).unwrap(),
            b"first\nsecond\nthird\n",
            "{ns:?}"
        );
        assert_eq!(out.stdout.total_bytes, 19, "{ns:?}");
    }
}

/// The descriptor reaches the spool and nothing else: the spool's directory (the app's data
/// directory) stays unwritable and its other files unreachable, whatever path the command derives
/// from `/proc/self/fd/1`.
#[tokio::test]
async fn the_spool_descriptor_grants_nothing_beside_the_spool() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("other.out"), "another call's output").unwrap();
    for ns in PATHS {
        let spool = data.path().join("call.out");
        let cmd = "d=$(dirname \"$(readlink /proc/$$/fd/1)\"); test -n \"$d\" && echo \"dir $d\"; \
                   echo evil > \"$d/evil\" 2>/dev/null && echo CREATED; \
                   echo evil >> \"$d/other.out\" 2>/dev/null && echo APPENDED; \
                   ln -L /proc/$$/fd/1 \"$d/linked\" 2>/dev/null && echo LINKED; \
                   echo done";
        let mut r = request(cmd, dir.path(), &spool, ns);
        r.hidden_paths = vec![data.path().to_path_buf()];
        let out = run_quiet(r).await;
        let t = text(&out);
        assert!(t.ends_with("done\n"), "{ns:?}: {t}");
        let shown = data.path().canonicalize().unwrap();
        assert!(t.contains(&format!("dir {}", shown.display())), "{ns:?}: {t}");
        for bad in ["CREATED", "APPENDED", "LINKED"] {
            assert!(!t.contains(bad), "{ns:?}: {t}");
        }
        assert!(!data.path().join("evil").exists(), "{ns:?}");
        assert!(!data.path().join("linked").exists(), "{ns:?}");
        assert_eq!(
            std::fs::read_to_string(data.path().join("other.out")).unwrap(),
            "another call's output",
            "{ns:?}"
        );
    }
}

/// While the command runs, what lies between the cap and the tail is punched out: the spool's
/// blocks on disk stay near the cap however much the command writes. The command reports its own
/// stdout's allocated size after a pause longer than the runner's watch.
#[tokio::test]
async fn the_disk_stays_bounded_while_the_command_writes_past_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let spool = data.path().join("call.out");
        let cmd = "head -c 200000000 /dev/zero; sleep 0.5; \
                   echo \"allocated $(( $(stat -L -c %b /dev/stdout) * 512 ))\" >&2";
        let mut r = request(cmd, dir.path(), &spool, ns);
        r.spool_cap = 4 * 1024 * 1024;
        let out = run_quiet(r).await;
        let t = text(&out);
        let allocated: u64 = t
            .rsplit("allocated ")
            .next()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("{ns:?}: {t}"));
        assert!(
            allocated < 16 * 1024 * 1024,
            "{ns:?}: {allocated} bytes on disk for a 4 MiB cap"
        );
        assert_eq!(out.stdout.total_bytes, 200_000_000, "{ns:?}");
        assert_eq!(
            out.stdout.spool_omitted_bytes,
            200_000_000 - 4 * 1024 * 1024,
            "{ns:?}"
        );
        assert_eq!(std::fs::metadata(&spool).unwrap().len(), 4 * 1024 * 1024);
        assert!(out.tail.ends_with(b"\n"), "{ns:?}");
    }
}

/// A listener that falls far behind (a slow terminal) skips ahead instead of pinning the whole
/// output on disk; it is told how much it missed, and what it got plus what it missed is the
/// stream. The outcome and the spool stay complete.
#[tokio::test]
async fn a_listener_that_falls_behind_is_told_what_it_skipped() {
    struct Slow {
        got: Mutex<Vec<u8>>,
        skipped: AtomicU64,
        slept: AtomicBool,
    }
    impl ExecSink for Slow {
        fn output(&self, stream: Stream, chunk: &[u8]) {
            assert_eq!(stream, Stream::Stdout);
            if !self.slept.swap(true, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1500));
            }
            self.got.lock().unwrap().extend_from_slice(chunk);
        }
        fn heartbeat(&self) {}
        fn output_skipped(&self, bytes: u64) {
            self.skipped.fetch_add(bytes, Ordering::SeqCst);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let spool = data.path().join("call.out");
    let total: u64 = 150_000_000;
    // A counter pattern, so what was delivered can be placed in the stream.
    let cmd = format!("printf start; head -c {total} /dev/zero | tr '\\0' x; printf end");
    let mut r = request(&cmd, dir.path(), &spool, NamespacePolicy::Auto);
    r.spool_cap = 1024 * 1024;
    let sink = Arc::new(Slow {
        got: Mutex::new(Vec::new()),
        skipped: AtomicU64::new(0),
        slept: AtomicBool::new(false),
    });
    let out = run(r, CancellationToken::new(), sink.clone())
        .await
        .unwrap();
    let got = sink.got.lock().unwrap().clone();
    let skipped = sink.skipped.load(Ordering::SeqCst);
    let whole = total + 8;
    assert_eq!(out.stdout.total_bytes, whole);
    assert!(skipped > 0, "the listener never fell behind");
    assert_eq!(got.len() as u64 + skipped, whole);
    assert!(got.starts_with(b"start"));
    assert!(got.ends_with(b"xend"));
    assert_eq!(std::fs::metadata(&spool).unwrap().len(), 1024 * 1024);
}

/// `spool_as_stdout = false` keeps stdout a pipe (what a command that needs one can ask for).
#[tokio::test]
async fn a_pipe_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for (as_stdout, want) in [(true, "file"), (false, "pipe")] {
        let spool = data.path().join("call.out");
        let cmd =
            "if [ -p /dev/stdout ]; then echo pipe; elif [ -f /dev/stdout ]; then echo file; fi";
        let mut r = request(cmd, dir.path(), &spool, NamespacePolicy::Auto);
        r.spool_as_stdout = as_stdout;
        let out = run_quiet(r).await;
        assert_eq!(text(&out), format!("{want}\n"));
    }
}
