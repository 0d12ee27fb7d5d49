//! Snapshots of protected paths (Landlock-only path): taken before a command, restored after it
//! when they changed, within [`SNAPSHOT_CAP`] bytes in all.

use std::os::unix::fs::OpenOptionsExt;

use super::*;

// ------------------------------------------------------------------ snapshots

/// One node of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    Dir { mode: u32 },
    File { mode: u32, bytes: Vec<u8> },
    Link { target: PathBuf },
}

/// A protected path's tree (relative paths, the path itself first), or `None` past the budget.
pub(super) fn snapshot(
    path: &Path,
    budget: &mut u64,
) -> std::io::Result<Option<Vec<(PathBuf, Node)>>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let p = if rel.as_os_str().is_empty() {
            path.to_path_buf()
        } else {
            path.join(&rel)
        };
        let m = std::fs::symlink_metadata(&p)?;
        let mode = m.permissions().mode() & 0o7777;
        let node = if m.file_type().is_symlink() {
            Node::Link {
                target: std::fs::read_link(&p)?,
            }
        } else if m.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(&p)?
                .flatten()
                .map(|e| e.file_name())
                .collect();
            names.sort();
            for n in names.into_iter().rev() {
                stack.push(rel.join(n));
            }
            Node::Dir { mode }
        } else if m.is_file() {
            if m.len() > *budget {
                return Ok(None);
            }
            *budget -= m.len();
            Node::File {
                mode,
                bytes: read_nonblocking(&p, m.len())?,
            }
        } else {
            // Fifos, sockets, devices: kept as an empty file's place (their kind is what counts).
            Node::File {
                mode: m.mode() & 0o170000,
                bytes: Vec::new(),
            }
        };
        out.push((rel, node));
    }
    Ok(Some(out))
}

/// At most `limit` bytes of a regular file, never blocking (a fifo swapped in reads as nothing).
pub(super) fn read_nonblocking(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    let mut bytes = Vec::new();
    f.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Removes whatever is at `path` (never following symlinks).
pub(super) fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Puts a snapshot back at `path` (whatever is there is removed first).
pub(super) fn restore(path: &Path, nodes: &[(PathBuf, Node)]) -> std::io::Result<()> {
    remove_any(path)?;
    for (rel, node) in nodes {
        let p = if rel.as_os_str().is_empty() {
            path.to_path_buf()
        } else {
            path.join(rel)
        };
        match node {
            Node::Dir { mode } => {
                std::fs::create_dir(&p)?;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode))?;
            }
            Node::File { mode, bytes } => {
                std::fs::write(&p, bytes)?;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode & 0o7777))?;
            }
            Node::Link { target } => std::os::unix::fs::symlink(target, &p)?,
        }
    }
    Ok(())
}
