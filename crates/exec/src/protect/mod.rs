//! Protected paths inside every writable root: files and directories that a program other than
//! the command later runs with the person's full authority (git hooks and config, editor tasks,
//! direnv, agent configs). A command may read them but neither change nor create them.
//!
//! - [`PROTECTED_PATHS`]: the built-in table (relative to each root; the one owner of the list).
//!   Entries under `.git/` apply to every git directory of a root: the `.git` directory, the one a
//!   `.git` file names (`gitdir:`, worktrees and submodules) and its common directory
//!   (`commondir`), and every git directory under `modules/` (submodules), recursively. The `.git`
//!   file itself is protected too (it decides which directory git uses), and an absent `.git` (or
//!   one without `HEAD`) is protected as a whole (a command cannot create a repository whose
//!   config the person's git would then obey). A `core.hooksPath` of a git directory's `config`
//!   (`.husky`) and a submodule's `.git` file (through `core.worktree`) are protected too.
//! - A protected symlink cannot be bound (a mount follows it): its target is protected when it
//!   lies in a writable root, and the link is put back after the command if it changed.
//! - [`effective_list`]: the table minus the person's `unprotected` plus the `extra` entries.
//! - [`Guard::prepare`] (before the launch) finds what each entry is now and
//!   [`Guard::finish`] (after every process of the command is gone) sweeps.
//!
//! How each launch path holds them:
//! - **namespace path**: every existing protected path is bound read-only over itself after the
//!   writable binds (a mount point can be neither written, renamed nor removed: `EROFS`/`EBUSY`);
//!   each git directory is first bound onto itself read-write, so it cannot be renamed away and
//!   replaced while the rest of it stays writable (`git add`, `commit`, `checkout` work). An absent
//!   path gets an empty placeholder (an empty file or directory created on the host just before
//!   the launch, bound read-only, removed after the command unless something outside the sandbox
//!   wrote into it), so nothing can be created there while the command runs. Placeholders are
//!   listed in `<temp>/aibuddy-placeholders-<pid>`: those a dead app left (`kill -9`) are removed,
//!   when still empty, before the next app's first command. `.git/commondir`
//!   gets no placeholder (git refuses an empty one): one the command creates is removed after it.
//! - **Landlock-only path**: Landlock rules only add access, and creating or replacing a file in a
//!   directory is one right for every name in it and everything beneath it, so Landlock cannot
//!   refuse `.git/config` while `git commit` may write `.git/index`. This path does not refuse:
//!   it snapshots every protected path before the command (contents, modes, symlinks; up to
//!   [`SNAPSHOT_CAP`] bytes in all) and after the command restores each one that changed and
//!   removes each one that was created. A program that reads them *while* the command runs can
//!   see the change; the scope line and the confinement label say so.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::gitconfig;

/// What a placeholder for an absent entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    Dir,
    File,
    /// A `commondir` naming its own git directory ([`SAME_DIR`]): git refuses an empty one, and
    /// reads this one as no `commondir` at all.
    SameDir,
    /// None (the absent path is only swept after the command).
    None,
}

/// The content of a `commondir` placeholder: the git directory itself.
pub const SAME_DIR: &[u8] = b".\n";

/// The built-in protected paths, relative to each writable root (the project included).
pub const PROTECTED_PATHS: &[(&str, Placeholder)] = &[
    (".git/config", Placeholder::File),
    // Read as config too once `extensions.worktreeConfig` is on (`git sparse-checkout` sets it).
    (".git/config.worktree", Placeholder::File),
    (".git/hooks", Placeholder::Dir),
    (".git/info", Placeholder::Dir),
    // A `commondir` file makes git read config and hooks from the directory it names.
    (".git/commondir", Placeholder::SameDir),
    (".aibuddy", Placeholder::Dir),
    (".vscode", Placeholder::Dir),
    (".idea", Placeholder::Dir),
    (".envrc", Placeholder::File),
    (".mcp.json", Placeholder::File),
    (".claude", Placeholder::Dir),
    (".codex", Placeholder::Dir),
    (".cursor", Placeholder::Dir),
];

/// Bytes the Landlock-only path snapshots at most per command; a protected path beyond is
/// reported `unguarded`.
pub const SNAPSHOT_CAP: u64 = 8 * 1024 * 1024;

