//! Taking a snapshot: one stat walk of the project under its ignore rules (parallel, never
//! following a symlink), then only the entries whose stat fields differ from the stat cache's
//! (`statcache`: mode, size, mtime, ctime, inode), or that are racy for it, are read, hashed and
//! stored, in parallel. An unchanged tree costs the walk and one table lookup per entry, and
//! yields the cache's own manifest ([`Taken::Unchanged`]): nothing is encoded, hashed or written.
//! A changed tree's manifest is the cache's with only the differing paths replaced.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cap_std::fs::Dir;

use crate::error::{CheckpointError, Result};
use crate::manifest::{Entry, Kind, Manifest, SkipReason};
use crate::objects::{ObjectStore, hash_bytes};
use crate::statcache::StatCache;

/// What a snapshot reads and skips.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Files larger than this are not checkpointed (recorded as skipped).
    pub max_file_bytes: u64,
    /// Walk and hashing threads.
    pub threads: usize,
    /// Absolute paths never walked (a data directory inside the project).
    pub skip: Vec<PathBuf>,
}

/// The default size cap: 16 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            threads: std::thread::available_parallelism()
                .map(|n| n.get().min(8))
                .unwrap_or(2),
            skip: Vec::new(),
        }
    }
}

/// What a snapshot cost (benchmarks, logs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    pub entries: usize,
    pub read: usize,
    pub bytes_read: u64,
    /// Nothing differed from the stat cache: the previous manifest was reused, nothing written.
    pub unchanged: bool,
}

fn ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
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

fn unreadable_entry() -> Entry {
    Entry {
        kind: Kind::Skipped(SkipReason::Unreadable),
        mode: 0,
        size: 0,
        mtime_ns: 0,
        ctime_ns: 0,
        ino: 0,
        hash: String::new(),
    }
}

/// The entry of a stat (no hash): the same fields as [`stat_entry`] reads through `std`.
// The field types of `struct stat` differ between targets: the casts are the portable form.
#[allow(clippy::unnecessary_cast)]
fn raw_entry(st: &rustix::fs::Stat, max_file_bytes: u64) -> Entry {
    use rustix::fs::FileType;
    let size = u64::try_from(st.st_size).unwrap_or(0);
    let kind = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        FileType::RegularFile if size > max_file_bytes => Kind::Skipped(SkipReason::TooLarge),
        FileType::RegularFile => Kind::File,
        // FIFOs, sockets, devices and anything else that is no file, folder or link.
        _ => Kind::Skipped(SkipReason::Special),
    };
    Entry {
        kind,
        mode: st.st_mode as u32,
        size,
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
        ino: st.st_ino as u64,
        hash: String::new(),
    }
}

/// Folders still to list (with the device and inode their listing found, `None` for the root),
/// and how many are being listed (the walk ends when both are none). Folders are opened only
/// when listed, so a wide tree never holds more than one handle per thread.
struct Queue {
    dirs: Vec<(PathBuf, Option<(u64, u64)>)>,
    active: usize,
}

// The field types of `struct stat` differ between targets: the casts are the portable form.
#[allow(clippy::unnecessary_cast)]
fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// Opens the folder `rel` of the project for listing: beneath the root's handle, the last
/// component never followed as a symlink, and only if it is still the folder its parent's
/// listing found (same device and inode), so a folder swapped for a symlink (or for another
/// folder) since is not walked.
fn open_dir(
    root_fd: &rustix::fd::OwnedFd,
    rel: &Path,
    expected: Option<(u64, u64)>,
) -> Option<rustix::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let fd = rustix::fs::openat(root_fd, path, flags, Mode::empty()).ok()?;
    match expected {
        None => Some(fd),
        Some(id) => rustix::fs::fstat(&fd)
            .ok()
            .filter(|st| dev_ino(st) == id)
            .map(|_| fd),
    }
}

