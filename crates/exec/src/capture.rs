//! Bounded capture of a command's output: a head buffer, a tail ring, and a capped spool file.
//!
//! Memory stays at `head_cap + tail_cap` bytes whatever the output size.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::outcome::{SpoolInfo, StreamStats};
use crate::sink::Stream;

/// The first `head_cap` bytes and the last (at most) `tail_cap` bytes after them. The tail is a
/// ring written with slice copies (at most `tail_cap` bytes copied per push, whatever its size).
#[derive(Debug)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    head_cap: usize,
    /// Grows to `tail_cap`, then is overwritten in place from `ring_pos`.
    ring: Vec<u8>,
    ring_pos: usize,
    tail_cap: usize,
    /// Bytes pushed.
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            head_cap,
            ring: Vec::with_capacity(tail_cap.min(64 * 1024)),
            ring_pos: 0,
            tail_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.is_empty() || self.tail_cap == 0 {
            return;
        }
        if chunk.len() >= self.tail_cap {
            self.ring.clear();
            self.ring
                .extend_from_slice(&chunk[chunk.len() - self.tail_cap..]);
            self.ring_pos = 0;
            return;
        }
        // Filling up: append what fits.
        let fill = (self.tail_cap - self.ring.len()).min(chunk.len());
        if fill > 0 {
            self.ring.extend_from_slice(&chunk[..fill]);
            chunk = &chunk[fill..];
        }
        // Full: overwrite the oldest bytes, wrapping once at most (chunk < tail_cap).
        while !chunk.is_empty() {
            let n = (self.tail_cap - self.ring_pos).min(chunk.len());
            self.ring[self.ring_pos..self.ring_pos + n].copy_from_slice(&chunk[..n]);
            self.ring_pos = (self.ring_pos + n) % self.tail_cap;
            chunk = &chunk[n..];
        }
    }

    /// (head, tail, omitted middle bytes).
    pub(crate) fn finish(mut self) -> (Vec<u8>, Vec<u8>, u64) {
        self.ring.rotate_left(self.ring_pos);
        let kept = (self.head.len() + self.ring.len()) as u64;
        (self.head, self.ring, self.total - kept)
    }
}

/// Bytes written to the spool between two writeback starts ([`Spool::start_writeback`]).
const WRITEBACK_EVERY: u64 = 8 * 1024 * 1024;

/// Raw combined output written to a file up to a cap; beyond it bytes are only counted.
/// Each chunk is written straight through (no user-space buffer), so when the process dies, even by
/// `kill -9`, everything read so far is in the file for the next start to attach as partial output.
///
/// Every [`WRITEBACK_EVERY`] bytes the kernel is asked to start writing the new range to disk
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, asynchronous): the store's `fsync` when the call
/// finishes then waits only for the last few MiB instead of the whole file (a 256 MiB spool cost
/// ~0.3-0.6 s of wall time there). Durability is unchanged: nothing is promised before that fsync.
pub(crate) struct Spool {
    path: PathBuf,
    writer: Option<File>,
    cap: u64,
    written: u64,
    omitted: u64,
    /// Bytes whose writeback was already started.
    flushed: u64,
}

