//! The stat cache: the newest snapshot of a store, kept in memory between snapshots in a compact
//! form (slots of stat fields and raw content hash, and a hash table from path bytes to its
//! slot), so that a snapshot of an unchanged tree costs the stat walk and one slot per entry (the
//! folder cache keeps each name's slot): no manifest decode, no encode, no hash, no write.
//!
//! Racy entries: an entry whose ctime is within `RACY_NS` of the start of the walk the cache was
//! built from (`taken_at_ns`) may have changed again within the same timestamp tick, so its
//! cached hash is not trusted and the file is read again (git's "racily clean" rule, on ctime,
//! which every change moves and nobody can set). The cache's `taken_at_ns` only moves forward to
//! the start of a walk that re-read every entry racy to the one before.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use crate::dircache::{DirCache, RACY_NS};
use crate::manifest::{Entry, Kind, Manifest};

/// One entry of the cache: what the stat test compares, and the content hash as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cached {
    pub kind: Kind,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub hash: Option<[u8; 32]>,
}

impl Cached {
    fn of(e: &Entry) -> Cached {
        let mut raw = [0u8; 32];
        let hash = (hex::decode_to_slice(&e.hash, &mut raw).is_ok()).then_some(raw);
        Cached {
            kind: e.kind,
            mode: e.mode,
            size: e.size,
            mtime_ns: e.mtime_ns,
            ctime_ns: e.ctime_ns,
            ino: e.ino,
            hash,
        }
    }

    /// Whether a freshly walked entry has the same kind and stat fields.
    pub fn same_stat(&self, e: &Entry) -> bool {
        self.kind == e.kind
            && self.mode == e.mode
            && self.size == e.size
            && self.mtime_ns == e.mtime_ns
            && self.ctime_ns == e.ctime_ns
            && self.ino == e.ino
    }
}

/// The newest snapshot of a store, as the next snapshot's stat cache.
///
/// Entries sit in `slots`, in the manifest's path order (a folder's entries side by side), and
/// the table maps a path to its slot. A slot keeps its path for the cache's whole life (a
/// changed entry is replaced in place, a removed one leaves an empty slot, a new one takes a
/// new slot), so the folder cache can keep each name's slot and find its entry without hashing
/// the path.
#[derive(Debug, Clone)]
pub(crate) struct StatCache {
    /// The manifest's object id (the snapshot id).
    pub id: String,
    pub manifest: Arc<Manifest>,
    /// Start of the walk the cached hashes were verified by (ns since the epoch).
    pub taken_at_ns: i64,
    table: HashMap<Box<[u8]>, u32>,
    slots: Vec<Option<Cached>>,
    /// The folder listings of the newest walk (`dircache`), kept in memory only.
    pub dirs: DirCache,
}

impl StatCache {
    pub fn new(id: String, manifest: Arc<Manifest>, taken_at_ns: i64) -> StatCache {
        let mut table = HashMap::with_capacity(manifest.entries.len());
        let mut slots = Vec::with_capacity(manifest.entries.len());
        for (p, e) in &manifest.entries {
            Self::push(&mut table, &mut slots, p, e);
        }
        StatCache {
            id,
            manifest,
            taken_at_ns,
            table,
            slots,
            dirs: DirCache::default(),
        }
    }

    fn push(
        table: &mut HashMap<Box<[u8]>, u32>,
        slots: &mut Vec<Option<Cached>>,
        p: &Path,
        e: &Entry,
    ) {
        // More than 4 billion paths in one process's life: the rest are looked up by path only.
        let Ok(slot) = u32::try_from(slots.len()) else {
            return;
        };
        slots.push(Some(Cached::of(e)));
        table.insert(Box::from(p.as_os_str().as_bytes()), slot);
    }

    /// Whether most slots are empty (paths removed since the cache was built): worth building
    /// afresh with [`StatCache::new`] (which drops the folder cache, whose listings name slots).
    pub fn wasteful(&self) -> bool {
        self.slots.len() > 2 * self.table.len() + 4096
    }

