//! A background command through `aibuddy_exec::run` on both launch paths: with `stdin_piped` the
//! sink gets the write end of its stdin (what is written there reaches the command, closing it is
//! end of file); with `untimed` the sandbox timeout never fires, and the caller's token still ends
//! the whole tree.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_exec::{ExecRequest, ExecSink, NamespacePolicy, Stream, run};
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

#[derive(Default)]
struct StdinSink {
    out: Mutex<Vec<u8>>,
}

impl ExecSink for StdinSink {
    fn output(&self, _stream: Stream, chunk: &[u8]) {
        self.out.lock().unwrap().extend_from_slice(chunk);
    }
    fn heartbeat(&self) {}
    fn stdin(&self, pipe: OwnedFd) {
        // Written and closed at once: the command reads the line, then end of file.
        let mut file = std::fs::File::from(pipe);
        file.write_all(b"hello\n").unwrap();
        drop(file);
    }
}

fn req(cmd: &str, dir: &Path, ns: NamespacePolicy) -> ExecRequest {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = ns;
    r
}

#[tokio::test]
async fn a_piped_stdin_reaches_the_command_and_its_close_is_end_of_file() {
    let dir = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let sink = Arc::new(StdinSink::default());
        let mut r = req("read l; echo got:$l; cat; echo eof", dir.path(), ns);
        r.stdin_piped = true;
        r.timeout = Duration::from_secs(20);
        let out = run(r, CancellationToken::new(), sink.clone())
            .await
            .unwrap();
        assert!(!out.timed_out, "{ns:?}");
        assert_eq!(
            String::from_utf8_lossy(&sink.out.lock().unwrap()),
            "got:hello\neof\n",
            "{ns:?}"
        );
    }
}

#[tokio::test]
async fn without_stdin_piped_the_command_reads_end_of_file() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(StdinSink::default());
    let r = req("cat; echo eof", dir.path(), NamespacePolicy::Off);
    run(r, CancellationToken::new(), sink.clone())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&sink.out.lock().unwrap()), "eof\n");
}

#[tokio::test]
async fn an_untimed_command_outlives_its_timeout_and_ends_with_its_token() {
    let dir = tempfile::tempdir().unwrap();
    for ns in PATHS {
        let sink = Arc::new(StdinSink::default());
        let mut r = req("sleep 0.6; echo lived; sleep 30", dir.path(), ns);
        r.timeout = Duration::from_millis(100);
        r.untimed = true;
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let sink2 = sink.clone();
        tokio::spawn(async move {
            // Cancelled once the command proved it outlived its (unused) timeout.
            for _ in 0..200 {
                if !sink2.out.lock().unwrap().is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            stop.cancel();
        });
        let out = run(r, cancel, sink.clone()).await.unwrap();
        assert!(!out.timed_out, "{ns:?}");
        assert!(out.cancelled, "{ns:?}");
        assert!(
            out.duration < Duration::from_secs(15),
            "{ns:?}: {:?}",
            out.duration
        );
        assert_eq!(
            String::from_utf8_lossy(&sink.out.lock().unwrap()),
            "lived\n",
            "{ns:?}"
        );
        assert!(!aibuddy_exec::group_alive(out.pgid), "{ns:?}");
    }
}
