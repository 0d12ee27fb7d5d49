//! The trust-relevant files of a project, read once: `.aibuddy/mcp.json` and
//! `.aibuddy/settings.json`. Their content (or absence, or refusal) is hashed into the digest the
//! person approves, and the same bytes are what settings and MCP configs are parsed from, so what
//! was approved is exactly what takes effect.
//!
//! A file that resolves outside the project (a symlinked `.aibuddy` or file) is refused: its content
//! is not used at all, and the refusal is part of the digest.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Project-relative paths of the trust-relevant files, in digest order.
pub const PROJECT_MCP: &str = ".aibuddy/mcp.json";
pub const PROJECT_SETTINGS: &str = crate::settings::PROJECT_SETTINGS;

/// Larger files are refused (a settings or MCP file is a few kilobytes).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What was found at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    Absent,
    Present(String),
    /// Not used: why (resolves outside the project, not a regular file, too large, not UTF-8,
    /// unreadable).
    Refused(String),
}

impl FileContent {
    pub fn text(&self) -> Option<&str> {
        match self {
            FileContent::Present(t) => Some(t),
            _ => None,
        }
    }
}

/// One trust-relevant file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    /// `.aibuddy/mcp.json` or `.aibuddy/settings.json`.
    pub relative: &'static str,
    pub path: PathBuf,
    pub content: FileContent,
}

/// The trust-relevant files of one project, as read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub mcp: ProjectFile,
    pub settings: ProjectFile,
}

impl Snapshot {
    /// Read both files beneath the canonical `project_root`.
    pub fn read(project_root: &Path) -> Snapshot {
        let file = |relative: &'static str| {
            let path = project_root.join(relative);
            ProjectFile {
                relative,
                content: read_inside(project_root, &path),
                path,
            }
        };
        Snapshot {
            mcp: file(PROJECT_MCP),
            settings: file(PROJECT_SETTINGS),
        }
    }

    /// Neither file exists: the project asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.mcp.content == FileContent::Absent && self.settings.content == FileContent::Absent
    }

    /// SHA-256 (hex) over the presence and content of both files.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"aibuddy-trust-v1\0");
        for f in [&self.mcp, &self.settings] {
            h.update(f.relative.as_bytes());
            h.update([0]);
            let (tag, body): (&[u8], &[u8]) = match &f.content {
                FileContent::Absent => (b"absent", b""),
                FileContent::Present(t) => (b"present", t.as_bytes()),
                FileContent::Refused(why) => (b"refused", why.as_bytes()),
            };
            h.update(tag);
            h.update((body.len() as u64).to_le_bytes());
            h.update(body);
        }
        hex::encode(h.finalize())
    }

    /// Problems for `tools check`: refused files, as `(file, message)`.
    pub fn refusals(&self) -> Vec<(&ProjectFile, &str)> {
        [&self.mcp, &self.settings]
            .into_iter()
            .filter_map(|f| match &f.content {
                FileContent::Refused(why) => Some((f, why.as_str())),
                _ => None,
            })
            .collect()
    }
}

/// Where an open file really is (through `/proc/self/fd`), so a symlink swapped in between a check
/// and the open cannot fool the containment test.
fn real_path_of(file: &std::fs::File, fallback: &Path) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .or_else(|_| std::fs::canonicalize(fallback))
}

/// Open for reading without blocking on a FIFO (reads of a regular file are unaffected).
pub(crate) fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Read `path` if it is a regular file that really lies beneath `root`.
pub fn read_inside(root: &Path, path: &Path) -> FileContent {
    // A FIFO or device would block or never end: only regular files are opened.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink is absent content, but not the same as nothing at all.
            return match std::fs::symlink_metadata(path) {
                Ok(_) => FileContent::Refused("is a dangling symbolic link".to_string()),
                Err(_) => FileContent::Absent,
            };
        }
        Err(e) => return FileContent::Refused(format!("cannot be read ({})", e.kind())),
        Ok(m) if !m.is_file() => {
            return FileContent::Refused("is not a regular file".to_string());
        }
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return FileContent::Refused(format!("is larger than {MAX_FILE_BYTES} bytes"));
        }
        Ok(_) => {}
    }
    read_checked(root, path)
}

