//! The stat walk of a snapshot: every entry the project's ignore rules keep
//! (`aibuddy_sandbox::local::project_rules`, the rules of glob and grep, hidden files included,
//! `.git` left out), stat'ed and compared with the stat cache as it is found, so only the
//! entries that differ (or must be read again) come out of it.
//!
//! Folders are listed in parallel, each through its own handle (`open_dir`, opened when
//! listed, never following a symlink, only if it is still the folder its parent's listing
//! found): an entry is stat'ed by name relative to its folder (`fstatat`, never following a
//! symlink), so no path is looked up from the root per entry and a symlink swapped in does not
//! redirect the walk. A folder whose listing the folder cache still holds (`dircache`: same
//! stamp, same rules) is not listed again: only its kept names are stat'ed. A folder that
//! cannot be opened or listed is recorded as unreadable, so what lies beneath it is never taken
//! as deleted (a rewind leaves it alone).

use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use crate::dircache::{
    DirCache, DirStamp, FileStamp, Listing, Names, RULE_EXCLUDE, RULE_GIT, RULE_GITIGNORE,
    RULE_IGNORE, RuleStamps, join, join_into,
};
use crate::error::{CheckpointError, Result};
use crate::manifest::{Entry, Kind, SkipReason};
use crate::options::SnapshotOptions;
use crate::statcache::StatCache;

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The entries that are not in the stat cache, differ from it, or must be read again
    /// (racy, or no hash), with their stat fields.
    pub pending: Vec<(PathBuf, Entry)>,
    /// How many entries matched the stat cache (and are not in `pending`).
    pub known: usize,
    /// Entries walked in all.
    pub entries: usize,
    /// Folders listed afresh (the others' listings were reused from the folder cache).
    pub listed: usize,
    /// Some folder could not be listed: `known` may count its entry twice.
    pub unlisted: bool,
    /// This walk's listings: the next walk's folder cache, and every path this walk saw.
    pub dirs: DirCache,
}

pub(crate) fn ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

