//! The person's own record files in the data directory (trust records, approval choices, the
//! hosts allowed for a project): written whole and atomically (a private temporary file, mode
//! 0600, renamed over the old one), and changed read-modify-write under an exclusive lock file,
//! so two processes (or two questions of one command) never lose each other's answer.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The key of `project` in the records: its path when it is valid UTF-8, otherwise its exact bytes
/// in hex behind a NUL (which no path contains). A lossy conversion would give two different
/// folders (`a\xff`, `a\xfe`) the same key, and so one's trust to the other.
pub fn record_key(project: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    match project.to_str() {
        Some(s) => s.to_string(),
        None => format!("\0bytes:{}", hex::encode(project.as_os_str().as_bytes())),
    }
}

/// Writes `bytes` to `path` through a private temporary file beside it, renamed over it.
pub(crate) fn write_private_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a record file needs a folder"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("record");
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        ulid::Ulid::new()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// An exclusive lock: a file created with `O_EXCL`, removed on drop. A lock older than
/// [`STALE_LOCK`] is taken to belong to a process that died and is broken. (`File::lock` would do,
/// but is newer than the crate's MSRV.)
pub(crate) struct FileLock(PathBuf);

const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(10);
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl FileLock {
    /// Waits up to [`LOCK_WAIT`] for the lock at `path`.
    pub(crate) fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => return Ok(FileLock(path.to_path_buf())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    if std::time::Instant::now() > deadline {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::WouldBlock,
                            "another process holds the lock",
                        ));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_record_is_private_and_whole_and_the_lock_excludes_a_second_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_private_atomically(&path, b"{}").unwrap();
        write_private_atomically(&path, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        let lock = dir.path().join("r.lock");
        let held = FileLock::acquire(&lock).unwrap();
        let path2 = lock.clone();
        let second = std::thread::spawn(move || {
            let t = std::time::Instant::now();
            FileLock::acquire(&path2).map(|_| t.elapsed())
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(held);
        let waited = second.join().unwrap().unwrap();
        assert!(
            waited >= std::time::Duration::from_millis(150),
            "{waited:?}"
        );
    }
}