/// The part of [`read_inside`] after its type check on the path. The path may have been swapped
/// (for a FIFO, a device, a symlink out) since that check: it is opened non-blocking, so a FIFO
/// cannot hang the app, and everything is decided again on the open file.
pub fn read_checked(root: &Path, path: &Path) -> FileContent {
    let file = match open_nonblocking(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileContent::Absent,
        Err(e) => return FileContent::Refused(format!("cannot be read ({})", e.kind())),
    };
    match (real_path_of(&file, path), file.metadata()) {
        (Ok(real), Ok(meta)) if real.starts_with(root) && meta.is_file() => {}
        (Ok(_), Ok(meta)) if !meta.is_file() => {
            return FileContent::Refused("is not a regular file".to_string());
        }
        (Ok(_), Ok(_)) => {
            return FileContent::Refused(
                "is a symbolic link that resolves outside the project".to_string(),
            );
        }
        (Err(e), _) | (_, Err(e)) => {
            return FileContent::Refused(format!("cannot be resolved ({})", e.kind()));
        }
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        return FileContent::Refused(format!("cannot be read ({})", e.kind()));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return FileContent::Refused(format!("is larger than {MAX_FILE_BYTES} bytes"));
    }
    match String::from_utf8(bytes) {
        Ok(t) => FileContent::Present(t),
        Err(_) => FileContent::Refused("is not valid UTF-8".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
        std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
        (tmp, root)
    }

    #[test]
    fn absent_present_and_digest_follow_every_change() {
        let (_t, root) = project();
        let empty = Snapshot::read(&root);
        assert!(empty.is_empty());
        std::fs::write(root.join(PROJECT_MCP), "{}").unwrap();
        let one = Snapshot::read(&root);
        assert_eq!(one.mcp.content, FileContent::Present("{}".into()));
        assert_ne!(one.digest(), empty.digest());
        std::fs::write(root.join(PROJECT_MCP), "{ }").unwrap();
        assert_ne!(Snapshot::read(&root).digest(), one.digest());
        std::fs::write(root.join(PROJECT_MCP), "{}").unwrap();
        assert_eq!(
            Snapshot::read(&root).digest(),
            one.digest(),
            "same content, same digest"
        );
        // Moving the same text to the other file is a different request.
        std::fs::remove_file(root.join(PROJECT_MCP)).unwrap();
        std::fs::write(root.join(PROJECT_SETTINGS), "{}").unwrap();
        assert_ne!(Snapshot::read(&root).digest(), one.digest());
    }

    #[test]
    fn a_symlink_out_of_the_project_is_refused_and_changes_the_digest() {
        let (tmp, root) = project();
        let outside = tmp.path().join("evil.json");
        std::fs::write(&outside, r#"{"mcpServers": {}}"#).unwrap();
        symlink(&outside, root.join(PROJECT_MCP)).unwrap();
        let s = Snapshot::read(&root);
        assert!(matches!(&s.mcp.content, FileContent::Refused(w) if w.contains("outside")));
        assert_eq!(s.refusals().len(), 1);
        assert_ne!(
            s.digest(),
            Snapshot::read(&tmp.path().join("nothing")).digest()
        );
    }

    #[test]
    fn a_symlinked_aibuddy_folder_pointing_out_is_refused() {
        let (tmp, root) = project();
        std::fs::remove_dir(root.join(".aibuddy")).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("settings.json"), "{}").unwrap();
        symlink(&elsewhere, root.join(".aibuddy")).unwrap();
        let s = Snapshot::read(&root);
        assert!(
            matches!(s.settings.content, FileContent::Refused(_)),
            "{s:?}"
        );
    }

    #[test]
    fn a_symlink_inside_the_project_is_read() {
        let (_t, root) = project();
        std::fs::write(root.join("shared.json"), "{\"a\":1}").unwrap();
        symlink(root.join("shared.json"), root.join(PROJECT_SETTINGS)).unwrap();
        assert_eq!(
            Snapshot::read(&root).settings.content,
            FileContent::Present("{\"a\":1}".into())
        );
    }

    #[test]
    fn fifos_dangling_links_and_huge_files_are_refused_without_blocking() {
        let (_t, root) = project();
        let fifo = root.join(PROJECT_MCP);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(matches!(
            Snapshot::read(&root).mcp.content,
            FileContent::Refused(_)
        ));
        std::fs::remove_file(&fifo).unwrap();
        symlink("/nonexistent/x", &fifo).unwrap();
        assert!(matches!(
            Snapshot::read(&root).mcp.content,
            FileContent::Refused(_)
        ));
        std::fs::remove_file(&fifo).unwrap();
        std::fs::write(&fifo, vec![b' '; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        assert!(matches!(
            Snapshot::read(&root).mcp.content,
            FileContent::Refused(_)
        ));
    }
}
