//! The spool, the head, the tail and the counters must be byte-exact whether a sink listens or
//! not (a listening sink also gets every byte live, through the coalescer): compared with the
//! input, with each other, and after a `kill -9` of the runner.

use crate::support;

use std::sync::Arc;

use aibuddy_exec::{ExecOutcome, ExecRequest, ExecSink, NamespacePolicy, NullSink, run};
use support::{Recorder, assert_group_gone};
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

/// Deterministic, non-repeating bytes of every value (not a multiple of any pipe or read size).
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

async fn run_with(
    cmd: &str,
    dir: &std::path::Path,
    spool: &std::path::Path,
    cap: u64,
    ns: NamespacePolicy,
    sink: Arc<dyn ExecSink>,
) -> ExecOutcome {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = ns;
    r.spool_path = Some(spool.to_path_buf());
    r.spool_cap = cap;
    r.head_bytes = 70_001;
    r.tail_bytes = 50_003;
    let out = run(r, CancellationToken::new(), sink).await.unwrap();
    assert_group_gone(out.pgid);
    out
}

#[tokio::test]
async fn spool_head_and_tail_are_byte_exact_without_a_listener() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(3_000_017);
    let input = dir.path().join("input.bin");
    std::fs::write(&input, &data).unwrap();
    // `cat` writes 128 KiB at a time; `dd bs=1000` writes many small pieces.
    for cmd in ["cat input.bin", "dd if=input.bin bs=1000 status=none"] {
        for ns in PATHS {
            // Under the cap (everything spooled), and over it (spooled, then only counted).
            for cap in [u64::MAX, 1_000_003] {
                let spool = dir.path().join("spool.out");
                let out = run_with(cmd, dir.path(), &spool, cap, ns, Arc::new(NullSink)).await;
                let what = format!("{cmd} {ns:?} cap {cap}");
                let kept = data.len().min(cap as usize);
                assert_eq!(std::fs::read(&spool).unwrap(), &data[..kept], "{what}");
                let info = out.spool.clone().unwrap();
                assert_eq!(info.written_bytes, kept as u64, "{what}");
                assert_eq!(info.omitted_bytes, (data.len() - kept) as u64, "{what}");
                assert_eq!(out.stdout.total_bytes, data.len() as u64, "{what}");
                assert_eq!(out.head, &data[..70_001], "{what}");
                assert_eq!(out.tail, &data[data.len() - 50_003..], "{what}");
                assert_eq!(
                    out.omitted_middle_bytes,
                    (data.len() - 70_001 - 50_003) as u64,
                    "{what}"
                );
            }
        }
    }
}

#[tokio::test]
async fn no_listener_matches_a_listener_on_both_streams_and_small_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let cmds = [
        // Smaller than the head.
        "printf 'short output\\n'".to_string(),
        // Between head and head + tail, and interleaved stdout/stderr.
        "for i in $(seq 1 3000); do echo out$i; echo err$i >&2; done".to_string(),
        // Exactly head + tail bytes.
        format!("head -c {} /dev/zero | tr '\\0' q", 70_001 + 50_003),
        "printf ''".to_string(),
    ];
    for cmd in &cmds {
        for cap in [u64::MAX, 5_000] {
            let quiet_spool = dir.path().join("a.out");
            let read_spool = dir.path().join("b.out");
            let ns = NamespacePolicy::Auto;
            let quiet = run_with(cmd, dir.path(), &quiet_spool, cap, ns, Arc::new(NullSink)).await;
            let rec = Recorder::new();
            let read = run_with(cmd, dir.path(), &read_spool, cap, ns, rec.clone()).await;
            let what = format!("{cmd} cap {cap}");
            assert_eq!(
                quiet.stdout.total_bytes + quiet.stderr.total_bytes,
                read.stdout.total_bytes + read.stderr.total_bytes,
                "{what}"
            );
            // The interleaving of stdout and stderr may differ between two runs; each stream's
            // count may not, and the combined head/tail/spool must be consistent with them.
            assert_eq!(quiet.stdout.total_bytes, read.stdout.total_bytes, "{what}");
            assert_eq!(quiet.stderr.total_bytes, read.stderr.total_bytes, "{what}");
            let total = (quiet.stdout.total_bytes + quiet.stderr.total_bytes) as usize;
            let spool = std::fs::read(&quiet_spool).unwrap();
            assert_eq!(spool.len(), total.min(cap as usize), "{what}");
            if cap == u64::MAX {
                // The spool holds everything: head and tail are its ends.
                assert_eq!(quiet.head, &spool[..total.min(70_001)], "{what}");
                let tail_len = (total - quiet.head.len()).min(50_003);
                assert_eq!(quiet.tail, &spool[total - tail_len..], "{what}");
            }
            assert_eq!(
                (
                    quiet.head.len(),
                    quiet.tail.len(),
                    quiet.omitted_middle_bytes
                ),
                (read.head.len(), read.tail.len(), read.omitted_middle_bytes),
                "{what}"
            );
            if !cmd.contains(">&2") {
                assert_eq!(quiet.head, read.head, "{what}");
                assert_eq!(quiet.tail, read.tail, "{what}");
                assert_eq!(spool, std::fs::read(&read_spool).unwrap(), "{what}");
                // The listening run saw every byte live: the quiet run's spool holds the same bytes.
                let live = rec.stream(aibuddy_exec::Stream::Stdout);
                assert_eq!(&live[..spool.len()], spool.as_slice(), "{what}");
            }
        }
    }
}

/// `kill -9` of the runner mid-command: the spool holds exactly the bytes read so far (a prefix
/// of the output, byte-exact), on both launch paths, listening or not.
#[test]
fn after_a_kill_9_of_the_runner_the_spool_is_an_exact_prefix() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(1_000_003);
    std::fs::write(dir.path().join("input.bin"), &data).unwrap();
    // Four copies then a long pause: killed either mid-output or in the pause.
    let cmd = "for i in 1 2 3 4; do cat input.bin; done; sleep 60";
    let full: Vec<u8> = data.repeat(4);
    for (flags, want_at_least) in [
        (&["--quiet"][..], full.len()),
        (&["--quiet", "--no-namespaces"][..], 1_500_000),
        (&[][..], 2_000_000),
    ] {
        let spool = dir.path().join("killed.out");
        let _ = std::fs::remove_file(&spool);
        let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"))
            .args(flags)
            .arg("--spool")
            .arg(&spool)
            .arg(dir.path())
            .arg(cmd)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::metadata(&spool).map_or(0, |m| m.len()) < want_at_least as u64 {
            assert!(Instant::now() < deadline, "{flags:?}: the spool never grew");
            std::thread::sleep(Duration::from_millis(5));
        }
        helper.kill().unwrap(); // SIGKILL
        helper.wait().unwrap();
        let got = std::fs::read(&spool).unwrap();
        assert!(got.len() >= want_at_least, "{flags:?}");
        assert!(
            full.starts_with(&got),
            "{flags:?}: the spool is an exact prefix of the output ({} bytes)",
            got.len()
        );
    }
}
