//! What the container holds, as last seen (pure data): one [`Node`] per project-relative path,
//! and this machine's side of each path with the `stat` it was hashed at (so an unchanged file
//! is not read again).

use std::collections::{BTreeMap, HashMap, HashSet};

use sha2::{Digest, Sha256};

/// A project-relative path: `/`-joined components, never empty, no `.` or `..` (bytes: names
/// need not be UTF-8).
pub(crate) type Rel = Vec<u8>;

/// One path's content, compared across the two sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Dir,
    File {
        size: u64,
        hash: [u8; 32],
        /// Any execute bit set.
        exec: bool,
    },
    Link {
        target: Vec<u8>,
    },
}

impl Node {
    pub(crate) fn is_dir(&self) -> bool {
        matches!(self, Node::Dir)
    }

    pub(crate) fn same_kind(&self, other: &Node) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// A file's `stat` as far as "changed since it was hashed" goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
    pub mode: u32,
}

impl Fingerprint {
    pub(crate) fn of(st: &rustix::fs::Stat) -> Self {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Fingerprint {
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec as i64),
            ino: st.st_ino,
            mode: st.st_mode,
        }
    }
}

/// The sync state of one container.
#[derive(Debug, Clone, Default)]
pub(crate) struct Manifest {
    /// What the container holds, as last seen.
    pub nodes: BTreeMap<Rel, Node>,
    /// This machine's node of each path with the `stat` it was computed at.
    pub local: HashMap<Rel, (Fingerprint, Node)>,
    /// Paths the container holds that were not brought back for a reason that is no refusal
    /// (over a size bound): left alone in the container until this side writes the path.
    pub held: HashSet<Rel>,
    /// The container's listed `stat` of each path (`listing.rs`) when its node was last known:
    /// the same again means the same node.
    pub stats: HashMap<Rel, Vec<u8>>,
    /// The first sync (the whole project copied in) happened.
    pub filled: bool,
}

impl Manifest {
    /// Bytes of the files the container holds.
    pub(crate) fn file_bytes(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| match n {
                Node::File { size, .. } => *size,
                _ => 0,
            })
            .sum()
    }

    /// Forgets `rel` and everything beneath it.
    pub(crate) fn forget_tree(&mut self, rel: &[u8]) {
        let under: Vec<Rel> = self
            .nodes
            .range(rel.to_vec()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(rel))
            .filter(|k| at_or_under(k, rel))
            .cloned()
            .collect();
        for k in under {
            self.nodes.remove(&k);
            self.local.remove(&k);
            self.held.remove(&k);
            self.stats.remove(&k);
        }
    }
}

/// Whether `path` is `base` or lies beneath it (component-wise).
pub(crate) fn at_or_under(path: &[u8], base: &[u8]) -> bool {
    path == base || (path.starts_with(base) && path.get(base.len()) == Some(&b'/'))
}

/// The parent of `rel` (`None`: a top-level name).
pub(crate) fn parent_of(rel: &[u8]) -> Option<&[u8]> {
    rel.iter().rposition(|b| *b == b'/').map(|i| &rel[..i])
}

/// A streaming SHA-256 of a file's bytes.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}
