//! Live output of `execute`: output and heartbeats forwarded to the event sink.
//!
//! The runner already coalesces reads (one delivery per stream per time slice or 64 KiB, see
//! `ExecRequest::live_interval`/`live_max_bytes`); each delivery becomes one `ToolOutputDelta`.
//! Nothing is decoded or emitted when the event sink does not listen (`EventSink::listening`).

use std::sync::{Arc, Mutex};

use aibuddy_sandbox::aibuddy_exec::netproxy::Decider;
use aibuddy_sandbox::aibuddy_exec::{ExecSink, Stream};

use crate::events::{Event, EventSink, OutputStream};

/// Forwards live output and heartbeats to the event sink. Deliveries are decoded as UTF-8 once,
/// straight from the runner's buffer, with an incomplete character at the end carried (at most 3
/// bytes) to the next delivery of the same stream, so characters split by reads arrive whole; the
/// concatenated text of a stream is `String::from_utf8_lossy` of its bytes.
pub(super) struct EventBridge {
    call_id: String,
    events: Arc<dyn EventSink>,
    listening: bool,
    /// The sink takes raw bytes (`EventSink::wants_raw_output`): nothing is decoded here.
    raw: bool,
    carry: Mutex<[Vec<u8>; 2]>,
    /// Who decides about hosts on no network list (`None`: refused, the runner's default).
    decider: Option<Arc<dyn Decider>>,
}

fn output_stream(stream: Stream) -> OutputStream {
    match stream {
        Stream::Stdout => OutputStream::Stdout,
        Stream::Stderr => OutputStream::Stderr,
    }
}

impl EventBridge {
    pub(super) fn new(call_id: &str, events: Arc<dyn EventSink>) -> Self {
        let listening = events.listening();
        let raw = listening && events.wants_raw_output();
        Self {
            call_id: call_id.to_string(),
            events,
            listening,
            raw,
            carry: Mutex::new([Vec::new(), Vec::new()]),
            decider: None,
        }
    }

    /// The bridge with `decider` answering for hosts on no network list.
    pub(super) fn with_decider(mut self, decider: Arc<dyn Decider>) -> Self {
        self.decider = Some(decider);
        self
    }

    fn emit(&self, stream: Stream, text: String) {
        if text.is_empty() {
            return;
        }
        self.events.emit(Event::ToolOutputDelta {
            call_id: self.call_id.clone(),
            stream: output_stream(stream),
            chunk: text,
        });
    }

    /// Emits whatever incomplete bytes remain (lossily) once the command is over.
    pub(super) fn flush(&self) {
        if self.raw {
            self.events.raw_output_end(&self.call_id);
            return;
        }
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

/// Appends the lossy decoding of `bytes` to `out`, except an incomplete (but so far valid)
/// character at the very end; returns that tail's length (0..=3). One pass, no copy beyond `out`.
pub fn decode_into(out: &mut String, bytes: &[u8]) -> usize {
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        out.push_str(chunk.valid());
        let invalid = chunk.invalid();
        if invalid.is_empty() {
            continue;
        }
        // `from_utf8` tells an incomplete sequence cut by the end of the input (error_len None)
        // from bytes that can never be valid.
        let incomplete = chunks.peek().is_none()
            && std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
        if incomplete {
            return invalid.len();
        }
        out.push(char::REPLACEMENT_CHARACTER);
    }
    0
}

/// Appends `chunk`, preceded by the `carry` of the previous delivery, to `out`; leaves in `carry`
/// the incomplete character at the end of `chunk`. Only `carry` and the few bytes of `chunk` that
/// complete it are copied; the rest is decoded in place.
pub fn decode_continuing(out: &mut String, carry: &mut Vec<u8>, chunk: &[u8]) {
    let mut rest = chunk;
    if !carry.is_empty() {
        // At most 3 carried bytes + 4: the carried character is resolved (completed or found
        // invalid) within this window, unless the chunk is shorter.
        let k = chunk.len().min(4);
        let mut small = std::mem::take(carry);
        small.extend_from_slice(&chunk[..k]);
        let tail = decode_into(out, &small);
        if tail >= k {
            // Nothing of the chunk beyond the carried character: still incomplete (k == len).
            let start = small.len() - tail;
            small.drain(..start);
            *carry = small;
            return;
        }
        // The window's incomplete tail lies inside the chunk: decode it again with the rest.
        rest = &chunk[k - tail..];
    }
    let tail = decode_into(out, rest);
    carry.clear();
    carry.extend_from_slice(&rest[rest.len() - tail..]);
}

/// Splits `bytes` into decoded text and an incomplete UTF-8 tail (at most 3 bytes) to carry.
pub fn decode_carrying(bytes: &[u8]) -> (String, Vec<u8>) {
    let mut text = String::with_capacity(bytes.len());
    let tail = decode_into(&mut text, bytes);
    (text, bytes[bytes.len() - tail..].to_vec())
}

impl ExecSink for EventBridge {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        if !self.listening {
            return;
        }
        if self.raw {
            self.events
                .raw_output(&self.call_id, output_stream(stream), chunk);
            return;
        }
        let idx = usize::from(stream == Stream::Stderr);
        let mut text = String::with_capacity(chunk.len() + 3);
        match self.carry.lock() {
            Ok(mut carry) => decode_continuing(&mut text, &mut carry[idx], chunk),
            Err(_) => text = String::from_utf8_lossy(chunk).into_owned(),
        }
        self.emit(stream, text);
    }

