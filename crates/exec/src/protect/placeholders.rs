//! Placeholders: empty files and directories standing in for absent protected paths while a
//! command runs (namespace path), their per-process manifest, the sweep of what a dead app left,
//! and the trash that lets an empty placeholder directory leave the project in one rename.

use super::*;

// ------------------------------------------------------------------ placeholders

/// Placeholders this process holds (path -> commands using it, kind): concurrent commands in one
/// project share one, and the last to end removes it.
pub(super) fn placeholders() -> &'static Mutex<HashMap<PathBuf, (usize, Placeholder)>> {
    static HELD: std::sync::OnceLock<Mutex<HashMap<PathBuf, (usize, Placeholder)>>> =
        std::sync::OnceLock::new();
    HELD.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Joins the placeholder at `path` another command holds, or creates one when nothing is there:
/// `true` when one is held.
pub(super) fn hold_placeholder(path: &Path, kind: Placeholder) -> bool {
    let mut held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((n, _)) = held.get_mut(path) {
        *n += 1;
        return true;
    }
    if std::fs::symlink_metadata(path).is_ok() {
        return false;
    }
    let new_file = |bytes: &[u8]| {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .is_ok()
    };
    let created = match kind {
        Placeholder::Dir => {
            trash::reuse_dir(path) || std::fs::DirBuilder::new().mode(0o755).create(path).is_ok()
        }
        Placeholder::File => new_file(b""),
        Placeholder::SameDir => new_file(SAME_DIR),
        Placeholder::None => false,
    };
    if created {
        held.insert(path.to_path_buf(), (1, kind));
    }
    created
}

/// Whether the file at `path` is still what a placeholder was made as: empty, or a `commondir`
/// naming its own directory.
pub(super) fn untouched_file(path: &Path, m: &std::fs::Metadata) -> bool {
    m.is_file()
        && (m.len() == 0
            || (path.file_name() == Some(std::ffi::OsStr::new("commondir"))
                && m.len() == SAME_DIR.len() as u64
                && read_nonblocking(path, SAME_DIR.len() as u64).is_ok_and(|b| b == SAME_DIR)))
}

/// The file listing this process's placeholders (NUL-separated paths), so that the next process
/// removes the ones a `kill -9` left: `<temp>/aibuddy-placeholders-<pid>`.
pub(super) const MANIFEST_PREFIX: &str = "aibuddy-placeholders-";

pub(super) fn manifest_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{MANIFEST_PREFIX}{pid}"))
}

/// Rewrites the manifest: the placeholders held now plus `about_to_create` (listed before they
/// are made, so a `kill -9` in between leaves none unlisted). Once per command start and end, not
/// per placeholder, and never by truncating to zero (ext4 flushes such a file when it is closed:
/// milliseconds each on a busy disk).
pub(super) fn record_manifest(about_to_create: &[PathBuf]) {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    let held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
    let path = manifest_path(&std::env::temp_dir(), std::process::id());
    let mut bytes = Vec::new();
    for p in held.keys().chain(about_to_create) {
        bytes.extend_from_slice(p.as_os_str().as_bytes());
        bytes.push(0);
    }
    if bytes.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| {
            f.write_all(&bytes)?;
            f.set_len(bytes.len() as u64)
        });
    if let Err(e) = written {
        tracing::warn!(error = %e, "placeholder manifest not written");
    }
}

/// Removes the placeholders that dead processes (a `kill -9` of an app mid-command) left behind,
/// still empty ones only, once per process: for a reader of the project's tree (checkpoints) that
/// must not take them for files a command made.
pub fn sweep_leftover_placeholders() {
    sweep_dead_manifests();
}

/// Removes the placeholders that dead processes left (still empty ones only), and their trash
/// directories, once per process.
pub(super) fn sweep_dead_manifests() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        sweep_manifests_in(&std::env::temp_dir());
        for base in trash::bases() {
            sweep_trash_in(&base);
        }
    });
}

/// Removes the trash directories dead processes left in `dir` (empty directories only).
pub(crate) fn sweep_trash_in(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(trash::PREFIX))
            .and_then(|p| p.parse::<i32>().ok())
            .filter(|p| *p > 0)
        else {
            continue;
        };
        if pid_alive(pid) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        trash::sweep_dead(&e.path());
    }
}