/// The built-in entries' names.
pub fn builtin_names() -> Vec<&'static str> {
    PROTECTED_PATHS.iter().map(|(p, _)| *p).collect()
}

/// Whether `rel` is a usable protected entry: relative, not empty, no `..`, no `.` components.
pub fn valid_entry(rel: &str) -> bool {
    let p = Path::new(rel.trim_end_matches('/'));
    !rel.trim().is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && p.components().next().is_some()
}

/// The effective list: the built-ins minus `unprotected` (exact names) plus `extra`, each with its
/// placeholder kind (an extra entry ending in `/` is a directory, else a file). Invalid entries
/// are left out (the request validation refuses them first).
pub fn effective_list(extra: &[String], unprotected: &[String]) -> Vec<(String, Placeholder)> {
    let norm = |s: &str| s.trim_end_matches('/').to_string();
    let removed: Vec<String> = unprotected.iter().map(|s| norm(s)).collect();
    let mut out: Vec<(String, Placeholder)> = PROTECTED_PATHS
        .iter()
        .filter(|(p, _)| !removed.iter().any(|r| r == p))
        .map(|(p, k)| (p.to_string(), *k))
        .collect();
    for e in extra.iter().filter(|e| valid_entry(e)) {
        let kind = if e.ends_with('/') {
            Placeholder::Dir
        } else {
            Placeholder::File
        };
        let name = norm(e);
        if !out.iter().any(|(p, _)| *p == name) {
            out.push((name, kind));
        }
    }
    out
}

/// What happened to protected paths during a command (empty lists: nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedReport {
    /// Protected paths the command created, removed after it.
    #[serde(default)]
    pub removed: Vec<PathBuf>,
    /// Protected paths the command changed, restored after it (Landlock-only path; a replaced
    /// protected symlink on either path).
    #[serde(default)]
    pub restored: Vec<PathBuf>,
    /// Protected paths too large to snapshot (Landlock-only path): not guarded.
    #[serde(default)]
    pub unguarded: Vec<PathBuf>,
}

impl ProtectedReport {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.restored.is_empty() && self.unguarded.is_empty()
    }
}

/// One protected path found before the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Resolved (no symlink in its parent), inside a writable root.
    pub(crate) path: PathBuf,
    pub(crate) present: bool,
    pub(crate) placeholder: Placeholder,
    /// The target text when the path is a symlink: the link itself cannot be bound (a mount
    /// follows it), so its target is protected as another entry and the link is put back after
    /// the command if it changed.
    pub(crate) link: Option<PathBuf>,
}

/// The protected paths of a request, found on disk (pure but for `lstat`, `readlink` and reading
/// `.git` files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Git directories (bound onto themselves on the namespace path).
    pub(crate) git_dirs: Vec<PathBuf>,
    pub(crate) paths: Vec<Found>,
    /// Whether the search for nested repositories stopped at a cap.
    pub(crate) nested_capped: bool,
}

mod layout;
mod placeholders;
mod snapshots;
#[cfg(test)]
mod tests;

use layout::*;
use placeholders::*;
use snapshots::*;

pub use layout::{NESTED_DEPTH_CAP, NESTED_DIR_CAP, NestedSearch, nested_repositories};
pub use placeholders::sweep_leftover_placeholders;

// ------------------------------------------------------------------ the guard of one command

/// How the launch path holds the protected paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Read-only binds and placeholders (the namespace path).
    Mounts,
    /// Snapshots restored after the command (the Landlock-only path).
    Restore,
}

/// The protected paths of one command, from before its launch until after its end.
pub(crate) struct Guard {
    found: Layout,
    /// Placeholders this command holds.
    held: Vec<PathBuf>,
    /// Snapshots of the present paths (Restore).
    snapshots: Vec<(PathBuf, Vec<(PathBuf, Node)>)>,
    unguarded: Vec<PathBuf>,
    hold: Hold,
    swept: bool,
}

