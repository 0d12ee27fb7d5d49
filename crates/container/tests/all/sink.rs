//! A sink that keeps what it is given and says when some text has appeared.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use aibuddy_container::ContainerSandbox;
use aibuddy_sandbox::aibuddy_exec::{ExecOutcome, ExecRequest, ExecSink, Stream};
use aibuddy_sandbox::{Sandbox, SandboxError};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
pub struct Recorder {
    pub out: Mutex<Vec<u8>>,
    pub err: Mutex<Vec<u8>>,
    pub beats: AtomicUsize,
    /// The write end of a piped stdin, once the command started.
    pub stdin: Mutex<Option<std::os::fd::OwnedFd>>,
}

impl ExecSink for Recorder {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        let buf = match stream {
            Stream::Stdout => &self.out,
            Stream::Stderr => &self.err,
        };
        buf.lock().unwrap().extend_from_slice(chunk);
    }
    fn heartbeat(&self) {
        self.beats.fetch_add(1, Ordering::SeqCst);
    }
    fn stdin(&self, pipe: std::os::fd::OwnedFd) {
        *self.stdin.lock().unwrap() = Some(pipe);
    }
}

impl Recorder {
    /// Writes `bytes` to the command's piped stdin (waiting at most 30 s for it to be handed over).
    pub async fn write_stdin(&self, bytes: &[u8]) {
        use std::io::Write;
        let t = Instant::now();
        while self.stdin.lock().unwrap().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "no stdin was handed over"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let guard = self.stdin.lock().unwrap();
        let fd = guard.as_ref().unwrap().try_clone().unwrap();
        drop(guard);
        std::fs::File::from(fd).write_all(bytes).unwrap();
    }

    /// Closes the command's piped stdin (its end of file).
    pub fn close_stdin(&self) {
        assert!(self.stdin.lock().unwrap().take().is_some());
    }

    /// Everything the command wrote to stdout, as bytes.
    pub fn stdout_bytes(&self) -> Vec<u8> {
        self.out.lock().unwrap().clone()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Wait (polling) until stdout holds `text`.
    pub async fn wait_for(&self, text: &str, within: Duration) {
        let t = Instant::now();
        while !self.stdout().contains(text) {
            assert!(
                t.elapsed() < within,
                "`{text}` never came; stdout: {}",
                self.stdout()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A command started as a task: its outcome, what it writes, and the token that stops it.
pub struct Started {
    pub task: tokio::task::JoinHandle<Result<ExecOutcome, SandboxError>>,
    pub rec: Arc<Recorder>,
    pub cancel: CancellationToken,
}

/// Starts `req` in `sb` as a task whose output a [`Recorder`] keeps.
pub fn start(sb: &ContainerSandbox, req: ExecRequest) -> Started {
    let (rec, cancel) = (Arc::new(Recorder::default()), CancellationToken::new());
    let (sb, r, c) = (sb.clone(), rec.clone(), cancel.clone());
    let task = tokio::spawn(async move { sb.exec(req, c, r).await });
    Started { task, rec, cancel }
}