    fn wants_output(&self) -> bool {
        self.listening
    }

    fn heartbeat(&self) {
        self.events.emit(Event::Heartbeat {
            call_id: self.call_id.clone(),
        });
    }

    fn network_decider(&self) -> Option<Arc<dyn Decider>> {
        self.decider.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{CollectingSink, NullSink};

    /// Valid text with 1- to 4-byte characters, invalid bytes, a surrogate, a truncated sequence.
    const MIXED: &[u8] =
        b"a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xff\xc3(\xed\xa0\x80\xe2\x82 z\xf0\x9f\x98";

    fn through(bytes: &[u8], cuts: &[usize]) -> String {
        let (mut text, mut carry, mut at) = (String::new(), Vec::new(), 0);
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            decode_continuing(&mut text, &mut carry, &bytes[at..cut]);
            at = cut;
        }
        text.push_str(&String::from_utf8_lossy(&carry));
        text
    }

    #[test]
    fn any_split_decodes_like_the_whole_stream() {
        let want = String::from_utf8_lossy(MIXED).into_owned();
        for a in 0..=MIXED.len() {
            for b in a..=MIXED.len() {
                assert_eq!(through(MIXED, &[a, b]), want, "cuts at {a} and {b}");
            }
        }
        // Byte by byte.
        let every: Vec<usize> = (1..MIXED.len()).collect();
        assert_eq!(through(MIXED, &every), want);
    }

    #[test]
    fn only_an_incomplete_character_is_carried() {
        let (text, carry) = decode_carrying("x\u{e9}".as_bytes());
        assert_eq!((text.as_str(), carry.len()), ("x\u{e9}", 0));
        let (text, carry) = decode_carrying(b"x\xf0\x9f\x98");
        assert_eq!(
            (text.as_str(), carry.as_slice()),
            ("x", &b"\xf0\x9f\x98"[..])
        );
        // Bytes that can never become valid are replaced at once, not carried.
        let (text, carry) = decode_carrying(b"x\xed\xa0");
        assert_eq!((text.as_str(), carry.len()), ("x\u{fffd}\u{fffd}", 0));
    }

    #[test]
    fn the_bridge_emits_one_delta_per_delivery_and_nothing_without_a_listener() {
        let events = CollectingSink::new();
        let bridge = EventBridge::new("c1", events.clone());
        assert!(bridge.wants_output());
        bridge.output(Stream::Stdout, b"caf\xc3");
        bridge.output(Stream::Stderr, b"err");
        bridge.output(Stream::Stdout, b"\xa9!");
        bridge.flush();
        let got: Vec<(OutputStream, String)> = events
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Event::ToolOutputDelta { stream, chunk, .. } => Some((stream, chunk)),
                _ => None,
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (OutputStream::Stdout, "caf".to_string()),
                (OutputStream::Stderr, "err".to_string()),
                (OutputStream::Stdout, "\u{e9}!".to_string()),
            ]
        );

        let deaf = EventBridge::new("c2", Arc::new(NullSink));
        assert!(!deaf.wants_output());
        deaf.output(Stream::Stdout, b"ignored");
        assert!(deaf.carry.lock().unwrap()[0].is_empty());
    }
}
