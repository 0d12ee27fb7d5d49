//! The output ring of one background process (pure); the bounded text of a read is the tools'
//! (`crate::tools::process::read_text`).
//!
//! The ring keeps the last [`RING_BYTES`] bytes of the combined output (stdout and stderr in the
//! order read, as the spool holds them) and counts every byte ever pushed, so a position is an
//! absolute byte offset in the process's output: the same offset `view_tool_call` takes on its
//! stored record.

use std::collections::VecDeque;

/// Bytes of output kept in memory per process.
pub const RING_BYTES: usize = 1024 * 1024;

/// The last bytes of a process's output and how many came before them.
#[derive(Debug)]
pub struct Ring {
    buf: VecDeque<u8>,
    cap: usize,
    total: u64,
}

impl Default for Ring {
    fn default() -> Self {
        Self::with_capacity(RING_BYTES)
    }
}

/// What a read returns: the bytes from the reader's position that the ring still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Absolute offset of the first byte the reader had not seen.
    pub from: u64,
    /// Bytes between `from` and the ring's start that the ring no longer holds.
    pub dropped: u64,
    /// The bytes held, from `from + dropped` to `to`.
    pub bytes: Vec<u8>,
    /// Absolute offset after the last byte (the reader's next position).
    pub to: u64,
}

impl Ring {
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap: cap.max(1),
            total: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(self.cap)..];
        let over = (self.buf.len() + chunk.len()).saturating_sub(self.cap);
        self.buf.drain(..over);
        self.buf.extend(chunk);
    }

    /// Bytes ever pushed.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Everything from absolute offset `from` on.
    pub fn read_from(&self, from: u64) -> Read {
        let start = self.total - self.buf.len() as u64;
        let from = from.min(self.total);
        let dropped = start.saturating_sub(from);
        let skip = usize::try_from(from.saturating_sub(start)).unwrap_or(usize::MAX);
        Read {
            from,
            dropped,
            bytes: self.buf.iter().skip(skip).copied().collect(),
            to: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_absolute_and_say_what_the_ring_dropped() {
        let mut r = Ring::with_capacity(8);
        r.push(b"abcdef");
        assert_eq!(
            r.read_from(0),
            Read {
                from: 0,
                dropped: 0,
                bytes: b"abcdef".to_vec(),
                to: 6
            }
        );
        r.push(b"ghijkl");
        let read = r.read_from(2);
        assert_eq!(
            (read.dropped, read.bytes.as_slice(), read.to),
            (2, &b"efghijkl"[..], 12)
        );
        assert_eq!(r.read_from(12).bytes, Vec::<u8>::new());
        // A chunk larger than the ring keeps its end.
        r.push(&[b'z'; 20]);
        assert_eq!(r.read_from(12).bytes, vec![b'z'; 8]);
        assert_eq!(r.total(), 32);
    }
}