/// The stat walk: every entry the project's ignore rules keep (`aibuddy_sandbox::local::
/// project_rules`, the rules of glob and grep, hidden files included, `.git` left out), with
/// its stat fields (no hash). Folders are listed in parallel, each through its own handle
/// (`open_dir`, opened when listed): an entry is stat'ed by name relative to its folder
/// (`fstatat`, never following a symlink), so no path is looked up from the root per entry and
/// a symlink swapped in does not redirect the walk. A folder
/// that cannot be opened or listed is recorded as unreadable, so what lies beneath it is never
/// taken as deleted (a rewind leaves it alone).
fn walk(root: &Path, opts: &SnapshotOptions) -> Result<Vec<(PathBuf, Entry)>> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let rules = aibuddy_sandbox::local::project_rules(root, opts.threads, opts.skip.clone())
        .map_err(|e| CheckpointError::Walk(e.to_string()))?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let root_fd = rustix::fs::open(root, dir_flags, Mode::empty())
        .map_err(|e| CheckpointError::io("open project", root, e.into()))?;
    let queue = Mutex::new(Queue {
        dirs: vec![(PathBuf::new(), None)],
        active: 0,
    });
    let ready = std::sync::Condvar::new();
    let out: Mutex<Vec<Vec<(PathBuf, Entry)>>> = Mutex::new(Vec::new());
    let unlisted: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let worker = || {
        let mut local: Vec<(PathBuf, Entry)> = Vec::with_capacity(4096);
        loop {
            // The next folder, or the end of the walk.
            let (dir_rel, expected) = {
                let Ok(mut q) = queue.lock() else { break };
                loop {
                    if let Some(d) = q.dirs.pop() {
                        q.active += 1;
                        break d;
                    }
                    if q.active == 0 {
                        ready.notify_all();
                        drop(q);
                        if let Ok(mut o) = out.lock() {
                            o.push(std::mem::take(&mut local));
                        }
                        return;
                    }
                    q = match ready.wait(q) {
                        Ok(q) => q,
                        Err(_) => return,
                    };
                }
            };
            let mut found = Vec::new();
            let dir_rules = rules.in_dir(&dir_rel);
            let fd = open_dir(&root_fd, &dir_rel, expected);
            let listed = fd.as_ref().map(|fd| {
                let Ok(mut dir) = rustix::fs::Dir::read_from(fd) else {
                    return false;
                };
                while let Some(item) = dir.read() {
                    let Ok(item) = item else {
                        return false;
                    };
                    let name = item.file_name();
                    let bytes = name.to_bytes();
                    if bytes == b"." || bytes == b".." {
                        continue;
                    }
                    use std::os::unix::ffi::OsStrExt;
                    let rel = dir_rel.join(std::ffi::OsStr::from_bytes(bytes));
                    let st = match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => st,
                        // Gone since it was listed: not part of the tree.
                        Err(rustix::io::Errno::NOENT) => continue,
                        Err(e) => {
                            tracing::debug!(path = %rel.display(), error = %e, "checkpoint walk: stat failed");
                            if dir_rules.keeps(&rel, false) {
                                local.push((rel, unreadable_entry()));
                            }
                            continue;
                        }
                    };
                    let entry = raw_entry(&st, opts.max_file_bytes);
                    let is_dir = entry.kind == Kind::Dir;
                    if !dir_rules.keeps(&rel, is_dir) {
                        continue;
                    }
                    if is_dir {
                        found.push((rel.clone(), Some(dev_ino(&st))));
                    }
                    local.push((rel, entry));
                }
                true
            });
            if listed != Some(true) && !dir_rel.as_os_str().is_empty() {
                // Listed in part or not at all: the folder stands as unreadable.
                tracing::debug!(path = %dir_rel.display(), "checkpoint walk: folder not listed");
                if let Ok(mut u) = unlisted.lock() {
                    u.push(dir_rel.clone());
                }
            }
            drop(fd);
            let Ok(mut q) = queue.lock() else { break };
            q.dirs.extend(found);
            q.active -= 1;
            ready.notify_all();
        }
        if let Ok(mut o) = out.lock() {
            o.push(local);
        }
    };
    let threads = opts.threads.clamp(1, 8);
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    let parts = out.into_inner().unwrap_or_default();
    let mut walked = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        walked.extend(p);
    }
    let unlisted = unlisted.into_inner().unwrap_or_default();
    if !unlisted.is_empty() {
        for (p, e) in walked.iter_mut() {
            if unlisted.contains(p) {
                *e = unreadable_entry();
            }
        }
    }
    Ok(walked)
}

/// Walks `root` against the stat cache `cache`, storing new content in `objects`.
/// Returns what changed and this walk's start (the next cache's `taken_at_ns`).
pub(crate) fn take(
    root: &Path,
    root_dir: &Dir,
    objects: &ObjectStore,
    cache: Option<&StatCache>,
    opts: &SnapshotOptions,
) -> Result<(Taken, i64, SnapshotStats)> {
    let taken_at_ns = now_ns();
    let walked = walk(root, opts)?;

    // The stat cache: an entry whose kind and stat fields match, and that is not racy, keeps its
    // cached hash; every other file or symlink is read.
    let mut to_read: Vec<usize> = Vec::new();
    let mut changed: Vec<usize> = Vec::new();
    let mut known = 0usize;
    for (i, (rel, entry)) in walked.iter().enumerate() {
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

    let read = read_all(root_dir, objects, &walked, &to_read, opts)?;
    let bytes_read = read.iter().map(|(_, _, n)| *n).sum();
    let stats_read = read.len();
    // A re-read entry whose stat fields and content are the cached ones is unchanged.
    let mut read_entries: Vec<(usize, Entry)> = Vec::with_capacity(read.len());
    for (i, e, _) in read {
        let same = cache
            .and_then(|c| c.get(&walked[i].0))
            .is_some_and(|h| h.same_stat(&e) && StatCache::hex(h) == e.hash);
        if !same {
            changed.push(i);
            read_entries.push((i, e));
        }
    }
    let removed: Vec<PathBuf> = match cache {
        Some(c) if known < c.len() => {
            let seen: std::collections::HashSet<&Path> =
                walked.iter().map(|(p, _)| p.as_path()).collect();
            c.manifest
                .entries
                .keys()
                .filter(|p| !seen.contains(p.as_path()))
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    let stats = SnapshotStats {
        entries: walked.len(),
        read: stats_read,
        bytes_read,
        unchanged: false,
    };
    if cache.is_some() && changed.is_empty() && removed.is_empty() {
        return Ok((Taken::Unchanged, taken_at_ns, stats));
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
    let mut walked: Vec<Option<(PathBuf, Entry)>> = walked.into_iter().map(Some).collect();
    let mut changed_paths = Vec::with_capacity(changed.len());
    for i in changed {
        if let Some((rel, entry)) = walked.get_mut(i).and_then(Option::take) {
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