impl Guard {
    /// Finds the protected paths of `list` in `roots` and prepares them for `hold`: placeholders
    /// for absent paths (Mounts) or snapshots of present ones (Restore).
    pub(crate) fn prepare(roots: &[PathBuf], list: &[(String, Placeholder)], hold: Hold) -> Self {
        sweep_dead_manifests();
        let found = find(roots, list);
        let mut held = Vec::new();
        let mut snapshots = Vec::new();
        let mut unguarded = Vec::new();
        match hold {
            Hold::Mounts => {
                let wanted: Vec<&Found> = found
                    .paths
                    .iter()
                    .filter(|f| f.placeholder != Placeholder::None)
                    .collect();
                let new: Vec<PathBuf> = wanted
                    .iter()
                    .filter(|f| !f.present)
                    .map(|f| f.path.clone())
                    .collect();
                if !new.is_empty() {
                    record_manifest(&new);
                }
                for f in wanted {
                    if hold_placeholder(&f.path, f.placeholder) {
                        held.push(f.path.clone());
                    }
                }
                // Listed but not made (a parent missing, say): listed no longer.
                if new.iter().any(|p| !held.contains(p)) {
                    record_manifest(&[]);
                }
            }
            Hold::Restore => {
                let mut budget = SNAPSHOT_CAP;
                for f in found.paths.iter().filter(|f| f.present) {
                    // Another command's placeholder: held too, and emptied again afterwards.
                    if is_placeholder(&f.path) && hold_placeholder(&f.path, f.placeholder) {
                        held.push(f.path.clone());
                        continue;
                    }
                    match snapshot(&f.path, &mut budget) {
                        Ok(Some(s)) => snapshots.push((f.path.clone(), s)),
                        Ok(None) => unguarded.push(f.path.clone()),
                        Err(e) => {
                            tracing::warn!(path = %f.path.display(), error = %e, "protected path not snapshotted");
                            unguarded.push(f.path.clone());
                        }
                    }
                }
            }
        }
        Guard {
            found,
            held,
            snapshots,
            unguarded,
            hold,
            swept: false,
        }
    }

    /// Git directories to bind onto themselves (namespace path).
    pub(crate) fn git_dirs(&self) -> &[PathBuf] {
        &self.found.git_dirs
    }

    /// Paths to bind read-only over themselves (namespace path): the present ones and the held
    /// placeholders.
    pub(crate) fn read_only(&self) -> Vec<PathBuf> {
        self.found
            .paths
            .iter()
            .filter(|f| (f.present && f.link.is_none()) || self.held.contains(&f.path))
            .map(|f| f.path.clone())
            .collect()
    }

    /// After the command (every process of it gone): removes the protected paths it created and
    /// (Restore) puts back the ones it changed.
    pub(crate) fn finish(mut self) -> ProtectedReport {
        self.sweep()
    }

    /// [`Guard::finish`]'s work, once (a guard dropped without `finish`, when the run future is
    /// dropped, sweeps in its drop, after the command's group was killed).
    fn sweep(&mut self) -> ProtectedReport {
        if self.swept {
            return ProtectedReport::default();
        }
        self.swept = true;
        let mut report = ProtectedReport {
            unguarded: std::mem::take(&mut self.unguarded),
            ..Default::default()
        };
        // Deepest first: `.git` (absent) is swept after what lies in it.
        let mut absent: Vec<&Found> = self
            .found
            .paths
            .iter()
            .filter(|f| !f.present && !self.held.contains(&f.path))
            .collect();
        absent.sort_by_key(|f| std::cmp::Reverse(f.path.components().count()));
        for f in absent {
            if std::fs::symlink_metadata(&f.path).is_ok() {
                match remove_any(&f.path) {
                    Ok(()) => report.removed.push(f.path.clone()),
                    Err(e) => {
                        tracing::warn!(path = %f.path.display(), error = %e, "could not remove a protected path the command created");
                    }
                }
            }
        }
        if self.hold == Hold::Mounts {
            // A symlink is not a mount point: a command could replace it.
            for f in &self.found.paths {
                let Some(link) = &f.link else { continue };
                if std::fs::read_link(&f.path).ok().as_ref() == Some(link) {
                    continue;
                }
                match remove_any(&f.path).and_then(|()| std::os::unix::fs::symlink(link, &f.path)) {
                    Ok(()) => report.restored.push(f.path.clone()),
                    Err(e) => {
                        tracing::warn!(path = %f.path.display(), error = %e, "could not restore a protected symlink");
                    }
                }
            }
        }
        if self.hold == Hold::Restore {
            for p in &self.held {
                if empty_placeholder(p) {
                    report.removed.push(p.clone());
                }
            }
            // A git directory replaced by something else (`mv .git x; echo 'gitdir: evil' > .git`)
            // becomes an empty directory again, and its protected entries are restored into it.
            for g in &self.found.git_dirs {
                let is_dir = std::fs::symlink_metadata(g).is_ok_and(|m| m.is_dir());
                if !is_dir && remove_any(g).and_then(|()| std::fs::create_dir(g)).is_ok() {
                    report.restored.push(g.clone());
                }
            }
            for (path, before) in std::mem::take(&mut self.snapshots) {
                let mut budget = u64::MAX;
                let now = snapshot(&path, &mut budget).ok().flatten();
                if now.as_ref() == Some(&before) {
                    continue;
                }
                // An empty file or directory that is gone now (another command's placeholder
                // removed meanwhile, say) runs nothing: not brought back.
                let was_empty = match before.as_slice() {
                    [(_, Node::Dir { .. })] => true,
                    [(_, Node::File { bytes, .. })] => bytes.is_empty(),
                    _ => false,
                };
                if now.is_none() && was_empty {
                    continue;
                }
                match restore(&path, &before) {
                    Ok(()) => report.restored.push(path),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "could not restore a protected path");
                    }
                }
            }
        }
        report.removed.sort();
        report.restored.sort();
        report
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let report = self.sweep();
        if !report.is_empty() {
            tracing::warn!(?report, "protected paths swept after a dropped run");
        }
        let held = std::mem::take(&mut self.held);
        for p in &held {
            release_placeholder(p);
        }
        if !held.is_empty() {
            record_manifest(&[]);
        }
    }
}