pub(crate) fn unreadable_entry() -> Entry {
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

/// The entry of a stat (no hash).
// The field types of `struct stat` differ between targets: the casts are the portable form.
#[allow(clippy::unnecessary_cast)]
fn raw_entry(st: &Stat, max_file_bytes: u64) -> Entry {
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

// The field types of `struct stat` differ between targets: the casts are the portable form.
#[allow(clippy::unnecessary_cast)]
fn dev_ino(st: &Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

#[allow(clippy::unnecessary_cast)]
fn dir_stamp(st: &Stat) -> DirStamp {
    DirStamp {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
    }
}

#[allow(clippy::unnecessary_cast)]
fn file_stamp(st: &Stat) -> FileStamp {
    FileStamp {
        mode: st.st_mode as u32,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
        ino: st.st_ino as u64,
    }
}

/// The stamps of the rule files of the folder `fd`, taken before the rules read them. With
/// `known`, the files that listing found absent are not looked at (the folder is unchanged, so
/// they still are).
fn rule_stamps(fd: &OwnedFd, is_root: bool, known: Option<&RuleStamps>) -> RuleStamps {
    let stat = |name: &CStr| {
        rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| file_stamp(&st))
    };
    let mut s = RuleStamps::default();
    for (i, name) in [
        (RULE_IGNORE, c".ignore"),
        (RULE_GITIGNORE, c".gitignore"),
        (RULE_GIT, c".git"),
    ] {
        if known.is_none_or(|k| k.items[i].is_some()) {
            s.items[i] = stat(name);
        }
    }
    s.items[RULE_GIT] = s.items[RULE_GIT].map(|g| FileStamp::kind_only(g.mode));
    let git_dir = s.items[RULE_GIT]
        .is_some_and(|g| FileType::from_raw_mode(g.mode as _) == FileType::Directory);
    if is_root || git_dir {
        s.items[RULE_EXCLUDE] = stat(c".git/info/exclude");
    }
    s
}

/// Opens the folder `rel` of the project for listing: beneath the root's handle, the last
/// component never followed as a symlink, and only if it is still the folder its parent's
/// listing found (same device and inode), so a folder swapped for a symlink (or for another
/// folder) since is not walked. Returns the handle and the folder's stat.
fn open_dir(
    root_fd: &OwnedFd,
    rel: &Path,
    expected: Option<(u64, u64)>,
) -> Option<(OwnedFd, Stat)> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let fd = rustix::fs::openat(root_fd, path, flags, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if expected.is_some_and(|id| dev_ino(&st) != id) {
        return None;
    }
    Some((fd, st))
}

/// A folder still to list: its path, the device and inode its parent's listing found (`None`
/// for the root), and whether the rules of a folder above it changed (it must be listed afresh).
type Todo = (PathBuf, Option<(u64, u64)>, bool);

/// Folders still to list, and how many are being listed (the walk ends when both are none).
/// Folders are opened only when listed, so a wide tree never holds more than one handle per
/// thread.
struct Queue {
    dirs: Vec<Todo>,
    active: usize,
}

/// What is shared by the walk's threads.
struct Ctx<'a> {
    root_fd: OwnedFd,
    rules: aibuddy_sandbox::local::ProjectRules,
    opts: &'a SnapshotOptions,
    cache: Option<&'a StatCache>,
    prev: &'a DirCache,
    started_ns: i64,
}

/// One folder's part of the walk.
#[derive(Default)]
struct Part {
    pending: Vec<(PathBuf, Entry)>,
    known: usize,
    entries: usize,
    subdirs: Vec<Todo>,
}

fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

impl Ctx<'_> {
    /// Compares one kept entry, `name` in the folder `dir` (the stat cache's `slot` for it kept
    /// by the listing, if any), with the stat cache; a folder is queued for listing. Its path is
    /// only made when needed: a folder, an entry that differs, or no slot.
    fn visit(
        &self,
        part: &mut Part,
        (dir, name): (&[u8], &[u8]),
        slot: Option<u32>,
        st: &Stat,
        tainted: bool,
    ) {
        let entry = raw_entry(st, self.opts.max_file_bytes);
        part.entries += 1;
        if entry.kind == Kind::Dir {
            part.subdirs
                .push((path_of(&join(dir, name)), Some(dev_ino(st)), tainted));
        }
        let content = matches!(entry.kind, Kind::File | Kind::Symlink);
        let clean = self.cache.is_some_and(|c| {
            // The slot the listing kept, or (emptied since, or none) the path's.
            let hit = match slot.and_then(|s| c.at(s)) {
                Some(h) => Some(h),
                None => c.get_bytes(&join(dir, name)),
            };
            hit.is_some_and(|h| {
                h.same_stat(&entry) && !(content && (h.hash.is_none() || c.racy(entry.ctime_ns)))
            })
        });
        if clean {
            part.known += 1;
        } else {
            part.pending.push((path_of(&join(dir, name)), entry));
        }
    }

    /// Stats the names of a listing still held: `None` if one of them is gone or changed kind
    /// since (the folder changed while walked: it is listed afresh).
    fn stat_listed(&self, fd: &OwnedFd, dir_rel: &Path, listing: &Listing) -> Option<Part> {
        let dir = dir_rel.as_os_str().as_bytes();
        let mut part = Part::default();
        for child in &listing.children {
            let name = CStr::from_bytes_with_nul(listing.name_nul(child)).ok()?;
            match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => {
                    let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
                    if child.is_dir != Some(is_dir) {
                        return None;
                    }
                    self.visit(&mut part, (dir, name.to_bytes()), child.slot, &st, false);
                }
                Err(rustix::io::Errno::NOENT) => return None,
                Err(_) if child.is_dir.is_some() => return None,
                Err(_) => {
                    part.entries += 1;
                    part.pending
                        .push((path_of(&join(dir, name.to_bytes())), unreadable_entry()));
                }
            }
        }
        Some(part)
    }

    /// Lists a folder afresh under the rules (whose stamps `rules` were taken before).
    fn list(
        &self,
        fd: &OwnedFd,
        dir_rel: &Path,
        dir: DirStamp,
        rules: RuleStamps,
        tainted: bool,
    ) -> (Part, Listing) {
        let mut part = Part::default();
        let mut names = Names::default();
        let dir_rules = self.rules.in_dir(dir_rel);
        let dir_bytes = dir_rel.as_os_str().as_bytes();
        let mut rel_buf = Vec::new();
        let complete = (|| {
            let Ok(mut d) = rustix::fs::Dir::read_from(fd) else {
                return false;
            };
            while let Some(item) = d.read() {
                let Ok(item) = item else {
                    return false;
                };
                let name = item.file_name();
                let bytes = name.to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                join_into(&mut rel_buf, dir_bytes, bytes);
                let rel = Path::new(std::ffi::OsStr::from_bytes(&rel_buf));
                let st = match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => st,
                    // Gone since it was listed: not part of the tree.
                    Err(rustix::io::Errno::NOENT) => continue,
                    Err(e) => {
                        tracing::debug!(path = %rel.display(), error = %e, "checkpoint walk: stat failed");
                        if dir_rules.keeps(rel, false) {
                            part.entries += 1;
                            part.pending.push((rel.to_path_buf(), unreadable_entry()));
                            names.push(bytes, None, None);
                        }
                        continue;
                    }
                };
                let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
                if !dir_rules.keeps(rel, is_dir) {
                    continue;
                }
                let slot = self.cache.and_then(|c| c.slot_of(&rel_buf));
                self.visit(&mut part, (dir_bytes, bytes), slot, &st, tainted);
                names.push(bytes, Some(is_dir), slot);
            }
            true
        })();
        let (names, children) = names.finish();
        let listing = Listing {
            dir,
            rules,
            listed_at_ns: self.started_ns,
            names,
            children,
            complete,
        };
        (part, listing)
    }

    /// Walks one folder: its entries, its listing, and whether it could be listed in full.
    fn folder(&self, todo: &Todo) -> (Part, Option<Listing>, Option<Arc<Listing>>, bool) {
        let (dir_rel, expected, tainted) = todo;
        let Some((fd, st)) = open_dir(&self.root_fd, dir_rel, *expected) else {
            return (Part::default(), None, None, false);
        };
        let stamp = dir_stamp(&st);
        let is_root = dir_rel.as_os_str().is_empty();
        let prev = self.prev.get(dir_rel);
        if let Some(p) = prev.filter(|p| !tainted && p.names_hold(&stamp)) {
            let rules = rule_stamps(&fd, is_root, Some(&p.rules));
            if p.rules_hold(&rules)
                && let Some(part) = self.stat_listed(&fd, dir_rel, p)
            {
                return (part, None, Some(Arc::clone(p)), true);
            }
        }
        let rules = rule_stamps(&fd, is_root, None);
        // The rules of this folder changed (or are not known): those of every folder beneath
        // it are decided afresh too.
        let taint = *tainted || prev.is_none_or(|p| !p.rules_hold(&rules));
        let (part, listing) = self.list(&fd, dir_rel, stamp, rules, taint);
        let complete = listing.complete;
        (part, Some(listing), None, complete)
    }
}

