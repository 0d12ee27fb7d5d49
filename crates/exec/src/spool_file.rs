//! The spool file given to the command as its stdout (`ExecRequest::spool_as_stdout`).
//!
//! The command writes its stdout straight into the spool (opened with `O_APPEND`): the kernel
//! copies each byte once, into the page cache, and nothing of ours touches it unless a sink
//! listens. stderr stays a pipe; the pump appends what it reads to the same file through its own
//! open file description (also `O_APPEND`, so every append is atomic and lands after whatever the
//! command wrote before it) and notes where each append landed, which keeps the streams apart:
//! stdout is the file's size minus the stderr appended, and a listener learns which ranges of the
//! file are stderr.
//!
//! The cap: the file may grow past `cap` while the command runs, but what lies between the cap
//! and the last `tail_bytes` is punched out (`fallocate(PUNCH_HOLE)`) as it goes, so the disk holds
//! at most the cap, the tail, and what was written since the last watch (a few ms of output). At
//! the finish the head and tail are read back from the file and the file is cut to the cap: the
//! spool then holds exactly what the pipe path keeps (the first `cap` bytes of the combined
//! output), with the same per-stream counts.
//!
//! Authority: the descriptor lets the command write, truncate and `fchmod` its own spool and
//! nothing else; Landlock also lets it reopen `/dev/stdout` (the same file), so `cmd > /dev/stdout`
//! behaves as with any `sh -c '...' > file`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::capture::Captured;
use crate::outcome::{SpoolInfo, StreamStats};

/// Bytes written below the cap between two writeback starts (as the pipe path's spool).
const WRITEBACK_EVERY: u64 = 8 * 1024 * 1024;
/// Smallest range worth a punch.
const PUNCH_MIN: u64 = 1024 * 1024;

/// A range `[start, end)` of the file written by a stderr append.
pub(crate) type Range = (u64, u64);

pub(crate) struct FileSpool {
    path: PathBuf,
    /// The pump's own description: read + append.
    file: File,
    cap: u64,
    head_bytes: usize,
    tail_bytes: usize,
    /// Punch granularity: the file system's block size.
    block: u64,
    /// stderr bytes read from the pipe.
    stderr_total: u64,
    /// stderr bytes that could not be appended (a failed write: full disk).
    stderr_lost: u64,
    /// stderr bytes appended beyond the cap.
    stderr_beyond_cap: u64,
    /// Everything before this offset (and beyond the cap) has been punched.
    punched_to: u64,
    /// Bytes below the cap whose writeback was started.
    flushed: u64,
}