// ------------------------------------------------------------------ a copy's changes brought back

/// The protected paths of a request as they are on disk now, holding nothing (no placeholder,
/// no snapshot): for a copy of the project elsewhere whose changes are brought back
/// (`aibuddy-container`'s `project: "sync"`), which refuses every change at, beneath or above
/// one of `paths` and every git directory that is not one of `git_dirs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedNow {
    /// Every protected path (present or absent; parents resolved), inside the roots.
    pub paths: Vec<PathBuf>,
    /// The git directories found (the roots' own and nested repositories').
    pub git_dirs: Vec<PathBuf>,
    /// Whether the search for nested repositories stopped at its cap.
    pub nested_capped: bool,
}

/// Finds the protected paths of `list` in `roots` (resolved, existing) without holding them.
pub fn protected_now(roots: &[PathBuf], list: &[(String, Placeholder)]) -> ProtectedNow {
    let found = find(roots, list);
    ProtectedNow {
        paths: found.paths.into_iter().map(|f| f.path).collect(),
        git_dirs: found.git_dirs,
        nested_capped: found.nested_capped,
    }
}

// ------------------------------------------------------------------ a container's whole life

/// The protected paths of a container sandbox (`aibuddy-container`) for as long as its
/// container lives: the namespace path's hold ([`Hold::Mounts`]), taken once when the container
/// is created instead of once per command. The container binds every git directory onto itself
/// ([`MountGuard::git_dirs`]) and every present path and placeholder read-only
/// ([`MountGuard::read_only`]); [`MountGuard::finish`], after the container is removed, removes
/// what was created and the placeholders (so does dropping it).
pub struct MountGuard(Guard);

impl std::fmt::Debug for MountGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountGuard")
            .field("git_dirs", &self.0.found.git_dirs)
            .field("held", &self.0.held)
            .finish_non_exhaustive()
    }
}

impl MountGuard {
    /// Finds the protected paths of `list` in `roots` and holds the absent ones by placeholders.
    pub fn prepare(roots: &[PathBuf], list: &[(String, Placeholder)]) -> Self {
        MountGuard(Guard::prepare(roots, list, Hold::Mounts))
    }

    /// Git directories to bind onto themselves (read-write: they cannot be renamed away).
    pub fn git_dirs(&self) -> &[PathBuf] {
        self.0.git_dirs()
    }

    /// Paths to bind read-only over themselves (never a symlink).
    pub fn read_only(&self) -> Vec<PathBuf> {
        self.0.read_only()
    }

    /// Whether the search for nested repositories stopped at its cap.
    pub fn nested_capped(&self) -> bool {
        self.0.found.nested_capped
    }

    /// After the container is gone: removes the protected paths created meanwhile and puts back
    /// replaced symlinks; the placeholders are released when this returns.
    pub fn finish(self) -> ProtectedReport {
        let MountGuard(mut guard) = self;
        guard.sweep()
    }
}