/// Walks `root` against the stat cache `cache` and the folder cache `prev` (the previous walk's
/// listings); `started_ns`: the start of this walk (the listings' `listed_at_ns`).
pub(crate) fn walk(
    root: &Path,
    opts: &SnapshotOptions,
    cache: Option<&StatCache>,
    prev: &DirCache,
    started_ns: i64,
) -> Result<Walked> {
    let rules = aibuddy_sandbox::local::project_rules(root, opts.threads, opts.skip.clone())
        .map_err(|e| CheckpointError::Walk(e.to_string()))?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let root_fd = rustix::fs::open(root, dir_flags, Mode::empty())
        .map_err(|e| CheckpointError::io("open project", root, e.into()))?;
    let ctx = Ctx {
        root_fd,
        rules,
        opts,
        cache,
        prev,
        started_ns,
    };
    let queue = Mutex::new(Queue {
        dirs: vec![(PathBuf::new(), None, false)],
        active: 0,
    });
    let ready = Condvar::new();
    let out: Mutex<Vec<Walked>> = Mutex::new(Vec::new());
    let unlisted: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let worker = || {
        let mut local = Walked::default();
        loop {
            // The next folder, or the end of the walk.
            let todo = {
                let Ok(mut q) = queue.lock() else { break };
                loop {
                    if let Some(d) = q.dirs.pop() {
                        q.active += 1;
                        break Some(d);
                    }
                    if q.active == 0 {
                        ready.notify_all();
                        break None;
                    }
                    q = match ready.wait(q) {
                        Ok(q) => q,
                        Err(_) => break None,
                    };
                }
            };
            let Some(todo) = todo else { break };
            let (part, fresh, reused, complete) = ctx.folder(&todo);
            let dir_rel = todo.0;
            if !complete && !dir_rel.as_os_str().is_empty() {
                // Listed in part or not at all: the folder stands as unreadable.
                tracing::debug!(path = %dir_rel.display(), "checkpoint walk: folder not listed");
                if let Ok(mut u) = unlisted.lock() {
                    u.push(dir_rel.clone());
                }
            }
            local.pending.extend(part.pending);
            local.listed += usize::from(fresh.is_some());
            local.known += part.known;
            local.entries += part.entries;
            if let Some(l) = reused.or_else(|| fresh.map(Arc::new)) {
                local.dirs.dirs.insert(dir_rel, l);
            }
            let Ok(mut q) = queue.lock() else { break };
            q.dirs.extend(part.subdirs);
            q.active -= 1;
            ready.notify_all();
        }
        if let Ok(mut o) = out.lock() {
            o.push(local);
        }
    };
    // Every worker a thread of its own, all started at once, the calling thread waiting: on a
    // busy machine a new thread is placed where a CPU is free, while a helper of the calling
    // thread tended to wait behind it (measured: the walk then ran on one CPU). Measured again
    // (2026-12-04): helpers started only once the root's folders are queued (the calling thread
    // walking or waiting) hand over less and were faster at load 6 to 8, but at load under 2
    // no such helper ran beside the first worker in 8 runs (wall time = CPU time), where
    // these workers did in 3 of 4.
    let threads = opts.walk_threads.clamp(1, 8);
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    let mut walked = Walked::default();
    for p in out.into_inner().unwrap_or_default() {
        if walked.pending.is_empty() {
            walked.pending = p.pending;
        } else {
            walked.pending.extend(p.pending);
        }
        walked.known += p.known;
        walked.listed += p.listed;
        walked.entries += p.entries;
        walked.dirs.dirs.extend(p.dirs.dirs);
    }
    let unlisted = unlisted.into_inner().unwrap_or_default();
    if !unlisted.is_empty() {
        walked.unlisted = true;
        walked.pending.retain(|(p, _)| !unlisted.contains(p));
        walked
            .pending
            .extend(unlisted.into_iter().map(|p| (p, unreadable_entry())));
    }
    Ok(walked)
}