impl FileSpool {
    /// Creates (or empties) the spool at `path` and returns it with the descriptor to give the
    /// command as its stdout. `Ok(None)` when the file system cannot punch holes (the cap could not
    /// be kept): the caller uses the pipe path.
    pub(crate) fn create(
        path: &Path,
        cap: u64,
        head_bytes: usize,
        tail_bytes: usize,
    ) -> std::io::Result<Option<(Self, File)>> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let child = File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_APPEND)
            .open(path)?;
        let file = File::options().read(true).append(true).open(path)?;
        let meta = file.metadata()?;
        use std::os::unix::fs::MetadataExt;
        let block = meta.blksize().clamp(4096, 1024 * 1024);
        if !punch(&file, 0, block) {
            return Ok(None);
        }
        Ok(Some((
            Self {
                path: path.to_path_buf(),
                file,
                cap,
                head_bytes,
                tail_bytes,
                block,
                stderr_total: 0,
                stderr_lost: 0,
                stderr_beyond_cap: 0,
                punched_to: 0,
                flushed: 0,
            },
            child,
        )))
    }

    pub(crate) fn cap(&self) -> u64 {
        self.cap
    }

    /// The file's current size (everything written so far, holes included).
    pub(crate) fn size(&self) -> u64 {
        self.file.metadata().map(|m| m.len()).unwrap_or(0)
    }

    /// Appends a chunk read from the stderr pipe; returns where it landed (`None`: not written).
    pub(crate) fn append_stderr(&mut self, chunk: &[u8]) -> Option<Range> {
        self.stderr_total += chunk.len() as u64;
        if chunk.is_empty() {
            return None;
        }
        let fd = self.file.as_raw_fd();
        let n = loop {
            // SAFETY: writing from a valid buffer to a descriptor we own.
            let n = unsafe { libc::write(fd, chunk.as_ptr().cast(), chunk.len()) };
            if n >= 0 {
                break n as usize;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::warn!(path = %self.path.display(), error = %e, "spool append failed");
                break 0;
            }
        };
        self.stderr_lost += (chunk.len() - n) as u64;
        if n == 0 {
            return None;
        }
        // With O_APPEND the description's offset is the end of this write, whatever the command
        // appended before it (its own description is another one).
        // SAFETY: lseek on a descriptor we own.
        let end = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
        let Ok(end) = u64::try_from(end) else {
            self.stderr_lost += n as u64;
            return None;
        };
        let start = end.saturating_sub(n as u64);
        self.stderr_beyond_cap += end.saturating_sub(start.max(self.cap));
        Some((start, end))
    }

    /// Reads at `offset` into `buf`; the bytes read (0 at the end of the file).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> usize {
        use std::os::unix::fs::FileExt;
        loop {
            match self.file.read_at(buf, offset) {
                Ok(n) => return n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "spool read failed");
                    return 0;
                }
            }
        }
    }

    /// Keeps the disk bounded and the final fsync short: starts the writeback of new bytes below
    /// the cap, and punches what lies between the cap (or the head) and the tail. `keep_from`: a
    /// listener has not read past this offset yet (nothing from there on is punched).
    pub(crate) fn maintain(&mut self, size: u64, keep_from: Option<u64>) {
        let below_cap = size.min(self.cap);
        if below_cap >= self.flushed + WRITEBACK_EVERY {
            start_writeback(&self.file, self.flushed, below_cap - self.flushed);
            self.flushed = below_cap;
        }
        // A command that truncated its stdout (`> /dev/stdout`) rewrote the file.
        self.punched_to = self.punched_to.min(size);
        self.flushed = self.flushed.min(size);
        if size <= self.cap {
            return;
        }
        let lo = self
            .punched_to
            .max(self.cap)
            .max(self.head_bytes as u64)
            .next_multiple_of(self.block);
        let mut hi = size.saturating_sub(self.tail_bytes as u64);
        if let Some(k) = keep_from {
            hi = hi.min(k);
        }
        let hi = hi - hi % self.block;
        if hi >= lo + PUNCH_MIN && punch(&self.file, lo, hi - lo) {
            self.punched_to = hi;
        }
    }

    /// Head and tail read back, the file cut to the cap, and the counts per stream.
    pub(crate) fn finish(self) -> Captured {
        let size = self.size();
        let head_len = size.min(self.head_bytes as u64);
        let mut head = vec![0u8; head_len as usize];
        let got = read_full(&self, &mut head, 0);
        head.truncate(got);
        let head_len = got as u64;
        let tail_start = head_len.max(size.saturating_sub(self.tail_bytes as u64));
        let mut tail = vec![0u8; (size - tail_start.min(size)) as usize];
        let got = read_full(&self, &mut tail, tail_start);
        tail.truncate(got);
        let omitted_middle_bytes = size.saturating_sub(head_len + tail.len() as u64);

        let beyond = size.saturating_sub(self.cap);
        if beyond > 0
            && let Err(e) = self.file.set_len(self.cap)
        {
            tracing::warn!(path = %self.path.display(), error = %e, "could not cut the spool to its cap");
        }
        let appended = self.stderr_total - self.stderr_lost;
        let stderr_beyond = self.stderr_beyond_cap.min(beyond);
        let stdout = StreamStats {
            total_bytes: size.saturating_sub(appended),
            spool_omitted_bytes: beyond - stderr_beyond,
        };
        let stderr = StreamStats {
            total_bytes: self.stderr_total,
            spool_omitted_bytes: stderr_beyond + self.stderr_lost,
        };
        Captured {
            head,
            tail,
            omitted_middle_bytes,
            spool: Some(SpoolInfo {
                path: self.path,
                written_bytes: size.min(self.cap),
                omitted_bytes: stdout.spool_omitted_bytes + stderr.spool_omitted_bytes,
            }),
            stdout,
            stderr,
        }
    }
}

fn read_full(spool: &FileSpool, buf: &mut [u8], offset: u64) -> usize {
    let mut got = 0;
    while got < buf.len() {
        let n = spool.read_at(&mut buf[got..], offset + got as u64);
        if n == 0 {
            break;
        }
        got += n;
    }
    got
}

