//! The seccomp filter refuses what Docker's default profile refuses and commands do not need
//! (`io_uring_setup`, `perf_event_open`, `bpf`, `userfaultfd`, unsafe `personality` flags...) with
//! EPERM on both launch paths, while the host answers the same calls differently (issue 22:
//! `io_uring_setup` and `perf_event_open` succeeded inside commands).
#![cfg(target_arch = "x86_64")]

use crate::support;

use aibuddy_exec::{ExecRequest, NamespacePolicy, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

/// One line per call: `name ok` or `name err:<errno>` (x86_64 numbers).
const PROBE: &str = r#"perl -e '
my @calls = (
  ["io_uring_setup", 425, 1, 0],
  ["perf_event_open", 298, 0, 0, -1, -1, 0],
  ["bpf", 321, 0, 0, 0],
  ["userfaultfd", 323, 0],
  ["personality_no_aslr", 135, 0x0040000],
  ["personality_query", 135, 0xffffffff],
);
for my $c (@calls) { my ($n, $nr, @a) = @$c; $! = 0; my $r = syscall($nr, @a); print $n, ($r < 0 ? " err:" . ($!+0) : " ok"), "\n" }'"#;

fn answers(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn refused_calls_get_eperm_on_both_paths_and_differ_on_the_host() {
    let host = std::process::Command::new("sh")
        .arg("-c")
        .arg(PROBE)
        .output()
        .expect("sh");
    let host = answers(&String::from_utf8_lossy(&host.stdout));
    assert_eq!(host.len(), 6, "the probe did not run: {host:?}");
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::new();
        let mut r = ExecRequest::new(PROBE, dir.path());
        r.namespaces = path;
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        let inside = answers(&String::from_utf8_lossy(&rec.stream(Stream::Stdout)));
        assert_eq!(
            inside.len(),
            6,
            "{path:?}: {out:?} stderr {}",
            String::from_utf8_lossy(&rec.stream(Stream::Stderr))
        );
        for ((name, got), (_, on_host)) in inside.iter().zip(&host) {
            if name == "personality_query" {
                assert_eq!(got, "ok", "{path:?}: the query stays allowed");
                continue;
            }
            assert_eq!(got, "err:1", "{path:?}: {name} not refused");
            // The control: the host answers otherwise (where the host itself refuses with EPERM,
            // e.g. unprivileged bpf turned off, there is nothing to compare against).
            if on_host == "err:1" {
                eprintln!("{name}: the host refuses it too (EPERM); no contrast here");
            }
        }
        // At least the calls every kernel offers root or a person answer differently on the host.
        let contrasted = host
            .iter()
            .filter(|(n, h)| n != "personality_query" && h != "err:1")
            .count();
        assert!(contrasted >= 2, "host answers: {host:?}");
    }
    // Ordinary work still runs on both paths (threads, pipes, a 64-bit toolchain's calls).
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let dir = tempfile::tempdir().unwrap();
        let mut r = ExecRequest::new(
            "perl -e 'print 6*7' && uname -s && echo x | cat && python3 -c 'import threading; t=threading.Thread(target=print, args=(1,)); t.start(); t.join()'",
            dir.path(),
        );
        r.namespaces = path;
        let rec = Recorder::new();
        let _ = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        assert_eq!(rec.stream(Stream::Stdout), b"42Linux\nx\n1\n", "{path:?}");
    }
}