impl Spool {
    pub(crate) fn create(path: PathBuf, cap: u64) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(Self {
            path,
            writer: Some(file),
            cap,
            written: 0,
            omitted: 0,
            flushed: 0,
        })
    }

    /// Writes what fits under the cap; returns how many bytes were omitted from this chunk.
    pub(crate) fn write(&mut self, chunk: &[u8]) -> u64 {
        let room = self.cap.saturating_sub(self.written);
        let take = (room.min(chunk.len() as u64)) as usize;
        if take > 0 {
            if let Some(w) = self.writer.as_mut() {
                if let Err(e) = w.write_all(&chunk[..take]) {
                    // A full disk must not fail the command: stop spooling, count the rest as omitted.
                    tracing::warn!(path = %self.path.display(), error = %e, "spool write failed; spooling stops");
                    self.writer = None;
                    self.omitted += chunk.len() as u64;
                    return chunk.len() as u64;
                }
                self.written += take as u64;
                if self.written - self.flushed >= WRITEBACK_EVERY {
                    self.start_writeback();
                }
            } else {
                self.omitted += chunk.len() as u64;
                return chunk.len() as u64;
            }
        }
        let omitted = (chunk.len() - take) as u64;
        self.omitted += omitted;
        omitted
    }

    /// Starts (does not wait for) the writeback of the bytes written since the last start. Best
    /// effort: a file system without it just leaves the whole work to the final fsync.
    fn start_writeback(&mut self) {
        let Some(w) = self.writer.as_ref() else {
            return;
        };
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.flushed, self.written - self.flushed);
            if let (Ok(from), Ok(len)) = (i64::try_from(from), i64::try_from(len)) {
                // SAFETY: sync_file_range on a descriptor we own; it reads no user memory.
                let rc = unsafe {
                    libc::sync_file_range(w.as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE)
                };
                if rc != 0 {
                    tracing::debug!(error = %std::io::Error::last_os_error(), "spool writeback not started");
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = w;
        self.flushed = self.written;
    }

    pub(crate) fn finish(mut self) -> SpoolInfo {
        if let Some(mut w) = self.writer.take()
            && let Err(e) = w.flush()
        {
            tracing::warn!(path = %self.path.display(), error = %e, "spool flush failed");
        }
        SpoolInfo {
            path: self.path,
            written_bytes: self.written,
            omitted_bytes: self.omitted,
        }
    }
}

/// Everything the reader loop accumulates.
pub(crate) struct Capture {
    pub(crate) headtail: HeadTail,
    pub(crate) spool: Option<Spool>,
    pub(crate) stdout: StreamStats,
    pub(crate) stderr: StreamStats,
}

/// A finished capture: head, tail, and what was counted and spooled.
pub(crate) struct Captured {
    pub(crate) head: Vec<u8>,
    pub(crate) tail: Vec<u8>,
    pub(crate) omitted_middle_bytes: u64,
    pub(crate) spool: Option<SpoolInfo>,
    pub(crate) stdout: StreamStats,
    pub(crate) stderr: StreamStats,
}

impl Capture {
    /// Head, tail and the spool's summary.
    pub(crate) fn finish(self) -> Captured {
        let (head, tail, omitted_middle_bytes) = self.headtail.finish();
        Captured {
            head,
            tail,
            omitted_middle_bytes,
            spool: self.spool.map(Spool::finish),
            stdout: self.stdout,
            stderr: self.stderr,
        }
    }

    pub(crate) fn push(&mut self, stream: Stream, chunk: &[u8]) {
        self.headtail.push(chunk);
        let omitted = self.spool.as_mut().map_or(0, |s| s.write(chunk));
        let stats = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        stats.total_bytes += chunk.len() as u64;
        stats.spool_omitted_bytes += omitted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(ht: &mut HeadTail, data: &[u8], chunk: usize) {
        for c in data.chunks(chunk.max(1)) {
            ht.push(c);
        }
    }

    #[test]
    fn head_tail_match_a_reference_for_many_chunkings() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for (h, t) in [
            (0, 0),
            (10, 0),
            (0, 10),
            (100, 100),
            (5000, 5000),
            (6000, 6000),
        ] {
            for chunk in [1, 7, 100, 4096, 4999, 5000, 5001, 10_000] {
                let mut ht = HeadTail::new(h, t);
                feed(&mut ht, &data, chunk);
                let (head, tail, omitted) = ht.finish();
                let hl = h.min(data.len());
                let tl = t.min(data.len() - hl);
                assert_eq!(head, &data[..hl], "h={h} t={t} c={chunk}");
                assert_eq!(tail, &data[data.len() - tl..], "h={h} t={t} c={chunk}");
                assert_eq!(omitted as usize, data.len() - hl - tl);
            }
        }
    }

    #[test]
    fn spool_stops_at_cap_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut s = Spool::create(path.clone(), 10).unwrap();
        assert_eq!(s.write(b"123456"), 0);
        assert_eq!(s.write(b"7890ab"), 2);
        assert_eq!(s.write(b"cd"), 2);
        let info = s.finish();
        assert_eq!((info.written_bytes, info.omitted_bytes), (10, 4));
        assert_eq!(std::fs::read(path).unwrap(), b"1234567890");
    }
}
