//! Rewinding a call: a pure plan (which paths go back to their before-state, which are
//! conflicts) and its application through the project's root `Dir` (cap-std), which never
//! resolves a path out of the project, so a symlink swapped into the tree cannot redirect a
//! write or a removal.
//!
//! A path the call changed (its before and after states differ) is put back to its
//! before-state. When its current state is no longer the call's after-state, someone changed it
//! since: a conflict, left alone unless forced. Entries that were not checkpointed cannot be put
//! back and are reported. Each file is written to a temporary name beside it and renamed into
//! place, so a reader sees the old or the new file, never half of one.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use serde::Serialize;

use crate::diff::show;
use crate::manifest::{Entry, Kind, Manifest, same};
use crate::objects::ObjectStore;

/// One path to put back: `to` is the before-state (`None`: the call created it, remove it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub path: PathBuf,
    pub to: Option<Entry>,
    /// What is there now.
    pub current: Option<Entry>,
    /// Applied although the path changed since the call (`--force`).
    pub forced: bool,
}

/// A path changed since the call: left alone unless forced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub path: String,
    /// What the call left (`file`, `symlink`, `dir`, or `absent`).
    pub expected: String,
    /// What is there now.
    pub found: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Changed paths that were not checkpointed (size cap, special, unreadable).
    pub not_restorable: Vec<PathBuf>,
}

fn describe(e: Option<&Entry>) -> String {
    match e {
        None => "absent".into(),
        Some(e) => match e.kind {
            Kind::Dir => format!("dir (mode {:o})", e.perm()),
            Kind::Skipped(_) => "not checkpointed".into(),
            k => format!(
                "{} of {} bytes (mode {:o}, {})",
                k.name(),
                e.size,
                e.perm(),
                &e.hash[..e.hash.len().min(12)]
            ),
        },
    }
}

/// The plan that puts back what the call changed (`before` -> `after`) given the tree as it is
/// now (`current`). Pure.
pub fn plan(before: &Manifest, after: &Manifest, current: &Manifest, force: bool) -> Plan {
    let mut out = Plan::default();
    // Beneath a folder that could not be read, nothing is known: nothing there is touched.
    let unreadable_above = |p: &Path| {
        p.ancestors().skip(1).any(|a| {
            [before, after, current].iter().any(|m| {
                m.entries
                    .get(a)
                    .is_some_and(|e| matches!(e.kind, Kind::Skipped(_)))
            })
        })
    };
    for p in crate::diff::changed_paths(before, after) {
        let b = before.entries.get(p);
        let a = after.entries.get(p);
        let c = current.entries.get(p);
        if [b, a, c]
            .iter()
            .flatten()
            .any(|e| matches!(e.kind, Kind::Skipped(_)))
            || unreadable_above(p)
        {
            out.not_restorable.push(p.clone());
            continue;
        }
        if same(c, b) {
            continue; // already as it was
        }
        let conflict = !same(c, a);
        if conflict {
            out.conflicts.push(Conflict {
                path: show(p),
                expected: describe(a),
                found: describe(c),
            });
            if !force {
                continue;
            }
        }
        out.actions.push(Action {
            path: p.clone(),
            to: b.cloned(),
            current: c.cloned(),
            forced: conflict,
        });
    }
    out
}

/// `current` as it will be once `plan` is applied (to plan the next, older call of a run).
pub fn simulate(current: &mut Manifest, plan: &Plan) {
    for a in &plan.actions {
        match &a.to {
            Some(e) => {
                current.entries.insert(a.path.clone(), e.clone());
            }
            None => {
                current.entries.remove(&a.path);
            }
        }
    }
}

/// A path that could not be put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub path: String,
    pub error: String,
}