/// Punches `[offset, offset + len)` out of the file (size kept); `false` when the file system
/// cannot.
#[cfg(target_os = "linux")]
fn punch(file: &File, offset: u64, len: u64) -> bool {
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return false;
    };
    // SAFETY: fallocate on a descriptor we own; it reads no user memory.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            len,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "spool hole not punched");
    }
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn punch(_file: &File, _offset: u64, _len: u64) -> bool {
    false
}

/// Starts (does not wait for) the writeback of a range. Best effort.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, from: u64, len: u64) {
    if let (Ok(from), Ok(len)) = (i64::try_from(from), i64::try_from(len)) {
        // SAFETY: sync_file_range on a descriptor we own; it reads no user memory.
        let rc = unsafe {
            libc::sync_file_range(file.as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        if rc != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "spool writeback not started");
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _from: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn spool(dir: &Path, cap: u64, head: usize, tail: usize) -> (FileSpool, File) {
        match FileSpool::create(&dir.join("out.log"), cap, head, tail) {
            Ok(Some(s)) => s,
            other => panic!("this machine's temp dir punches holes: {:?}", other.err()),
        }
    }

    #[test]
    fn streams_are_told_apart_and_the_file_is_cut_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, mut child) = spool(dir.path(), 10, 4, 3);
        child.write_all(b"abcdef").unwrap();
        assert_eq!(s.append_stderr(b"XYZ"), Some((6, 9)));
        child.write_all(b"ghij").unwrap();
        assert_eq!(s.append_stderr(b"Q"), Some((13, 14)));
        s.maintain(s.size(), None);
        let c = s.finish();
        // abcdefXYZghijQ: 14 bytes, cap 10 keeps abcdefXYZg.
        assert_eq!(c.head, b"abcd");
        assert_eq!(c.tail, b"ijQ");
        assert_eq!(c.omitted_middle_bytes, 7);
        assert_eq!(c.stdout.total_bytes, 10);
        assert_eq!(c.stderr.total_bytes, 4);
        assert_eq!(c.stdout.spool_omitted_bytes, 3);
        assert_eq!(c.stderr.spool_omitted_bytes, 1);
        let info = c.spool.unwrap();
        assert_eq!((info.written_bytes, info.omitted_bytes), (10, 4));
        assert_eq!(
            std::fs::read(dir.path().join("out.log")).unwrap(),
            b"abcdefXYZg"
        );
    }

    #[test]
    fn the_middle_beyond_the_cap_is_punched_but_never_the_tail_or_unread_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cap = 1024 * 1024;
        let (mut s, mut child) = spool(dir.path(), cap, 1000, 5000);
        let data: Vec<u8> = (0..8 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        child.write_all(&data).unwrap();
        // A listener still at 3 MiB keeps everything from there.
        s.maintain(s.size(), Some(3 * 1024 * 1024));
        let mut b = [0u8; 16];
        assert_eq!(s.read_at(&mut b, 3 * 1024 * 1024), 16);
        assert_eq!(&b, &data[3 * 1024 * 1024..3 * 1024 * 1024 + 16]);
        assert_eq!(s.read_at(&mut b, cap + 4096), 16);
        assert_eq!(b, [0u8; 16], "punched");
        s.maintain(s.size(), None);
        let c = s.finish();
        assert_eq!(c.head, &data[..1000]);
        assert_eq!(c.tail, &data[data.len() - 5000..]);
        assert_eq!(c.stdout.total_bytes, data.len() as u64);
        assert_eq!(c.stdout.spool_omitted_bytes, data.len() as u64 - cap);
        let kept = std::fs::read(dir.path().join("out.log")).unwrap();
        assert_eq!(kept, &data[..cap as usize]);
    }

    #[test]
    fn a_truncated_stdout_keeps_counts_sane() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, mut child) = spool(dir.path(), 100, 10, 10);
        child.write_all(b"0123456789").unwrap();
        s.append_stderr(b"err");
        child.set_len(0).unwrap();
        child.write_all(b"new").unwrap();
        let c = s.finish();
        assert_eq!(c.head, b"new");
        assert_eq!(c.stdout.total_bytes, 0);
        assert_eq!(c.stderr.total_bytes, 3);
    }
}
