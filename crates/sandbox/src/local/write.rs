//! write: atomic replacement through the scoped `Dir`. The parent is created and opened beneath
//! the root; the temp file is created in that parent handle, written, fsynced, given the old
//! file's permissions, then renamed over the target within the same handle. The target is
//! then read back and compared (Verification).

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::fsio::{CancelReader, check_regular, identity, open_regular, read_error, read_whole};
use crate::api::{
    Expected, FileStats, Fingerprint, Verified, WriteOutcome, WritePlan, WriteRequest,
};
use crate::error::SandboxError;
use crate::scope;
use crate::text::{Fingerprinter, fingerprint, stats};

/// The parent directory and file name of a relative target.
fn split(rel: &Path, given: &str) -> Result<(PathBuf, PathBuf), SandboxError> {
    let mut parent = rel.to_path_buf();
    match parent.components().next_back() {
        Some(Component::Normal(_)) => {}
        _ => {
            return Err(SandboxError::InvalidPath {
                path: given.to_string(),
                reason: "does not name a file".into(),
            });
        }
    }
    let name = PathBuf::from(parent.file_name().unwrap_or_default());
    parent.pop();
    if parent.as_os_str().is_empty() {
        parent.push(".");
    }
    Ok((parent, name))
}

/// The state of an existing target inside an opened parent. Only a file of at most
/// `edit_max_bytes` is held in memory (for the diff); a larger one is streamed through
/// [`Fingerprinter`] in chunks, so writing over a huge project file costs no more memory than a
/// chunk.
pub struct Existing {
    /// The content, when at most `edit_max_bytes`.
    pub bytes: Option<Vec<u8>>,
    pub fingerprint: Fingerprint,
    pub stats: FileStats,
    pub permissions: Permissions,
}

/// Largest existing file a write replaces (it is streamed, never loaded whole).
pub const MAX_REPLACED_BYTES: u64 = 1 << 30;

/// Read the current target (if any). Refuses symlinks, directories and special files.
pub fn existing(
    s: &Scoped,
    parent: &Dir,
    name: &Path,
    given: &str,
    cancel: &CancellationToken,
) -> Result<Option<Existing>, SandboxError> {
    let meta = match parent.symlink_metadata(name) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SandboxError::from_io("stat", given, e)),
    };
    if meta.file_type().is_symlink() {
        let target = parent
            .read_link_contents(name)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(SandboxError::SymlinkTarget {
            path: given.to_string(),
            target,
        });
    }
    check_regular(&meta.file_type(), given)?;
    let keep = s.limits.edit_max_bytes;
    if meta.len() <= keep {
        let (bytes, meta) = read_whole(parent, name, given, keep, cancel)?;
        return Ok(Some(Existing {
            fingerprint: fingerprint(&bytes),
            stats: stats(&bytes),
            bytes: Some(bytes),
            permissions: meta.permissions(),
        }));
    }
    let max = keep.max(MAX_REPLACED_BYTES);
    let (file, meta) = open_regular(parent, name, given)?;
    if meta.len() > max {
        return Err(SandboxError::TooLarge {
            path: given.to_string(),
            size: meta.len(),
            max,
        });
    }
    let mut f = Fingerprinter::default();
    let mut reader = CancelReader {
        inner: (&file).take(max + 1),
        cancel,
    };
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = reader
            .read(&mut chunk)
            .map_err(|e| read_error("read", given, cancel, e))?;
        if n == 0 {
            break;
        }
        f.update(&chunk[..n]);
    }
    let after = file
        .metadata()
        .map_err(|e| SandboxError::from_io("stat", given, e))?;
    if f.stats().bytes != meta.len() || identity(&after) != identity(&meta) {
        return Err(SandboxError::Changed {
            path: given.to_string(),
        });
    }
    Ok(Some(Existing {
        bytes: None,
        fingerprint: f.finish(),
        stats: f.stats(),
        permissions: meta.permissions(),
    }))
}

