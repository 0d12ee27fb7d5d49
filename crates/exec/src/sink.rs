//! [`ExecSink`]: where live output and heartbeats go while a command runs.

use serde::{Deserialize, Serialize};

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Receives live output (chunk by chunk, in the order read, each labelled) and heartbeats.
///
/// Called from the runner's task: implementations must be quick and must not block
/// (forward into a channel or an event bus). Chunks are raw bytes and may split UTF-8 characters.
pub trait ExecSink: Send + Sync {
    /// A chunk of output, exactly as read from the pipe.
    fn output(&self, stream: Stream, chunk: &[u8]);
    /// The command is still running (every `heartbeat_interval`).
    fn heartbeat(&self);
}

/// A sink that discards everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl ExecSink for NullSink {
    fn output(&self, _stream: Stream, _chunk: &[u8]) {}
    fn heartbeat(&self) {}
}