/// Whether process `pid` may be alive (only `ESRCH` says it is not).
pub(super) fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// [`sweep_dead_manifests`] in `dir`: returns the placeholders removed.
pub(crate) fn sweep_manifests_in(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(MANIFEST_PREFIX))
            .and_then(|p| p.parse::<i32>().ok())
            .filter(|p| *p > 0)
        else {
            continue;
        };
        if pid_alive(pid) || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap_or_default();
        for raw in bytes.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let p = Path::new(std::ffi::OsStr::from_bytes(raw));
            let gone = match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir(p).is_ok(),
                Ok(m) if untouched_file(p, &m) => std::fs::remove_file(p).is_ok(),
                _ => false,
            };
            if gone {
                tracing::info!(path = %p.display(), "removed a placeholder a dead app left");
                removed.push(p.to_path_buf());
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    removed
}

/// Whether `path` is a placeholder this process holds.
pub(super) fn is_placeholder(path: &Path) -> bool {
    let held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
    held.contains_key(path)
}

/// Empties a placeholder in place (its inode stays: other commands have it bound), or puts a
/// `commondir` placeholder's content back: `true` when something was in it.
pub(super) fn empty_placeholder(path: &Path) -> bool {
    let kind = {
        let held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
        held.get(path).map(|(_, k)| *k)
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let mut any = false;
            for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
                any = true;
                let _ = remove_any(&e.path());
            }
            any
        }
        Ok(m) if m.is_file() && kind == Some(Placeholder::SameDir) => {
            use std::io::Write;
            !untouched_file(path, &m)
                && std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)
                    .and_then(|mut f| f.write_all(SAME_DIR))
                    .is_ok()
        }
        Ok(m) if m.is_file() => {
            m.len() > 0
                && std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .and_then(|f| f.set_len(0))
                    .is_ok()
        }
        _ => false,
    }
}

/// Lets go of a placeholder; the last holder removes it when it is still empty.
pub(super) fn release_placeholder(path: &Path) {
    let mut held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
    let Some((n, _)) = held.get_mut(path) else {
        return;
    };
    *n -= 1;
    if *n > 0 {
        return;
    }
    held.remove(path);
    match std::fs::symlink_metadata(path) {
        // Only when empty: something outside the sandbox may have written into it.
        Ok(m) if m.is_dir() => trash::remove_empty_dir(path, m.dev()),
        Ok(m) if untouched_file(path, &m) => {
            let _ = std::fs::remove_file(path);
        }
        _ => {}
    }
}

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

