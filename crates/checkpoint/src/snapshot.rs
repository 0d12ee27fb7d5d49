//! Taking a snapshot: one stat walk of the project under its ignore rules (`walk`: parallel,
//! never following a symlink, an unchanged folder's listing reused from the folder cache), which
//! compares every entry with the stat cache (`statcache`: mode, size, mtime, ctime, inode) as it
//! goes; only the entries that differ, or that are racy for it, are read, hashed and stored, in
//! parallel. An unchanged tree costs the walk (one `fstatat` and one cache slot per kept entry),
//! and yields the cache's own manifest ([`Taken::Unchanged`]): nothing is encoded, hashed or
//! written. A changed tree's manifest is the cache's with only the differing paths replaced.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cap_std::fs::Dir;

use crate::dircache::DirCache;
use crate::error::{CheckpointError, Result};
use crate::manifest::{Entry, Kind, Manifest, SkipReason};
use crate::objects::{ObjectStore, hash_bytes};
use crate::statcache::StatCache;
use crate::walk::{Walked, ns, walk};

pub use crate::options::{DEFAULT_MAX_FILE_BYTES, SnapshotOptions};

/// What a snapshot cost (benchmarks, logs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    pub entries: usize,
    pub read: usize,
    pub bytes_read: u64,
    /// Folders listed afresh; the others' listings were reused from the folder cache (the
    /// folder and its ignore rules unchanged).
    pub listed: usize,
    /// Nothing differed from the stat cache: the previous manifest was reused, nothing written.
    pub unchanged: bool,
}

pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn stat_entry(meta: &std::fs::Metadata, kind: Kind) -> Entry {
    Entry {
        kind,
        mode: meta.mode(),
        size: meta.size(),
        mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
        ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        hash: String::new(),
    }
}

/// What a snapshot found, against the stat cache.
#[derive(Debug)]
pub(crate) enum Taken {
    /// Every entry matches the cache (racy ones were read again and hold the same content):
    /// the cache's manifest is this snapshot's.
    Unchanged,
    /// The new manifest, with the paths that were added or changed and those that are gone.
    Changed {
        manifest: Manifest,
        changed: Vec<PathBuf>,
        removed: Vec<PathBuf>,
    },
}