/// Parent directories of `parent` (relative) that do not exist yet, shallowest first.
fn missing_dirs(dir: &Dir, parent: &Path, given: &str) -> Result<Vec<String>, SandboxError> {
    let mut missing = Vec::new();
    let mut acc = PathBuf::new();
    for c in parent.components() {
        acc.push(c);
        if matches!(c, Component::CurDir) {
            continue;
        }
        match dir.metadata(&acc) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SandboxError::NotADirectory {
                    path: scope::display(&acc),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(scope::display(&acc))
            }
            Err(e) => return Err(SandboxError::from_io("stat", given, e)),
        }
    }
    Ok(missing)
}

pub fn preview(
    s: &Scoped,
    req: &WriteRequest,
    cancel: &CancellationToken,
) -> Result<WritePlan, SandboxError> {
    let rel = s.rel(&req.path)?;
    let (parent_rel, name) = split(&rel, &req.path)?;
    let creates_dirs = missing_dirs(&s.dir, &parent_rel, &req.path)?;
    let current = if creates_dirs.is_empty() {
        let parent = s
            .dir
            .open_dir(&parent_rel)
            .map_err(|e| SandboxError::from_io("open", &req.path, e))?;
        existing(s, &parent, &name, &req.path, cancel)?
    } else {
        None
    };
    let path = scope::display(&rel);
    let old_text = match &current {
        None => Some(String::new()),
        Some(c) => c
            .bytes
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_string),
    };
    let diff = old_text
        .filter(|_| req.content.len() as u64 <= s.limits.edit_max_bytes)
        .map(|old| crate::edits::unified_diff(&path, &old, &req.content));
    Ok(WritePlan {
        diff,
        path,
        existing: current.as_ref().map(|c| c.stats),
        new: stats(req.content.as_bytes()),
        creates_dirs,
        fingerprint: current.as_ref().map(|c| c.fingerprint),
    })
}

pub fn write(
    s: &Scoped,
    req: &WriteRequest,
    cancel: &CancellationToken,
) -> Result<WriteOutcome, SandboxError> {
    let rel = s.rel(&req.path)?;
    let done = replace(
        s,
        &rel,
        &req.path,
        req.content.as_bytes(),
        req.expect,
        cancel,
    )?;
    Ok(WriteOutcome {
        path: scope::display(&rel),
        bytes_written: req.content.len() as u64,
        created: done.previous.is_none(),
        previous: done.previous,
        lines: stats(req.content.as_bytes()).lines,
        mode: done.mode,
        verified: Verified {
            region: "whole file".into(),
            bytes_compared: done.compared,
        },
    })
}

pub struct Replaced {
    pub previous: Option<FileStats>,
    pub mode: u32,
    pub compared: u64,
}

