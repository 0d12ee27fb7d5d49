//! Live output of `execute`: chunks and heartbeats forwarded to the event sink.

use std::sync::{Arc, Mutex};

use aibuddy_sandbox::aibuddy_exec::{ExecSink, Stream};

use crate::events::{Event, EventSink, OutputStream};

/// Forwards live output and heartbeats to the event sink. Chunks are decoded as UTF-8 with the
/// incomplete tail of a chunk carried to the next one of the same stream, so characters split by
/// pipe reads arrive whole.
pub(super) struct EventBridge {
    call_id: String,
    events: Arc<dyn EventSink>,
    carry: Mutex<[Vec<u8>; 2]>,
}

impl EventBridge {
    pub(super) fn new(call_id: &str, events: Arc<dyn EventSink>) -> Self {
        Self {
            call_id: call_id.to_string(),
            events,
            carry: Mutex::new([Vec::new(), Vec::new()]),
        }
    }

    fn emit(&self, stream: Stream, text: String) {
        if text.is_empty() {
            return;
        }
        self.events.emit(Event::ToolOutputDelta {
            call_id: self.call_id.clone(),
            stream: match stream {
                Stream::Stdout => OutputStream::Stdout,
                Stream::Stderr => OutputStream::Stderr,
            },
            chunk: text,
        });
    }

    /// Emits whatever incomplete bytes remain (lossily) once the command is over.
    pub(super) fn flush(&self) {
        let rest = match self.carry.lock() {
            Ok(mut c) => [std::mem::take(&mut c[0]), std::mem::take(&mut c[1])],
            Err(_) => return,
        };
        self.emit(
            Stream::Stdout,
            String::from_utf8_lossy(&rest[0]).into_owned(),
        );
        self.emit(
            Stream::Stderr,
            String::from_utf8_lossy(&rest[1]).into_owned(),
        );
    }
}

/// Splits `bytes` into decoded text and an incomplete UTF-8 tail (at most 3 bytes) to carry.
pub fn decode_carrying(bytes: &[u8]) -> (String, Vec<u8>) {
    let mut keep = 0;
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if (0x80..0xC0).contains(&b) {
            continue;
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 0,
        };
        if need > back {
            keep = back;
        }
        break;
    }
    let (text, rest) = bytes.split_at(bytes.len() - keep);
    (String::from_utf8_lossy(text).into_owned(), rest.to_vec())
}

impl ExecSink for EventBridge {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        let idx = usize::from(stream == Stream::Stderr);
        let text = match self.carry.lock() {
            Ok(mut carry) => {
                let mut bytes = std::mem::take(&mut carry[idx]);
                bytes.extend_from_slice(chunk);
                let (text, rest) = decode_carrying(&bytes);
                carry[idx] = rest;
                text
            }
            Err(_) => String::from_utf8_lossy(chunk).into_owned(),
        };
        self.emit(stream, text);
    }

    fn heartbeat(&self) {
        self.events.emit(Event::Heartbeat {
            call_id: self.call_id.clone(),
        });
    }
}
