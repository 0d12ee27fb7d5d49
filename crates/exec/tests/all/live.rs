//! Live output through `aibuddy_exec::run` with real processes: coalescing keeps every byte, in
//! order per stream, delivers within the time slice while the command still runs, at the end and
//! on cancellation, never exceeds the size limit, and stays silent for a sink that does not
//! listen (the capture and the spool are complete either way).

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_exec::{ExecRequest, ExecSink, NamespacePolicy, Stream, run};
use support::{Event, Recorder, assert_group_gone};
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

fn req(cmd: &str, dir: &Path, ns: NamespacePolicy) -> ExecRequest {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = ns;
    r
}

fn deliveries(rec: &Recorder) -> Vec<(Stream, Vec<u8>)> {
    rec.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Out(s, b) => Some((*s, b.clone())),
            Event::Heartbeat(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn every_byte_arrives_in_order_per_stream_within_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let rec = Recorder::new();
        let mut r = req(
            "i=0; while [ $i -lt 3000 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done; \
             head -c 300000 /dev/zero | tr '\\0' z",
            dir.path(),
            ns,
        );
        r.live_max_bytes = 4096;
        r.spool_path = Some(dir.path().join("spool.out"));
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        let mut want_out: Vec<u8> = (0..3000)
            .flat_map(|i| format!("out {i}\n").into_bytes())
            .collect();
        want_out.extend(std::iter::repeat_n(b'z', 300_000));
        let want_err: Vec<u8> = (0..3000)
            .flat_map(|i| format!("err {i}\n").into_bytes())
            .collect();
        assert_eq!(rec.stream(Stream::Stdout), want_out, "{ns:?}");
        assert_eq!(rec.stream(Stream::Stderr), want_err, "{ns:?}");
        let d = deliveries(&rec);
        assert!(
            d.iter().all(|(_, b)| !b.is_empty() && b.len() <= 4096),
            "{ns:?}"
        );
        // 300,000 bytes of one stream in at most 4096-byte deliveries: at least 74 of them.
        assert!(d.len() >= 74, "{ns:?}: {} deliveries", d.len());
        // The spool holds both streams as read, complete.
        let spool = std::fs::read(dir.path().join("spool.out")).unwrap();
        assert_eq!(spool.len(), want_out.len() + want_err.len(), "{ns:?}");
        assert_eq!(out.stdout.total_bytes as usize, want_out.len());
        assert_group_gone(out.pgid);
    }
}

#[tokio::test]
async fn small_reads_are_coalesced() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new();
    // 2000 writes of 6 bytes, as fast as the shell goes: far fewer deliveries than writes.
    let mut r = req(
        "i=0; while [ $i -lt 2000 ]; do printf 'line\\n'; i=$((i+1)); done",
        dir.path(),
        NamespacePolicy::Auto,
    );
    r.live_interval = Duration::from_millis(200);
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    assert_eq!(rec.stream(Stream::Stdout), b"line\n".repeat(2000));
    let n = deliveries(&rec).len();
    assert!(n <= 100, "{n} deliveries for 2000 writes");
    assert_group_gone(out.pgid);
}

/// Creates `go` in the project when it first sees output: proves a delivery while the command
/// still waits for it (no timing assertion).
struct Release {
    rec: Arc<Recorder>,
    go: std::path::PathBuf,
}

impl ExecSink for Release {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        let _ = std::fs::write(&self.go, b"");
        self.rec.output(stream, chunk);
    }
    fn heartbeat(&self) {}
}

#[tokio::test]
async fn pending_output_is_delivered_within_its_time_slice_while_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let _ = std::fs::remove_file(dir.path().join("go"));
        let rec = Recorder::new();
        let sink = Arc::new(Release {
            rec: rec.clone(),
            go: dir.path().join("go"),
        });
        // Far below the size limit: only the time slice can deliver "first" before "go" exists.
        let mut r = req(
            "printf first; while [ ! -e go ]; do sleep 0.01; done; printf second",
            dir.path(),
            ns,
        );
        r.timeout = Duration::from_secs(60);
        let out = run(r, CancellationToken::new(), sink).await.unwrap();
        assert!(!out.timed_out, "{ns:?}: the first delivery never came");
        let d = deliveries(&rec);
        assert_eq!(
            d,
            vec![
                (Stream::Stdout, b"first".to_vec()),
                (Stream::Stdout, b"second".to_vec())
            ],
            "{ns:?}"
        );
        assert_group_gone(out.pgid);
    }
}

#[tokio::test]
async fn pending_output_is_delivered_at_the_end_and_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    for ns in PATHS {
        // A long time slice: only the end of the output delivers.
        let rec = Recorder::new();
        let mut r = req("printf 'no newline'; printf oops >&2", dir.path(), ns);
        r.live_interval = Duration::from_secs(1);
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        assert_eq!(rec.stream(Stream::Stdout), b"no newline", "{ns:?}");
        assert_eq!(rec.stream(Stream::Stderr), b"oops", "{ns:?}");
        assert_group_gone(out.pgid);

        let rec = Recorder::new();
        let cancel = CancellationToken::new();
        let marker = dir.path().join("written");
        let _ = std::fs::remove_file(&marker);
        let mut r = req("printf partial; : > written; sleep 1000", dir.path(), ns);
        r.live_interval = Duration::from_secs(1);
        let task = tokio::spawn(run(r, cancel.clone(), rec.clone()));
        while !marker.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        cancel.cancel();
        let out = task.await.unwrap().unwrap();
        assert!(out.cancelled, "{ns:?}");
        assert_eq!(rec.stream(Stream::Stdout), b"partial", "{ns:?}");
        assert_group_gone(out.pgid);
    }
}

/// A sink that does not listen: counts calls it should never get.
#[derive(Default)]
struct Deaf {
    calls: AtomicUsize,
    beat: AtomicBool,
    seen: Mutex<Vec<u8>>,
}

impl ExecSink for Deaf {
    fn output(&self, _stream: Stream, chunk: &[u8]) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.seen.lock().unwrap().extend_from_slice(chunk);
    }
    fn wants_output(&self) -> bool {
        false
    }
    fn heartbeat(&self) {
        self.beat.store(true, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn a_sink_that_does_not_listen_gets_no_output_and_the_capture_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(Deaf::default());
    let mut r = req(
        "head -c 1000000 /dev/zero | tr '\\0' q; printf tail",
        dir.path(),
        NamespacePolicy::Auto,
    );
    r.spool_path = Some(dir.path().join("spool.out"));
    r.head_bytes = 10;
    r.tail_bytes = 10;
    let out = run(r, CancellationToken::new(), sink.clone())
        .await
        .unwrap();
    assert_eq!(sink.calls.load(Ordering::Relaxed), 0);
    assert_eq!(out.stdout.total_bytes, 1_000_004);
    assert_eq!(out.head, b"qqqqqqqqqq");
    assert_eq!(out.tail, b"qqqqqqtail");
    assert_eq!(out.omitted_middle_bytes, 1_000_004 - 20);
    let spool = std::fs::read(dir.path().join("spool.out")).unwrap();
    assert_eq!(spool.len(), 1_000_004);
    assert!(spool.ends_with(b"qtail"));
    assert_group_gone(out.pgid);
}
