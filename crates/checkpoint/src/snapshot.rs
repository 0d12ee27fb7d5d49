//! Taking a snapshot: one stat walk of the project under its ignore rules (parallel, never
//! following a symlink), then only the entries whose stat fields differ from the previous
//! snapshot's (the stat cache: mode, size, mtime, ctime, inode) are read, hashed and stored, in
//! parallel. An unchanged tree costs the walk and no reads.
//!
//! Racy entries: an entry whose ctime is within `RACY_NS` of the previous walk's start may have
//! been changed again within the same timestamp tick, so its cached hash is not trusted (git's
//! "racily clean" rule, on ctime, which every change moves and nobody can set).

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cap_std::fs::Dir;

use crate::error::{CheckpointError, Result};
use crate::manifest::{Entry, Kind, Manifest, SkipReason};
use crate::objects::{ObjectStore, hash_bytes};

/// Entries changed this close to the previous walk's start are re-read.
const RACY_NS: i64 = 50_000_000;

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

/// The path an error of the walk names, if any.
fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        ignore::Error::Partial(errs) => errs.first().and_then(error_path),
        _ => None,
    }
}

/// Walks `root` and builds its manifest, storing new content in `objects`.
pub fn take(
    root: &Path,
    root_dir: &Dir,
    objects: &ObjectStore,
    previous: Option<&Manifest>,
    opts: &SnapshotOptions,
) -> Result<(Manifest, SnapshotStats)> {
    let taken_at_ns = now_ns();
    let walked: Mutex<Vec<(PathBuf, Entry)>> = Mutex::new(Vec::new());
    let walk_error: Mutex<Option<String>> = Mutex::new(None);
    let walker = aibuddy_sandbox::local::project_walker(root, opts.threads, opts.skip.clone())
        .map_err(|e| CheckpointError::Walk(e.to_string()))?;
    walker.build_parallel().run(|| {
        let walked = &walked;
        let walk_error = &walk_error;
        Box::new(move |res| {
            use ignore::WalkState;
            let entry = match res {
                Ok(e) => e,
                Err(e) => {
                    // A folder that cannot be read: recorded as unreadable, so what lies beneath
                    // it is never taken as deleted (a rewind leaves it alone).
                    tracing::debug!(error = %e, "checkpoint walk: entry skipped");
                    if let Some(rel) = error_path(&e).and_then(|p| p.strip_prefix(root).ok())
                        && !rel.as_os_str().is_empty()
                        && let Ok(mut w) = walked.lock()
                    {
                        w.push((
                            rel.to_path_buf(),
                            Entry {
                                kind: Kind::Skipped(SkipReason::Unreadable),
                                mode: 0,
                                size: 0,
                                mtime_ns: 0,
                                ctime_ns: 0,
                                ino: 0,
                                hash: String::new(),
                            },
                        ));
                    }
                    return WalkState::Continue;
                }
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else {
                return WalkState::Continue;
            };
            let meta = match std::fs::symlink_metadata(entry.path()) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return WalkState::Continue;
                }
                Err(e) => {
                    if let Ok(mut w) = walk_error.lock() {
                        w.get_or_insert_with(|| format!("{}: {e}", rel.display()));
                    }
                    return WalkState::Continue;
                }
            };
            let ft = meta.file_type();
            let kind = if ft.is_dir() {
                Kind::Dir
            } else if ft.is_symlink() {
                Kind::Symlink
            } else if ft.is_file() {
                if meta.size() > opts.max_file_bytes {
                    Kind::Skipped(SkipReason::TooLarge)
                } else {
                    Kind::File
                }
            } else {
                // FIFOs, sockets, devices and anything else that is no file, folder or link.
                Kind::Skipped(SkipReason::Special)
            };
            if let Ok(mut w) = walked.lock() {
                w.push((rel.to_path_buf(), stat_entry(&meta, kind)));
            }
            WalkState::Continue
        })
    });
    let walked = walked.into_inner().unwrap_or_default();
    if let Some(e) = walk_error.into_inner().ok().flatten() {
        tracing::debug!(error = %e, "checkpoint walk: an entry could not be read");
    }

    // The stat cache: reuse the previous snapshot's hash where nothing about the entry changed.
    let mut manifest = Manifest {
        taken_at_ns,
        entries: Default::default(),
    };
    let mut to_read: Vec<(PathBuf, Entry)> = Vec::new();
    for (rel, mut entry) in walked {
        if matches!(entry.kind, Kind::File | Kind::Symlink) {
            let cached = previous.and_then(|p| {
                let old = p.entries.get(&rel)?;
                // Every change moves ctime (nobody can set it), so it alone tells racy entries.
                let racy = entry.ctime_ns >= p.taken_at_ns - RACY_NS;
                (old.kind == entry.kind && old.same_stat(&entry) && !racy && !old.hash.is_empty())
                    .then(|| old.hash.clone())
            });
            match cached {
                Some(h) => entry.hash = h,
                None => {
                    to_read.push((rel, entry));
                    continue;
                }
            }
        }
        manifest.entries.insert(rel, entry);
    }

    let stats_read = to_read.len();
    let bytes_read = std::sync::atomic::AtomicU64::new(0);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(PathBuf, Entry)>> = Mutex::new(Vec::with_capacity(to_read.len()));
    let first_error: Mutex<Option<CheckpointError>> = Mutex::new(None);
    let workers = opts.threads.clamp(1, 8).min(to_read.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((rel, entry)) = to_read.get(i) else {
                        break;
                    };
                    match read_entry(root_dir, objects, rel, entry.clone(), opts) {
                        Ok((e, n)) => {
                            bytes_read.fetch_add(n, Ordering::Relaxed);
                            if let Ok(mut r) = results.lock() {
                                r.push((rel.clone(), e));
                            }
                        }
                        Err(err) => {
                            if let Ok(mut f) = first_error.lock() {
                                f.get_or_insert(err);
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(err) = first_error.into_inner().ok().flatten() {
        return Err(err);
    }
    for (rel, e) in results.into_inner().unwrap_or_default() {
        manifest.entries.insert(rel, e);
    }
    let stats = SnapshotStats {
        entries: manifest.entries.len(),
        read: stats_read,
        bytes_read: bytes_read.into_inner(),
    };
    Ok((manifest, stats))
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