    /// How many entries the cache holds.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn get(&self, rel: &Path) -> Option<&Cached> {
        self.get_bytes(rel.as_os_str().as_bytes())
    }

    /// [`StatCache::get`] by the path's bytes.
    pub fn get_bytes(&self, rel: &[u8]) -> Option<&Cached> {
        self.table.get(rel).and_then(|&s| self.at(s))
    }

    /// The slot of a path, for [`StatCache::at`].
    pub fn slot_of(&self, rel: &[u8]) -> Option<u32> {
        self.table.get(rel).copied()
    }

    /// The entry in a slot (`None` once its path was removed).
    pub fn at(&self, slot: u32) -> Option<&Cached> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    /// Whether an entry last changed at `ctime_ns` is racy for this cache.
    pub fn racy(&self, ctime_ns: i64) -> bool {
        ctime_ns >= self.taken_at_ns.saturating_sub(RACY_NS)
    }

    /// The cache after a snapshot: the new manifest, updating only the paths that differ from
    /// this cache's (`changed`: paths added or changed; `removed`: paths gone).
    pub fn updated(
        mut self,
        id: String,
        manifest: Arc<Manifest>,
        taken_at_ns: i64,
        changed: &[&Path],
        removed: &[&Path],
    ) -> StatCache {
        for p in removed {
            if let Some(s) = self.table.remove(p.as_os_str().as_bytes())
                && let Some(slot) = self.slots.get_mut(s as usize)
            {
                *slot = None;
            }
        }
        for p in changed {
            let Some(e) = manifest.entries.get(*p) else {
                continue;
            };
            match self.table.get(p.as_os_str().as_bytes()) {
                Some(&s) => {
                    if let Some(slot) = self.slots.get_mut(s as usize) {
                        *slot = Some(Cached::of(e));
                    }
                }
                None => Self::push(&mut self.table, &mut self.slots, p, e),
            }
        }
        self.id = id;
        self.manifest = manifest;
        self.taken_at_ns = taken_at_ns;
        self
    }

    /// The content hash of a cached entry, as the manifest writes it.
    pub fn hex(c: &Cached) -> String {
        c.hash.map(hex::encode).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn racy_entries_are_those_changed_within_the_window_of_the_walk() {
        let mut m = Manifest::default();
        m.entries.insert(
            PathBuf::from("a"),
            Entry {
                kind: Kind::File,
                mode: 0o100644,
                size: 1,
                mtime_ns: 5,
                ctime_ns: 5,
                ino: 1,
                hash: "ab".repeat(32),
            },
        );
        let c = StatCache::new("x".into(), Arc::new(m), 1_000_000_000);
        assert!(c.racy(1_000_000_000 - RACY_NS));
        assert!(c.racy(1_000_000_001));
        assert!(!c.racy(1_000_000_000 - RACY_NS - 1));
        let got = c.get(Path::new("a")).unwrap();
        assert_eq!(StatCache::hex(got), "ab".repeat(32));
    }

    fn entry(size: u64) -> Entry {
        Entry {
            kind: Kind::File,
            mode: 0o100644,
            size,
            mtime_ns: 5,
            ctime_ns: 5,
            ino: 1,
            hash: "ab".repeat(32),
        }
    }

    #[test]
    fn a_slot_keeps_its_path_through_changes_removals_and_additions() {
        let mut m = Manifest::default();
        m.entries.insert(PathBuf::from("a"), entry(1));
        m.entries.insert(PathBuf::from("b"), entry(2));
        let c = StatCache::new("x".into(), Arc::new(m.clone()), 0);
        let (a, b) = (c.slot_of(b"a").unwrap(), c.slot_of(b"b").unwrap());
        // "a" changed, "b" removed, "c" added.
        m.entries.insert(PathBuf::from("a"), entry(10));
        m.entries.remove(Path::new("b"));
        m.entries.insert(PathBuf::from("c"), entry(3));
        let c = c.updated(
            "y".into(),
            Arc::new(m.clone()),
            0,
            &[Path::new("a"), Path::new("c")],
            &[Path::new("b")],
        );
        assert_eq!(c.slot_of(b"a"), Some(a));
        assert_eq!(c.at(a).unwrap().size, 10);
        assert_eq!(c.at(b), None, "a removed path's slot is empty");
        assert_eq!(c.slot_of(b"b"), None);
        let new = c.slot_of(b"c").unwrap();
        assert!(new != a && new != b);
        assert_eq!(c.get(Path::new("c")).unwrap().size, 3);
        assert_eq!(c.len(), 2);
        // "b" again: a new slot, never the old one (which a listing may still name).
        m.entries.insert(PathBuf::from("b"), entry(4));
        let c = c.updated("z".into(), Arc::new(m), 0, &[Path::new("b")], &[]);
        let again = c.slot_of(b"b").unwrap();
        assert!(again != b);
        assert_eq!(c.at(b), None);
        assert_eq!(c.get(Path::new("b")).unwrap().size, 4);
    }

    #[test]
    fn a_cache_of_mostly_removed_paths_is_wasteful() {
        let mut m = Manifest::default();
        let c = StatCache::new("x".into(), Arc::new(m.clone()), 0);
        let paths: Vec<PathBuf> = (0..5000).map(|i| PathBuf::from(format!("t{i}"))).collect();
        for p in &paths {
            m.entries.insert(p.clone(), entry(1));
        }
        let added: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let c = c.updated("y".into(), Arc::new(m.clone()), 0, &added, &[]);
        assert!(!c.wasteful());
        m.entries.clear();
        let c = c.updated("z".into(), Arc::new(m.clone()), 0, &[], &added);
        assert!(c.wasteful());
        let fresh = StatCache::new(c.id.clone(), c.manifest.clone(), 0);
        assert!(!fresh.wasteful());
        assert_eq!(fresh.len(), 0);
    }
}
