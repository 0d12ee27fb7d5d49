//! The output ring of one background process and the bounded text of a read (pure).
//!
//! The ring keeps the last [`RING_BYTES`] bytes of the combined output (stdout and stderr in the
//! order read, as the spool holds them) and counts every byte ever pushed, so a position is an
//! absolute byte offset in the process's output: the same offset `view_tool_call` takes on its
//! stored record.

use std::collections::VecDeque;

/// Bytes of output kept in memory per process.
pub const RING_BYTES: usize = 1024 * 1024;
/// Bytes of new output one read shows at most (head and tail of what is new); the model text
/// stays within `execute`'s 30,000 characters.
pub const READ_SHOW_BYTES: usize = 24_000;

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

/// The model's text of a read: the new output (its head and tail when it is longer than
/// [`READ_SHOW_BYTES`]), and where the bytes it leaves out can be read (`record_id`: the stored
/// call holding the process's output, when there is one).
pub fn read_text(read: &Read, record_id: Option<&str>) -> String {
    let mut out = String::new();
    let recover = |from: u64, n: u64| match record_id {
        Some(id) => format!(
            "read them with view_tool_call {{\"tool_call_id\": \"{id}\", \"offset\": {from}, \"limit\": {}}} and page on with its next_offset",
            n.min(crate::tools::view_tool_call::MAX_LIMIT)
        ),
        None => "they are not stored".to_string(),
    };
    if read.dropped > 0 {
        out.push_str(&format!(
            "[{} earlier bytes (output bytes {}..{}) left the in-memory buffer before this read; {}]\n",
            read.dropped,
            read.from,
            read.from + read.dropped,
            recover(read.from, read.dropped)
        ));
    }
    let held_from = read.from + read.dropped;
    let bytes = &read.bytes;
    if bytes.len() <= READ_SHOW_BYTES {
        out.push_str(&String::from_utf8_lossy(bytes));
        return out;
    }
    let half = READ_SHOW_BYTES / 2;
    let head_end = char_boundary(bytes, half);
    let tail_start = char_boundary(bytes, bytes.len() - half);
    let omitted = (tail_start - head_end) as u64;
    let from = held_from + head_end as u64;
    out.push_str(&String::from_utf8_lossy(&bytes[..head_end]));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[... {omitted} bytes omitted (output bytes {from}..{}); {} ...]\n",
        from + omitted,
        recover(from, omitted)
    ));
    out.push_str(&String::from_utf8_lossy(&bytes[tail_start..]));
    out
}

/// The first index at or after `i` that does not start inside a UTF-8 sequence (at most 3 on).
fn char_boundary(bytes: &[u8], i: usize) -> usize {
    let mut i = i.min(bytes.len());
    let limit = (i + 3).min(bytes.len());
    while i < limit && (0x80..0xC0).contains(&bytes[i]) {
        i += 1;
    }
    i
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

    #[test]
    fn a_long_read_shows_head_and_tail_and_names_the_range() {
        let mut r = Ring::default();
        let data: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        r.push(&data);
        let text = read_text(&r.read_from(0), Some("run:bg-1"));
        assert!(text.len() < 30_000, "{}", text.len());
        let (from, to) = (12_000u64, 100_000u64 - 12_000);
        assert!(text.contains(&format!(
            "[... {} bytes omitted (output bytes {from}..{to}); read them with view_tool_call {{\"tool_call_id\": \"run:bg-1\", \"offset\": {from}, \"limit\": 30000}}",
            to - from
        )), "{text}");
        assert!(text.starts_with(std::str::from_utf8(&data[..100]).unwrap()));
        assert!(text.ends_with(std::str::from_utf8(&data[data.len() - 100..]).unwrap()));
    }
}