/// Atomically replace (or create) `rel` with `content`, then read it back and compare.
pub fn replace(
    s: &Scoped,
    rel: &Path,
    given: &str,
    content: &[u8],
    expect: Option<Expected>,
    cancel: &CancellationToken,
) -> Result<Replaced, SandboxError> {
    let (parent_rel, name) = split(rel, given)?;
    // Resolve existing components first (beneath the root) so an escaping symlink in the
    // parent chain is reported as the escape it is, before anything is created.
    if !missing_dirs(&s.dir, &parent_rel, given)?.is_empty() {
        s.dir
            .create_dir_all(&parent_rel)
            .map_err(|e| SandboxError::from_io("create directories for", given, e))?;
    }
    let parent = s
        .dir
        .open_dir(&parent_rel)
        .map_err(|e| SandboxError::from_io("open", given, e))?;
    let current = existing(s, &parent, &name, given, cancel)?;
    check_expectation(current.as_ref(), expect, given)?;
    let mode = current
        .as_ref()
        .map(|c| c.permissions.mode() & 0o7777)
        .unwrap_or(0o644);

    let temp = temp_name(&name);
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true).mode(mode);
    let mut file = parent
        .open_with(&temp, &opts)
        .map_err(|e| SandboxError::from_io("create temp file for", given, e))?;
    let cleanup = |err: SandboxError| {
        if let Err(e) = parent.remove_file(&temp) {
            tracing::warn!(path = given, error = %e, "could not remove temp file");
        }
        err
    };
    let staged = (|| -> Result<(), SandboxError> {
        for chunk in content.chunks(1 << 20) {
            if cancel.is_cancelled() {
                return Err(SandboxError::Cancelled { op: "write" });
            }
            file.write_all(chunk)
                .map_err(|e| SandboxError::from_io("write", given, e))?;
        }
        if let Some(c) = &current {
            file.set_permissions(c.permissions.clone())
                .map_err(|e| SandboxError::from_io("set permissions of", given, e))?;
        }
        file.sync_all()
            .map_err(|e| SandboxError::from_io("sync", given, e))?;
        // Last chance to back out: the file must still be what the plan saw.
        let again = existing(s, &parent, &name, given, cancel)?;
        let same = match (&current, &again) {
            (None, None) => true,
            (Some(a), Some(b)) => a.bytes == b.bytes && a.fingerprint == b.fingerprint,
            _ => false,
        };
        if !same {
            return Err(SandboxError::Changed {
                path: given.to_string(),
            });
        }
        if cancel.is_cancelled() {
            return Err(SandboxError::Cancelled { op: "write" });
        }
        Ok(())
    })();
    drop(file);
    staged.map_err(cleanup)?;
    parent
        .rename(&temp, &parent, &name)
        .map_err(|e| cleanup(SandboxError::from_io("rename into place", given, e)))?;
    sync_dir(&parent);

    // Effect verification: read the target back through the same handle.
    let (back, meta) = read_whole(
        &parent,
        &name,
        given,
        content.len() as u64 + 1,
        &CancellationToken::new(),
    )
    .map_err(|e| SandboxError::Verification {
        path: given.to_string(),
        detail: format!("could not read the file back: {e}"),
    })?;
    if back != content {
        return Err(SandboxError::Verification {
            path: given.to_string(),
            detail: format!(
                "read back {} bytes that differ from the {} bytes written",
                back.len(),
                content.len()
            ),
        });
    }
    Ok(Replaced {
        previous: current.as_ref().map(|c| c.stats),
        mode: meta.permissions().mode() & 0o7777,
        compared: back.len() as u64,
    })
}

fn check_expectation(
    current: Option<&Existing>,
    expect: Option<Expected>,
    given: &str,
) -> Result<(), SandboxError> {
    let ok = match (expect, current) {
        (None, _) => true,
        (Some(Expected::Absent), None) => true,
        (Some(Expected::Content(fp)), Some(c)) => c.fingerprint == fp,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(SandboxError::Changed {
            path: given.to_string(),
        })
    }
}

fn temp_name(name: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut base = name.to_string_lossy().into_owned();
    // Keep the temp name within NAME_MAX.
    base.truncate(base.floor_char_boundary(200));
    PathBuf::from(format!(
        ".{base}.aibuddy-{}-{n}-{stamp}.tmp",
        std::process::id()
    ))
}

/// fsync the directory so the rename is durable; failure is logged, not fatal.
fn sync_dir(parent: &Dir) {
    match parent.open(".") {
        Ok(f) => {
            if let Err(e) = f.sync_all() {
                tracing::debug!(error = %e, "directory fsync failed");
            }
        }
        Err(e) => tracing::debug!(error = %e, "could not open directory for fsync"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_parent_and_file() {
        assert_eq!(
            split(Path::new("a/b/c.txt"), "a/b/c.txt").unwrap(),
            (PathBuf::from("a/b"), PathBuf::from("c.txt"))
        );
        assert_eq!(
            split(Path::new("c.txt"), "c.txt").unwrap(),
            (PathBuf::from("."), PathBuf::from("c.txt"))
        );
        assert!(split(Path::new("."), ".").is_err());
        assert!(split(Path::new("a/.."), "a/..").is_err());
    }
}
