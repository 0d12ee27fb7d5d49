//! A snapshot's tree manifest: every entry the walk kept (files, symlinks, directories), with
//! the stat fields of the stat cache and the object id of its content, plus the entries seen but
//! not checkpointed (`Kind::Skipped`, with the reason). A manifest is itself an object of the
//! store; its id names the snapshot.
//!
//! Encoding: a header line `aibuddy-manifest 1\n`, then one record per entry,
//! sorted by path bytes: `<kind> <mode octal> <size> <mtime_ns> <ctime_ns> <ino> <hash|-> <skip|-> <path>\0`
//! (the path last, so it may hold spaces and newlines; it never holds a NUL).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{CheckpointError, Result};

const MAGIC: &str = "aibuddy-manifest 1";

/// Why an entry of the tree was seen but not checkpointed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Larger than the size cap.
    TooLarge,
    /// A fifo, socket or device.
    Special,
    /// Could not be read (permission denied, or it changed kind while read).
    Unreadable,
}

impl SkipReason {
    fn code(self) -> &'static str {
        match self {
            SkipReason::TooLarge => "large",
            SkipReason::Special => "special",
            SkipReason::Unreadable => "unreadable",
        }
    }

    fn from_code(s: &str) -> Option<Self> {
        Some(match s {
            "large" => SkipReason::TooLarge,
            "special" => SkipReason::Special,
            "unreadable" => SkipReason::Unreadable,
            _ => return None,
        })
    }

    /// The sentence previews show.
    pub fn describe(self, max_file_bytes: u64) -> String {
        match self {
            SkipReason::TooLarge => {
                format!("larger than the checkpoint size cap ({max_file_bytes} bytes)")
            }
            SkipReason::Special => "a special file (fifo, socket or device)".into(),
            SkipReason::Unreadable => "could not be read".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Symlink,
    Dir,
    Skipped(SkipReason),
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Dir => "dir",
            Kind::Skipped(_) => "skipped",
        }
    }
}

/// One path of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    /// The object holding the content (a symlink's target bytes); empty for directories and
    /// skipped entries.
    pub hash: String,
}

impl Entry {
    /// Permission bits kept and restored (no set-id bits: a rewind never makes a set-id file).
    pub fn perm(&self) -> u32 {
        self.mode & 0o777
    }

    /// Whether two entries hold the same state a rewind would restore: kind, content and
    /// permission bits (symlink permissions mean nothing on Linux). Skipped entries compare
    /// by size and mtime, the only thing known of them.
    pub fn same_state(&self, other: &Entry) -> bool {
        match (self.kind, other.kind) {
            (Kind::File, Kind::File) => self.hash == other.hash && self.perm() == other.perm(),
            (Kind::Symlink, Kind::Symlink) => self.hash == other.hash,
            (Kind::Dir, Kind::Dir) => self.perm() == other.perm(),
            (Kind::Skipped(a), Kind::Skipped(b)) => {
                a == b && self.size == other.size && self.mtime_ns == other.mtime_ns
            }
            _ => false,
        }
    }

    /// Whether the stat fields match (the stat cache's test).
    pub fn same_stat(&self, other: &Entry) -> bool {
        self.mode == other.mode
            && self.size == other.size
            && self.mtime_ns == other.mtime_ns
            && self.ctime_ns == other.ctime_ns
            && self.ino == other.ino
    }
}