/// Walks `root` against the stat cache `cache` (and its folder cache), storing new content in
/// `objects`. Returns what changed, this walk's start (the next cache's `taken_at_ns`) and the
/// walk's listings (the next folder cache).
pub(crate) fn take(
    root: &Path,
    root_dir: &Dir,
    objects: &ObjectStore,
    cache: Option<&StatCache>,
    opts: &SnapshotOptions,
) -> Result<(Taken, i64, SnapshotStats, DirCache)> {
    let taken_at_ns = now_ns();
    let no_dirs = DirCache::default();
    let prev_dirs = cache.map_or(&no_dirs, |c| &c.dirs);
    let Walked {
        pending,
        known: walked_known,
        entries,
        listed,
        unlisted,
        dirs,
    } = walk(root, opts, cache, prev_dirs, taken_at_ns)?;

    // The walk compared every entry with the stat cache: only those that differ, are racy or
    // have no hash come out of it. An entry whose kind and stat fields match, and that is not
    // racy, keeps its cached hash; every other file or symlink is read.
    let mut to_read: Vec<usize> = Vec::new();
    let mut changed: Vec<usize> = Vec::new();
    let mut known = walked_known;
    for (i, (rel, entry)) in pending.iter().enumerate() {
        let hit = cache.and_then(|c| c.get(rel));
        known += usize::from(hit.is_some());
        let content = matches!(entry.kind, Kind::File | Kind::Symlink);
        match hit {
            Some(h) if h.same_stat(entry) => {
                if content && (h.hash.is_none() || cache.is_some_and(|c| c.racy(entry.ctime_ns))) {
                    to_read.push(i);
                }
            }
            _ => {
                if content {
                    to_read.push(i);
                } else {
                    changed.push(i);
                }
            }
        }
    }

    let read = read_all(root_dir, objects, &pending, &to_read, opts)?;
    let bytes_read = read.iter().map(|(_, _, n)| *n).sum();
    let stats_read = read.len();
    // A re-read entry whose stat fields and content are the cached ones is unchanged.
    let mut read_entries: Vec<(usize, Entry)> = Vec::with_capacity(read.len());
    for (i, e, _) in read {
        let same = cache
            .and_then(|c| c.get(&pending[i].0))
            .is_some_and(|h| h.same_stat(&e) && StatCache::hex(h) == e.hash);
        if !same {
            changed.push(i);
            read_entries.push((i, e));
        }
    }
    // Every walked path is in one listing; those of the cache not walked are gone. Each walked
    // path is counted once in `known` when cached, unless a folder was not listed (its entry
    // then came out twice).
    let removed: Vec<PathBuf> = match cache {
        Some(c) if known < c.len() || unlisted => {
            let seen: std::collections::HashSet<Vec<u8>> = dirs.paths().collect();
            c.manifest
                .entries
                .keys()
                .filter(|p| !seen.contains(p.as_os_str().as_bytes()))
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    let stats = SnapshotStats {
        entries,
        read: stats_read,
        bytes_read,
        listed,
        unchanged: false,
    };
    if cache.is_some() && changed.is_empty() && removed.is_empty() {
        return Ok((Taken::Unchanged, taken_at_ns, stats, dirs));
    }

    // The new manifest: the cache's, with the differing paths replaced.
    let mut manifest = match cache {
        Some(c) => Manifest::clone(&c.manifest),
        None => Manifest::default(),
    };
    manifest.taken_at_ns = taken_at_ns;
    for p in &removed {
        manifest.entries.remove(p);
    }
    let mut by_index: std::collections::HashMap<usize, Entry> = read_entries.into_iter().collect();
    let mut pending: Vec<Option<(PathBuf, Entry)>> = pending.into_iter().map(Some).collect();
    let mut changed_paths = Vec::with_capacity(changed.len());
    for i in changed {
        if let Some((rel, entry)) = pending.get_mut(i).and_then(Option::take) {
            let entry = by_index.remove(&i).unwrap_or(entry);
            changed_paths.push(rel.clone());
            manifest.entries.insert(rel, entry);
        }
    }
    let stats = SnapshotStats {
        entries: manifest.entries.len(),
        ..stats
    };
    Ok((
        Taken::Changed {
            manifest,
            changed: changed_paths,
            removed,
        },
        taken_at_ns,
        stats,
        dirs,
    ))
}

/// Reads the entries `which` of `walked` in parallel: (index, entry read, bytes read).
fn read_all(
    root_dir: &Dir,
    objects: &ObjectStore,
    walked: &[(PathBuf, Entry)],
    which: &[usize],
    opts: &SnapshotOptions,
) -> Result<Vec<(usize, Entry, u64)>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Entry, u64)>> = Mutex::new(Vec::with_capacity(which.len()));
    let first_error: Mutex<Option<CheckpointError>> = Mutex::new(None);
    let workers = opts.threads.clamp(1, 8).min(which.len().max(1));
    let work = || {
        let mut local = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = which.get(k) else {
                break;
            };
            let (rel, entry) = &walked[i];
            match read_entry(root_dir, objects, rel, entry.clone(), opts) {
                Ok((e, n)) => local.push((i, e, n)),
                Err(err) => {
                    if let Ok(mut f) = first_error.lock() {
                        f.get_or_insert(err);
                    }
                    break;
                }
            }
        }
        if let Ok(mut r) = results.lock() {
            r.extend(local);
        }
    };
    if workers <= 1 || which.len() < 4 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    if let Some(err) = first_error.into_inner().ok().flatten() {
        return Err(err);
    }
    Ok(results.into_inner().unwrap_or_default())
}

/// Reads one file or symlink through the root `Dir` (never leaving the project), stores its
/// content and returns its entry (stat fields of what was read). Only the store failing is an
/// error; an entry that cannot be read becomes `Skipped(Unreadable)`.
fn read_entry(
    root_dir: &Dir,
    objects: &ObjectStore,
    rel: &Path,
    mut entry: Entry,
    opts: &SnapshotOptions,
) -> Result<(Entry, u64)> {
    let unreadable = |mut e: Entry| {
        e.kind = Kind::Skipped(SkipReason::Unreadable);
        e.hash.clear();
        Ok((e, 0))
    };
    match entry.kind {
        Kind::Symlink => {
            let Ok(target) = root_dir.read_link_contents(rel) else {
                return unreadable(entry);
            };
            use std::os::unix::ffi::OsStrExt;
            let bytes = target.as_os_str().as_bytes();
            entry.hash = objects.put(bytes)?;
            Ok((entry, bytes.len() as u64))
        }
        Kind::File => {
            let Ok(file) = root_dir.open(rel) else {
                return unreadable(entry);
            };
            let file = file.into_std();
            let Ok(meta) = file.metadata() else {
                return unreadable(entry);
            };
            // Swapped for a symlink or a special file since the walk: not what was walked.
            if !meta.is_file() {
                return unreadable(entry);
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            if (&file)
                .take(opts.max_file_bytes + 1)
                .read_to_end(&mut bytes)
                .is_err()
            {
                return unreadable(entry);
            }
            if bytes.len() as u64 > opts.max_file_bytes {
                entry.kind = Kind::Skipped(SkipReason::TooLarge);
                entry.size = bytes.len() as u64;
                return Ok((entry, 0));
            }
            let id = hash_bytes(&bytes);
            objects.put_with_id(&id, &bytes)?;
            let mut e = stat_entry(&meta, Kind::File);
            // The size is what was read; the stat fields are those of the open file.
            e.size = bytes.len() as u64;
            e.hash = id;
            Ok((e, bytes.len() as u64))
        }
        _ => Ok((entry, 0)),
    }
}
