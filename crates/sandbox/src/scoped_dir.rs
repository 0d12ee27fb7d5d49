//! A read-only, capability-scoped directory for readers that are not sandbox operations (skill
//! loading and `view_skill`). Same mechanism as the local adapter: a cap-std [`Dir`] handle, with
//! every path resolved beneath it by the kernel (openat2 `RESOLVE_BENEATH`, cap-std's
//! per-component resolution on older kernels). `..`, absolute paths and symlinks that lead
//! outside, also when swapped in mid-read, fail as [`SandboxError::Escape`] (Authorization stage);
//! symlinks that stay beneath are followed. Reads are bounded and refuse fifos and devices.

use std::path::{Component, Path};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use tokio_util::sync::CancellationToken;

use crate::api::EntryKind;
use crate::error::SandboxError;
use crate::local::fsio;

/// One directory entry, as listed: a symlink is not followed (`kind` is `Symlink`; ask
/// [`ScopedDir::kind`] to follow it beneath the handle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The name; non-UTF-8 names are shown lossily and cannot be opened by this name.
    pub name: String,
    pub utf8: bool,
    pub kind: EntryKind,
}

/// A directory handle; nothing outside it can be reached through it.
#[derive(Debug)]
pub struct ScopedDir {
    dir: Dir,
    shown: String,
}

fn kind_of(ft: &cap_std::fs::FileType) -> EntryKind {
    if ft.is_symlink() {
        EntryKind::Symlink
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

/// Refuses, before any system call, what can never be beneath: absolute paths, `..`, empty paths.
fn lexically_beneath(rel: &Path, shown: &str) -> Result<(), SandboxError> {
    if rel.as_os_str().is_empty() {
        return Err(SandboxError::InvalidPath {
            path: shown.to_string(),
            reason: "empty path".into(),
        });
    }
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(SandboxError::Escape {
            path: shown.to_string(),
        });
    }
    Ok(())
}

impl ScopedDir {
    /// Open a root chosen by the person (the project, the data directory, the bundled skills):
    /// the one ambient open. Everything after it is relative to the handle.
    pub fn open_root(path: &Path) -> Result<Self, SandboxError> {
        let shown = path.display().to_string();
        let dir = Dir::open_ambient_dir(path, ambient_authority())
            .map_err(|e| SandboxError::from_io("open directory", &shown, e))?;
        Ok(ScopedDir { dir, shown })
    }

    /// The root as it was opened, for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn label(&self, rel: &Path) -> String {
        format!("{}/{}", self.shown.trim_end_matches('/'), rel.display())
    }

    /// A sub-directory beneath this one, as its own handle (so later reads stay beneath it).
    pub fn open_dir(&self, rel: &Path) -> Result<ScopedDir, SandboxError> {
        let shown = self.label(rel);
        lexically_beneath(rel, &shown)?;
        let dir = self
            .dir
            .open_dir(rel)
            .map_err(|e| SandboxError::from_io("open directory", &shown, e))?;
        Ok(ScopedDir { dir, shown })
    }

    /// What `rel` is, following symlinks only beneath the handle (never `Symlink`).
    pub fn kind(&self, rel: &Path) -> Result<EntryKind, SandboxError> {
        let shown = self.label(rel);
        lexically_beneath(rel, &shown)?;
        let meta = self
            .dir
            .metadata(rel)
            .map_err(|e| SandboxError::from_io("stat", &shown, e))?;
        Ok(kind_of(&meta.file_type()))
    }

    /// The entries of this directory (not of a sub-path: open it first), unsorted, at most `max`.
    pub fn entries(&self, max: usize) -> Result<Vec<DirEntryInfo>, SandboxError> {
        let read = self
            .dir
            .entries()
            .map_err(|e| SandboxError::from_io("list", &self.shown, e))?;
        let mut out = Vec::new();
        for entry in read.take(max) {
            let entry = entry.map_err(|e| SandboxError::from_io("list", &self.shown, e))?;
            let name = entry.file_name();
            let utf8 = name.to_str().is_some();
            let ft = entry
                .file_type()
                .map_err(|e| SandboxError::from_io("stat", &self.shown, e))?;
            out.push(DirEntryInfo {
                name: name.to_string_lossy().into_owned(),
                utf8,
                kind: kind_of(&ft),
            });
        }
        Ok(out)
    }

    /// A whole regular file beneath the handle, at most `max` bytes (else `TooLarge`); fifos,
    /// sockets and devices are refused (`NotRegular`) without being opened.
    pub fn read_regular(&self, rel: &Path, max: u64) -> Result<Vec<u8>, SandboxError> {
        let shown = self.label(rel);
        lexically_beneath(rel, &shown)?;
        fsio::read_whole(&self.dir, rel, &shown, max, &CancellationToken::new())
            .map(|(bytes, _)| bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Stage;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_are_followed_only_beneath() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/in.txt"), "inside").unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "SECRET").unwrap();
        symlink(tmp.path().join("secret.txt"), root.join("a/leak.txt")).unwrap();
        symlink(tmp.path(), root.join("a/up")).unwrap();
        symlink("b/in.txt", root.join("a/alias.txt")).unwrap();
        symlink("..", root.join("a/b/parent")).unwrap();

        let dir = ScopedDir::open_root(&root).unwrap();
        let a = dir.open_dir(Path::new("a")).unwrap();
        assert_eq!(
            a.read_regular(Path::new("alias.txt"), 100).unwrap(),
            b"inside"
        );
        assert_eq!(a.kind(Path::new("b/parent")).unwrap(), EntryKind::Dir);
        for bad in ["leak.txt", "up/secret.txt", "../a/b/in.txt", "/etc/passwd"] {
            let e = a.read_regular(Path::new(bad), 100).unwrap_err();
            assert_eq!(e.stage(), Stage::Authorization, "{bad}: {e}");
        }
        // `b/parent` is `a` from the root's view, but beneath `b` it leads out of the handle.
        let b = a.open_dir(Path::new("b")).unwrap();
        let e = b
            .read_regular(Path::new("parent/b/in.txt"), 100)
            .unwrap_err();
        assert_eq!(e.stage(), Stage::Authorization, "{e}");
        assert_eq!(
            a.open_dir(Path::new("up")).unwrap_err().stage(),
            Stage::Authorization
        );
        let entries = a.entries(100).unwrap();
        assert_eq!(entries.len(), 4);
        assert_eq!(
            entries
                .iter()
                .filter(|e| e.kind == EntryKind::Symlink)
                .count(),
            3
        );
        assert!(
            entries
                .iter()
                .any(|e| e.name == "b" && e.kind == EntryKind::Dir)
        );
    }

    #[test]
    fn reads_are_bounded_and_regular_only() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("big"), vec![b'x'; 100]).unwrap();
        let dir = ScopedDir::open_root(tmp.path()).unwrap();
        assert!(matches!(
            dir.read_regular(Path::new("big"), 10),
            Err(SandboxError::TooLarge { .. })
        ));
        assert!(matches!(
            dir.read_regular(Path::new("."), 10),
            Err(SandboxError::IsADirectory { .. })
        ));
        let fifo = tmp.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(matches!(
            dir.read_regular(Path::new("fifo"), 10),
            Err(SandboxError::NotRegular { .. })
        ));
    }
}