/// Applies `plan` beneath `root`. Removals first (deepest first), then folders (shallowest
/// first), then files and symlinks. Returns the paths that failed; the others are done.
pub fn apply(root: &Dir, objects: &ObjectStore, plan: &Plan) -> Vec<Failure> {
    let mut failures = Vec::new();
    let mut fail = |p: &Path, e: String| {
        failures.push(Failure {
            path: show(p),
            error: e,
        })
    };
    // 1. Remove what the call created, and whatever stands where another kind must go back.
    let mut removals: Vec<&Action> = plan
        .actions
        .iter()
        .filter(|a| {
            a.current.is_some()
                && match (&a.to, &a.current) {
                    (None, _) => true,
                    (Some(t), Some(c)) => t.kind != c.kind,
                    _ => false,
                }
        })
        .collect();
    removals.sort_by(|x, y| {
        y.path
            .components()
            .count()
            .cmp(&x.path.components().count())
            .then(y.path.cmp(&x.path))
    });
    for a in removals {
        let is_dir = root
            .symlink_metadata(&a.path)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        let res = if is_dir {
            root.remove_dir(&a.path)
        } else {
            root.remove_file(&a.path)
        };
        match res {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => fail(&a.path, format!("remove: {e}")),
        }
    }
    // 2. Folders, shallowest first.
    let mut dirs: Vec<(&Action, &Entry)> = plan
        .actions
        .iter()
        .filter_map(|a| {
            a.to.as_ref()
                .filter(|t| t.kind == Kind::Dir)
                .map(|t| (a, t))
        })
        .collect();
    dirs.sort_by_key(|(a, _)| a.path.components().count());
    for (a, t) in dirs {
        let res = root.create_dir_all(&a.path).and_then(|_| {
            root.set_permissions(
                &a.path,
                cap_std::fs::Permissions::from_std(std::fs::Permissions::from_mode(t.perm())),
            )
        });
        if let Err(e) = res {
            fail(&a.path, format!("create folder: {e}"));
        }
    }
    // 3. Files and symlinks.
    for a in &plan.actions {
        let Some(t) = &a.to else { continue };
        let res = match t.kind {
            Kind::File => objects
                .get(&t.hash)
                .map_err(|e| e.to_string())
                .and_then(|bytes| write_file(root, &a.path, &bytes, t.perm())),
            Kind::Symlink => objects
                .get(&t.hash)
                .map_err(|e| e.to_string())
                .and_then(|bytes| write_symlink(root, &a.path, &bytes)),
            _ => Ok(()),
        };
        if let Err(e) = res {
            fail(&a.path, e);
        }
    }
    failures
}

fn temp_name(path: &Path) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = format!(
        ".{}.aibuddy-rewind-{}-{n}",
        name.chars().take(40).collect::<String>(),
        std::process::id()
    );
    match path.parent() {
        Some(p) => p.join(tmp),
        None => PathBuf::from(tmp),
    }
}

fn ensure_parent(root: &Dir, path: &Path) -> Result<(), String> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => root
            .create_dir_all(p)
            .map_err(|e| format!("create folder: {e}")),
        _ => Ok(()),
    }
}

fn write_file(root: &Dir, path: &Path, bytes: &[u8], perm: u32) -> Result<(), String> {
    ensure_parent(root, path)?;
    let tmp = temp_name(path);
    let res = (|| -> std::io::Result<()> {
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        let mut f = root.open_with(&tmp, &opts)?;
        f.write_all(bytes)?;
        f.set_permissions(cap_std::fs::Permissions::from_std(
            std::fs::Permissions::from_mode(perm),
        ))?;
        drop(f);
        root.rename(&tmp, root, path)
    })();
    res.map_err(|e| {
        let _ = root.remove_file(&tmp);
        format!("write: {e}")
    })
}

fn write_symlink(root: &Dir, path: &Path, target: &[u8]) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    ensure_parent(root, path)?;
    let tmp = temp_name(path);
    let target = std::ffi::OsStr::from_bytes(target);
    let res = root
        .symlink_contents(target, &tmp)
        .and_then(|_| root.rename(&tmp, root, path));
    res.map_err(|e| {
        let _ = root.remove_file(&tmp);
        format!("symlink: {e}")
    })
}