/// Removal of empty placeholder directories off the command's path.
///
/// `rmdir(2)` of a directory on ext4 waits for the journal when the disk is busy (measured on the
/// development VM: 0.5-6 ms each while other builds write, against a few microseconds for an
/// `unlink` or a `rename`), and a command's end removed up to six of them (`.vscode`, `.idea`,
/// `.claude`, `.codex`, `.cursor`, `.aibuddy`): most of the guard's cost. A placeholder no command
/// holds any more is instead renamed, in one step, into this process's trash directory on the
/// same file system (`<temp>/aibuddy-trash-<pid>` or `<cache>/aibuddy/aibuddy-trash-<pid>`,
/// `0700`), so it is gone from the project at once. Up to 16 of them per file
/// system are kept there and become later placeholders by one rename back (never over something
/// that appeared: `RENAME_NOREPLACE`), so a placeholder directory needs no `mkdir` or `rmdir`;
/// beyond that a background thread removes them (a directory written into meanwhile is renamed
/// back when its name is still free). Where no trash directory shares the file system, the
/// directory is made and removed in place as before. A trash directory of a dead process (the
/// app killed: its kept directories) is emptied of empty directories and removed with the
/// placeholder manifests.
pub(super) mod trash {
    use std::collections::HashMap;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, OnceLock, mpsc};

    pub(in crate::protect) const PREFIX: &str = "aibuddy-trash-";

    /// Where trash directories may live: the temp dir, then `$XDG_CACHE_HOME/aibuddy` or
    /// `~/.cache/aibuddy` (the app's own environment is trusted).
    pub(super) fn bases() -> Vec<PathBuf> {
        let mut out = vec![std::env::temp_dir()];
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .map(|h| h.join(".cache"))
            });
        if let Some(c) = cache {
            out.push(c.join("aibuddy"));
        }
        out
    }

    /// This process's trash directory on the file system `dev`, created on first use.
    fn trash_on(dev: u64) -> Option<PathBuf> {
        static DIRS: OnceLock<Mutex<HashMap<u64, Option<PathBuf>>>> = OnceLock::new();
        let mut dirs = DIRS
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(known) = dirs.get(&dev) {
            return known.clone();
        }
        let found = bases().into_iter().find_map(|base| {
            let meta = std::fs::metadata(&base).ok()?;
            if meta.dev() != dev {
                return None;
            }
            let dir = base.join(format!("{PREFIX}{}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => Some(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Ours only if it is a real directory of this user (not a planted link).
                    let m = std::fs::symlink_metadata(&dir).ok()?;
                    // SAFETY: getuid has no preconditions.
                    (m.is_dir() && m.uid() == unsafe { libc::getuid() }).then_some(dir)
                }
                Err(_) => None,
            }
        });
        dirs.insert(dev, found.clone());
        found
    }

    /// A directory in the trash and where it came from.
    type Moved = (PathBuf, PathBuf);

    /// The background remover of moved directories (started on first use).
    fn remover() -> Option<mpsc::Sender<Moved>> {
        static TX: OnceLock<Option<Mutex<mpsc::Sender<Moved>>>> = OnceLock::new();
        let tx = TX.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Moved>();
            std::thread::Builder::new()
                .name("aibuddy-placeholder-trash".into())
                .spawn(move || {
                    for (moved, from) in rx {
                        if std::fs::remove_dir(&moved).is_ok() {
                            continue;
                        }
                        // Written into between the check and the move: back where it was.
                        if std::fs::symlink_metadata(&from).is_err()
                            && std::fs::rename(&moved, &from).is_ok()
                        {
                            continue;
                        }
                        tracing::warn!(path = %moved.display(), "a placeholder directory was written into and left in the trash");
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        });
        tx.as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Moves the empty directory `path` (on file system `dev`) into the trash and has it removed
    /// in the background: `true` when it is gone from `path` (or was not empty: left alone),
    /// `false` when the caller should remove it in place.
    fn discard_empty_dir(path: &Path, dev: u64) -> bool {
        match std::fs::read_dir(path).map(|mut entries| entries.next().is_some()) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(_) => return false,
        }
        let (Some(trash), Some(tx)) = (trash_on(dev), remover()) else {
            return false;
        };
        static N: AtomicU64 = AtomicU64::new(0);
        let moved = trash.join(N.fetch_add(1, Ordering::Relaxed).to_string());
        if std::fs::rename(path, &moved).is_err() {
            return false;
        }
        let item = (moved, path.to_path_buf());
        let item = {
            let mut pool = pool().lock().unwrap_or_else(|e| e.into_inner());
            let ready = pool.entry(dev).or_default();
            if ready.len() < POOL_MAX {
                ready.push(item);
                return true;
            }
            item
        };
        if let Err(mpsc::SendError((moved, _))) = tx.send(item) {
            let _ = std::fs::remove_dir(&moved);
        }
        true
    }

    /// Empty directories kept in the trash for the next placeholders, per file system, at most
    /// [`POOL_MAX`] each: a placeholder then comes and goes by two renames, no `mkdir` or `rmdir`
    /// (each allocates or frees a block and may wait for the journal).
    fn pool() -> &'static Mutex<HashMap<u64, Vec<Moved>>> {
        static POOL: OnceLock<Mutex<HashMap<u64, Vec<Moved>>>> = OnceLock::new();
        POOL.get_or_init(|| Mutex::new(HashMap::new()))
    }

    /// Placeholder directories kept for reuse per file system.
    const POOL_MAX: usize = 16;

    /// Makes the placeholder directory `path` from an empty one kept in the trash (one rename,
    /// never over something that appeared there meanwhile): `true` when it is there.
    pub(super) fn reuse_dir(path: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let Some(dev) = path
            .parent()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .map(|m| m.dev())
        else {
            return false;
        };
        let Some((kept, from)) = pool()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&dev)
            .and_then(Vec::pop)
        else {
            return false;
        };
        // Written into just before it was moved: the remover puts it back where it was.
        if std::fs::read_dir(&kept).map_or(true, |mut e| e.next().is_some()) {
            if let Some(tx) = remover() {
                let _ = tx.send((kept, from));
            }
            return false;
        }
        let (Ok(src), Ok(dst)) = (
            std::ffi::CString::new(kept.as_os_str().as_bytes()),
            std::ffi::CString::new(path.as_os_str().as_bytes()),
        ) else {
            return false;
        };
        // SAFETY: renameat2 on two NUL-terminated paths we own; RENAME_NOREPLACE never replaces
        // what is at `path`.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                src.as_ptr(),
                libc::AT_FDCWD,
                dst.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return true;
        }
        if let Some(tx) = remover() {
            let _ = tx.send((kept, from));
        }
        false
    }

    /// Removes the empty directory `path` (on file system `dev`): moved out of the project at
    /// once and removed in the background, or removed in place where there is no trash.
    pub(super) fn remove_empty_dir(path: &Path, dev: u64) {
        if !discard_empty_dir(path, dev) {
            let _ = std::fs::remove_dir(path);
        }
    }

    /// Removes the trash directory `dir` of a dead process: its empty directories, then itself.
    pub(super) fn sweep_dead(dir: &Path) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir(e.path());
            }
        }
        let _ = std::fs::remove_dir(dir);
    }
}
