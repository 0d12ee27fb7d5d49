//! ls: one directory level through the scoped `Dir`, bounded, with type and size; heavy or
//! gitignored folders (`.git`, `node_modules`, ...) are summarised by a bounded child count.

use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::ignores::IgnoreRules;
use crate::api::{EntryKind, IgnoredSummary, ListEntry, ListRequest, Listing};
use crate::bounded::BoundedSmallest;
use crate::error::SandboxError;
use crate::scope;

/// Folders never expanded, whatever the ignore files say.
pub const ALWAYS_SUMMARISED: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".next",
    ".gradle",
    ".tox",
];

pub fn list(
    s: &Scoped,
    req: &ListRequest,
    cancel: &CancellationToken,
) -> Result<Listing, SandboxError> {
    let shown = req.path.as_deref().unwrap_or(".");
    let rel = s.rel_or_root(req.path.as_deref())?;
    let limit = req.limit.unwrap_or(s.limits.ls_entries);
    let canon = s
        .dir
        .canonicalize(&rel)
        .map_err(|e| SandboxError::from_io("resolve", shown, e))?;
    let here = if canon.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        canon.clone()
    };
    let read = s
        .dir
        .read_dir(&here)
        .map_err(|e| SandboxError::from_io("list", shown, e))?;
    // Ignore rules that apply to the children: the ancestors' and this directory's own, read
    // through the root `Dir`. Beneath an ignored directory every child directory is ignored.
    let ignores = IgnoreRules::new(s)?;
    let here_ignored = ignores.is_dir_or_parent_ignored(&canon);
    let mut kept: BoundedSmallest<Vec<u8>, ListEntry> = BoundedSmallest::new(limit);
    for entry in read {
        if cancel.is_cancelled() {
            return Err(SandboxError::Cancelled { op: "ls" });
        }
        let entry = entry.map_err(|e| SandboxError::from_io("list", shown, e))?;
        let name_os = entry.file_name();
        let key = name_os.as_encoded_bytes().to_vec();
        if !kept.would_keep(&key) {
            kept.count_unkept(1);
            continue;
        }
        let name = name_os.to_string_lossy().into_owned();
        let child = canon.join(&name_os);
        let Ok(ft) = entry.file_type() else {
            kept.offer(
                key,
                ListEntry {
                    name,
                    kind: EntryKind::Other,
                    size: None,
                    symlink_target: None,
                    symlink_inside_root: None,
                    ignored: None,
                },
            );
            continue;
        };
        let size = entry.metadata().ok().map(|m| m.len());
        let mut item = ListEntry {
            name,
            kind: if ft.is_dir() {
                EntryKind::Dir
            } else if ft.is_file() {
                EntryKind::File
            } else if ft.is_symlink() {
                EntryKind::Symlink
            } else {
                EntryKind::Other
            },
            size: if ft.is_dir() { None } else { size },
            symlink_target: None,
            symlink_inside_root: None,
            ignored: None,
        };
        if ft.is_symlink() {
            item.symlink_target = s
                .dir
                .read_link_contents(&child)
                .ok()
                .map(|t| t.to_string_lossy().into_owned());
            item.symlink_inside_root = match s.dir.metadata(&child) {
                Ok(_) => Some(true),
                Err(e) => {
                    let err = SandboxError::from_io("stat", "", e);
                    if err.is_escape() { Some(false) } else { None }
                }
            };
        }
        if ft.is_dir() {
            let reason = if ALWAYS_SUMMARISED.contains(&item.name.as_str()) {
                Some(item.name.clone())
            } else if here_ignored || ignores.is_ignored(&child, true) {
                Some("gitignored".to_string())
            } else {
                None
            };
            if let Some(reason) = reason {
                let (children, more) = count_children(s, &child, cancel);
                item.ignored = Some(IgnoredSummary {
                    reason,
                    children,
                    more,
                });
            }
        }
        kept.offer(key, item);
    }
    let (entries, omitted) = kept.finish();
    Ok(Listing {
        path: scope::display(&canon),
        entries,
        omitted,
    })
}

fn count_children(s: &Scoped, child: &Path, cancel: &CancellationToken) -> (u64, bool) {
    let Ok(read) = s.dir.read_dir(child) else {
        return (0, false);
    };
    let max = s.limits.ls_summary_children;
    let mut n = 0;
    for _ in read {
        if n >= max || cancel.is_cancelled() {
            return (n, true);
        }
        n += 1;
    }
    (n, false)
}