/// Whether two optional entries (absent = `None`) hold the same state.
pub fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_state(b),
        _ => false,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// When the walk started (ns since the epoch): entries changed this close to it are not
    /// trusted by the next snapshot's stat cache. Not encoded (an unchanged tree keeps its id):
    /// the store keeps it in `HEAD`.
    pub taken_at_ns: i64,
    pub entries: BTreeMap<PathBuf, Entry>,
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        use std::io::Write;
        let mut out = Vec::with_capacity(64 + self.entries.len() * 160);
        out.extend_from_slice(MAGIC.as_bytes());
        out.push(b'\n');
        for (path, e) in &self.entries {
            let (kind, skip) = match e.kind {
                Kind::File => ('f', "-"),
                Kind::Symlink => ('l', "-"),
                Kind::Dir => ('d', "-"),
                Kind::Skipped(r) => ('s', r.code()),
            };
            let hash = if e.hash.is_empty() { "-" } else { &e.hash };
            // Writing to a Vec cannot fail.
            let _ = write!(
                out,
                "{kind} {:o} {} {} {} {} {hash} {skip} ",
                e.mode, e.size, e.mtime_ns, e.ctime_ns, e.ino
            );
            out.extend_from_slice(path.as_os_str().as_bytes());
            out.push(0);
        }
        out
    }

    pub fn decode(id: &str, bytes: &[u8]) -> Result<Manifest> {
        let bad = |reason: &str| CheckpointError::BadManifest {
            id: id.to_string(),
            reason: reason.to_string(),
        };
        let nl = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("no header"))?;
        let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| bad("header"))?;
        if header != MAGIC {
            return Err(bad("header"));
        }
        // Records come in the map's own order: collected first, the map is built in one pass
        // (inserting one by one compares paths component by component, log n times each).
        let mut entries = Vec::new();
        let mut rest = &bytes[nl + 1..];
        while !rest.is_empty() {
            let end = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad("unterminated record"))?;
            let rec = &rest[..end];
            rest = &rest[end + 1..];
            let mut fields = rec.splitn(9, |&b| b == b' ');
            let mut next = || {
                fields
                    .next()
                    .and_then(|f| std::str::from_utf8(f).ok())
                    .ok_or_else(|| bad("record"))
            };
            let kind = next()?;
            let mode = u32::from_str_radix(next()?, 8).map_err(|_| bad("mode"))?;
            let size = next()?.parse::<u64>().map_err(|_| bad("size"))?;
            let mtime_ns = next()?.parse::<i64>().map_err(|_| bad("mtime"))?;
            let ctime_ns = next()?.parse::<i64>().map_err(|_| bad("ctime"))?;
            let ino = next()?.parse::<u64>().map_err(|_| bad("ino"))?;
            let hash = match next()? {
                "-" => String::new(),
                h if crate::objects::is_object_id(h) => h.to_string(),
                _ => return Err(bad("hash")),
            };
            let skip = next()?;
            let kind = match kind {
                "f" => Kind::File,
                "l" => Kind::Symlink,
                "d" => Kind::Dir,
                "s" => Kind::Skipped(SkipReason::from_code(skip).ok_or_else(|| bad("skip"))?),
                _ => return Err(bad("kind")),
            };
            // The path is everything after the eighth space (it may hold spaces).
            let path_start = rec
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b' ')
                .nth(7)
                .map(|(i, _)| i + 1)
                .ok_or_else(|| bad("path"))?;
            let path = PathBuf::from(OsStr::from_bytes(&rec[path_start..]));
            if path.as_os_str().is_empty()
                || path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(bad("path"));
            }
            entries.push((
                path,
                Entry {
                    kind,
                    mode,
                    size,
                    mtime_ns,
                    ctime_ns,
                    ino,
                    hash,
                },
            ));
        }
        Ok(Manifest {
            taken_at_ns: 0,
            entries: BTreeMap::from_iter(entries),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_odd_paths() {
        let mut m = Manifest::default();
        for (p, kind) in [
            ("a b/c\nd.txt", Kind::File),
            ("link", Kind::Symlink),
            ("dir", Kind::Dir),
            ("big.bin", Kind::Skipped(SkipReason::TooLarge)),
        ] {
            m.entries.insert(
                PathBuf::from(p),
                Entry {
                    kind,
                    mode: 0o100644,
                    size: 3,
                    mtime_ns: 1,
                    ctime_ns: 2,
                    ino: 3,
                    hash: if matches!(kind, Kind::File | Kind::Symlink) {
                        "a".repeat(64)
                    } else {
                        String::new()
                    },
                },
            );
        }
        let bytes = m.encode();
        assert_eq!(Manifest::decode("x", &bytes).unwrap(), m);
    }

    #[test]
    fn decoding_refuses_paths_that_leave_the_root() {
        for p in ["../x", "/etc/passwd", "a/../../b"] {
            let bytes = format!("{MAGIC}\nf 100644 1 1 1 1 - - {p}\0");
            assert!(Manifest::decode("x", bytes.as_bytes()).is_err(), "{p}");
        }
    }
}
