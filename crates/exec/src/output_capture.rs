//! [`OutputCapture`]: the runner's bounded capture (head, tail ring, capped spool file, per-stream
//! counts) for adapters that read a command's output themselves (the container adapter reads it
//! from the engine's stream), so their outcomes are bounded and projected exactly like a local run.

use std::path::PathBuf;

use crate::capture::{Capture, HeadTail, Spool};
use crate::outcome::{SpoolInfo, StreamStats};
use crate::request::ExecRequest;
use crate::sink::Stream;

/// Combined output kept as the runner keeps it: the first `head_bytes`, the last `tail_bytes`,
/// everything up to `spool_cap` in the spool file.
pub struct OutputCapture(Capture);

/// What an [`OutputCapture`] kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOutput {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub omitted_middle_bytes: u64,
    pub spool: Option<SpoolInfo>,
    pub stdout: StreamStats,
    pub stderr: StreamStats,
}

impl OutputCapture {
    /// The capture `req` asks for (its head, tail, spool path and cap); the spool file is created
    /// (and its folder) when the request names one.
    pub fn for_request(req: &ExecRequest) -> std::io::Result<Self> {
        let spool = match &req.spool_path {
            Some(path) => Some(Spool::create(PathBuf::from(path), req.spool_cap)?),
            None => None,
        };
        Ok(OutputCapture(Capture {
            headtail: HeadTail::new(req.head_bytes, req.tail_bytes),
            spool,
            stdout: StreamStats::default(),
            stderr: StreamStats::default(),
        }))
    }

    /// One read of `stream`.
    pub fn push(&mut self, stream: Stream, chunk: &[u8]) {
        self.0.push(stream, chunk);
    }

    /// Bytes pushed so far over both streams.
    pub fn total_bytes(&self) -> u64 {
        self.0.stdout.total_bytes + self.0.stderr.total_bytes
    }

    pub fn finish(self) -> CapturedOutput {
        let c = self.0.finish();
        CapturedOutput {
            head: c.head,
            tail: c.tail,
            omitted_middle_bytes: c.omitted_middle_bytes,
            spool: c.spool,
            stdout: c.stdout,
            stderr: c.stderr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_and_counts_streams() {
        let mut req = ExecRequest::new("x", "/");
        req.head_bytes = 4;
        req.tail_bytes = 3;
        let mut c = OutputCapture::for_request(&req).unwrap();
        c.push(Stream::Stdout, b"0123456789");
        c.push(Stream::Stderr, b"ab");
        assert_eq!(c.total_bytes(), 12);
        let out = c.finish();
        assert_eq!(
            (out.head.as_slice(), out.tail.as_slice()),
            (&b"0123"[..], &b"9ab"[..])
        );
        assert_eq!(out.omitted_middle_bytes, 5);
        assert_eq!((out.stdout.total_bytes, out.stderr.total_bytes), (10, 2));
    }
}
