//! A sink that keeps what it is given and says when some text has appeared.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aibuddy_sandbox::aibuddy_exec::{ExecSink, Stream};

#[derive(Default)]
pub struct Recorder {
    pub out: Mutex<Vec<u8>>,
    pub err: Mutex<Vec<u8>>,
    pub beats: AtomicUsize,
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
}

impl Recorder {
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
