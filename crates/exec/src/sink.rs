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

/// Receives live output (in the order read, each delivery labelled) and heartbeats.
///
/// `output` is called from the runner's output thread, `heartbeat` from its task: implementations
/// must be quick and must not block (forward into a channel or an event bus). Deliveries are raw
/// bytes and may split UTF-8 characters. Consecutive reads of one stream are coalesced: a delivery
/// holds at most `ExecRequest::live_max_bytes` and comes at the latest `live_interval` after its
/// first byte was read; a read of the other stream, the end of the output and a cancellation
/// deliver what is pending first. Concatenated per stream, the deliveries are the stream's bytes.
pub trait ExecSink: Send + Sync {
    /// A delivery of output.
    fn output(&self, stream: Stream, chunk: &[u8]);
    /// Whether this sink wants live output at all. `false`: `output` is never called and the
    /// runner spends nothing on live output (the capture and the spool are complete either way).
    fn wants_output(&self) -> bool {
        true
    }
    /// The command is still running (every `heartbeat_interval`).
    fn heartbeat(&self);
    /// Who decides about a host on neither network list; `None`: refused
    /// (`aibuddy_netproxy::Refuse`).
    fn network_decider(&self) -> Option<std::sync::Arc<dyn aibuddy_netproxy::Decider>> {
        None
    }
    /// The write end of the command's stdin, once it started (only for a request with
    /// `stdin_piped`). The default drops it: the command reads end of file.
    fn stdin(&self, _pipe: std::os::fd::OwnedFd) {}
}

/// A sink that discards everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl ExecSink for NullSink {
    fn output(&self, _stream: Stream, _chunk: &[u8]) {}
    fn wants_output(&self) -> bool {
        false
    }
    fn heartbeat(&self) {}
}
