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

/// Where a path lives, if inside one of `roots` (the longest match).
fn inside<'a>(path: &Path, roots: &'a [PathBuf]) -> Option<&'a PathBuf> {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
}

/// `path` with its parent resolved, or `None` when the parent does not exist.
fn resolve_parent(path: &Path) -> Option<PathBuf> {
    let parent = path.parent()?;
    let name = path.file_name()?;
    let real = std::fs::canonicalize(parent).ok()?;
    Some(real.join(name))
}

/// A small regular file of the project as text: never blocks (a fifo planted as `.git/config`
/// reads as nothing), at most 1 MiB.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.take(1024 * 1024).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The directory a `.git` file names (`gitdir: X`, relative to the file's directory).
fn gitdir_of_file(file: &Path) -> Option<PathBuf> {
    let text = read_small(file)?;
    let line = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let p = Path::new(line);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        file.parent()?.join(p)
    };
    std::fs::canonicalize(p).ok()
}

/// The common directory a git directory's `commondir` names.
fn commondir_of(gitdir: &Path) -> Option<PathBuf> {
    let text = read_small(&gitdir.join("commondir"))?;
    let p = Path::new(text.trim());
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        gitdir.join(p)
    };
    std::fs::canonicalize(p).ok()
}

/// A git directory's `config` and what it includes (see `gitconfig`).
fn git_config(gitdir: &Path) -> gitconfig::Config {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    gitconfig::read(&gitdir.join("config"), home.as_deref(), &read_small)
}

/// Git directories under `modules/` of `gitdir` (submodules; names may hold `/`), bounded.
fn module_dirs(gitdir: &Path, out: &mut Vec<PathBuf>) {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if depth > 6 || out.len() >= 256 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            if p.join("HEAD").is_file() {
                if !out.contains(&p) {
                    out.push(p.clone());
                    walk(&p.join("modules"), depth + 1, out);
                }
            } else {
                walk(&p, depth + 1, out);
            }
        }
    }
    walk(&gitdir.join("modules"), 0, out);
}

/// Directories visited at most per writable root when looking for nested repositories.
pub const NESTED_DIR_CAP: usize = 2_000;
/// Levels below a writable root looked at for nested repositories.
pub const NESTED_DEPTH_CAP: usize = 6;

/// Repositories nested in a writable root (a `.git` directory or file below it, submodule or
/// not), found by a bounded breadth-first walk that honours nothing but its caps (no ignore
/// file, no name is skipped; symlinks and `.git` directories are not descended).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NestedSearch {
    /// Work trees holding a `.git` (the roots themselves not included).
    pub work_trees: Vec<PathBuf>,
    /// Whether a cap stopped the walk: deeper repositories are not protected.
    pub capped: bool,
}

/// Looks for nested repositories in each of `roots`: at most [`NESTED_DIR_CAP`] directories per
/// root, [`NESTED_DEPTH_CAP`] levels down.
pub fn nested_repositories(roots: &[PathBuf]) -> NestedSearch {
    let mut out = NestedSearch::default();
    for root in roots {
        let mut queue = std::collections::VecDeque::from([(root.clone(), 0usize)]);
        let mut visited = 0usize;
        while let Some((dir, depth)) = queue.pop_front() {
            if visited >= NESTED_DIR_CAP {
                out.capped = true;
                break;
            }
            visited += 1;
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                if name == ".git" {
                    if dir != *root && !out.work_trees.contains(&dir) {
                        out.work_trees.push(dir.clone());
                    }
                    continue;
                }
                // `d_type`: no `stat` per entry; a symlink is never followed.
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                if depth + 1 > NESTED_DEPTH_CAP {
                    out.capped = true;
                    continue;
                }
                queue.push_back((e.path(), depth + 1));
            }
        }
    }
    out
}

/// Finds the protected paths of `list` in every root (`roots`: resolved, existing; the project
/// first). Paths that resolve outside every root are not writable anyway and are left out.
pub(crate) fn find(roots: &[PathBuf], list: &[(String, Placeholder)]) -> Layout {
    let mut found = Layout::default();
    let git_entries: Vec<(&str, Placeholder)> = list
        .iter()
        .filter_map(|(p, k)| p.strip_prefix(".git/").map(|rest| (rest, *k)))
        .collect();
    for root in roots {
        for (rel, kind) in list.iter().filter(|(p, _)| !p.starts_with(".git/")) {
            found.push(roots, root.join(rel), *kind);
        }
    }
    if !git_entries.is_empty() {
        for root in roots {
            git_of(&mut found, roots, &git_entries, root, true);
        }
        let nested = nested_repositories(roots);
        found.nested_capped = nested.capped;
        for work in &nested.work_trees {
            git_of(&mut found, roots, &git_entries, work, false);
        }
    }
    // Outer directories first: each bind then carries the inner ones along.
    found.git_dirs.sort_by_key(|g| g.components().count());
    found
}

impl Layout {
    /// Adds `path` (its parent resolved) when inside a root and not yet listed; a symlink's target
    /// inside a root is added too.
    fn push(&mut self, roots: &[PathBuf], path: PathBuf, placeholder: Placeholder) {
        let path = resolve_parent(&path).unwrap_or(path);
        if inside(&path, roots).is_none() || self.paths.iter().any(|f| f.path == path) {
            return;
        }
        let meta = std::fs::symlink_metadata(&path);
        let link = meta
            .as_ref()
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| std::fs::read_link(&path).ok())
            .flatten();
        let target = link
            .is_some()
            .then(|| std::fs::canonicalize(&path).ok())
            .flatten()
            .filter(|t| inside(t, roots).is_some() && !self.paths.iter().any(|f| f.path == *t));
        self.paths.push(Found {
            path,
            present: meta.is_ok(),
            placeholder,
            link,
        });
        if let Some(t) = target {
            self.paths.push(Found {
                path: t,
                present: true,
                placeholder: Placeholder::None,
                link: None,
            });
        }
    }
}

/// The hooks git runs (`githooks(5)`): protected one by one in a hooks path that cannot be bound
/// read-only as a whole.
const HOOK_NAMES: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// A `core.hooksPath`: bound read-only as a whole, unless it is (or holds) a writable root or a
/// git directory (`hooksPath = .` in an included file would make the whole project read-only):
/// then each hook name in it is protected instead (present ones bound, created ones removed).
fn push_hooks(found: &mut Layout, roots: &[PathBuf], gitdir: &Path, path: PathBuf) {
    let resolved = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let too_wide = roots.iter().any(|r| r.starts_with(&resolved))
        || gitdir.starts_with(&resolved)
        || found.git_dirs.iter().any(|g| g.starts_with(&resolved))
        || resolved.file_name() == Some(std::ffi::OsStr::new(".git"));
    if !too_wide {
        found.push(roots, path, Placeholder::Dir);
        return;
    }
    for name in HOOK_NAMES {
        found.push(roots, resolved.join(name), Placeholder::None);
    }
}

/// The git directories of the work tree `work` and their protected entries. `top`: `work` is a
/// writable root, whose absent `.git` is protected too (none may be created there).
fn git_of(
    found: &mut Layout,
    roots: &[PathBuf],
    git_entries: &[(&str, Placeholder)],
    work: &Path,
    top: bool,
) {
    let dot_git = work.join(".git");
    let mut gitdirs: Vec<PathBuf> = Vec::new();
    match std::fs::symlink_metadata(&dot_git) {
        Err(_) if top => {
            // No repository: none may be created here.
            found.push(roots, dot_git.clone(), Placeholder::Dir);
        }
        Err(_) => return,
        // A directory without `HEAD` is no repository for git (it looks further up): an
        // empty placeholder of another process, say. Protected as a whole, like an absent one.
        Ok(m) if m.is_dir() && !dot_git.join("HEAD").exists() => {
            found.push(roots, dot_git.clone(), Placeholder::Dir);
        }
        Ok(m) if m.is_dir() => gitdirs.push(dot_git.clone()),
        Ok(m) => {
            if m.is_file() {
                found.push(roots, dot_git.clone(), Placeholder::None);
            }
            let target = if m.is_file() {
                gitdir_of_file(&dot_git)
            } else {
                std::fs::canonicalize(&dot_git).ok()
            };
            if let Some(g) = target.filter(|g| g.is_dir()) {
                gitdirs.push(g);
            }
        }
    }
    let mut i = 0;
    while i < gitdirs.len() {
        let g = gitdirs[i].clone();
        if let Some(common) = commondir_of(&g)
            && !gitdirs.contains(&common)
        {
            gitdirs.push(common);
        }
        let mut modules = Vec::new();
        module_dirs(&g, &mut modules);
        for m in modules {
            if !gitdirs.contains(&m) {
                gitdirs.push(m);
            }
        }
        i += 1;
    }
    for g in gitdirs {
        let Ok(g) = std::fs::canonicalize(&g) else {
            continue;
        };
        let config = git_config(&g);
        // A file the config includes is config too (`[include]` or `[includeIf]`, whatever the
        // condition): rewriting it is rewriting `config`. One absent now gets a placeholder (an
        // empty config file), so none can be planted where the include points.
        for inc in &config.included {
            // A directory is no config (git refuses to read one): never bound over.
            if !inc.is_dir() {
                found.push(roots, inc.clone(), Placeholder::File);
            }
        }
        // The work tree this git directory serves: a submodule's names it in `core.worktree`
        // (its `.git` file there decides which git directory is used).
        let worktree = match config.last("core", "worktree") {
            Some(w) => {
                let w = std::fs::canonicalize(g.join(w)).ok();
                if let Some(w) = &w
                    && w.join(".git").is_file()
                {
                    found.push(roots, w.join(".git"), Placeholder::None);
                }
                w
            }
            None => Some(work.to_path_buf()),
        };
        // Hooks kept in the work tree (`core.hooksPath = .husky`) are hooks too: every value
        // the config and its includes set (which one wins can depend on an include's condition).
        if let Some(wt) = worktree {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            for hooks in config.all("core", "hookspath") {
                let path = match (hooks.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ if hooks.is_empty() || hooks.starts_with('~') => continue,
                    _ => wt.join(hooks),
                };
                push_hooks(found, roots, &g, path);
            }
        }
        if inside(&g, roots).is_none() {
            continue;
        }
        for (rest, kind) in git_entries {
            found.push(roots, g.join(rest), *kind);
        }
        if !found.git_dirs.contains(&g) {
            found.git_dirs.push(g);
        }
    }
}

// ------------------------------------------------------------------ placeholders

/// Placeholders this process holds (path -> commands using it, kind): concurrent commands in one
/// project share one, and the last to end removes it.
fn placeholders() -> &'static Mutex<HashMap<PathBuf, (usize, Placeholder)>> {
    static HELD: std::sync::OnceLock<Mutex<HashMap<PathBuf, (usize, Placeholder)>>> =
        std::sync::OnceLock::new();
    HELD.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Joins the placeholder at `path` another command holds, or creates one when nothing is there:
/// `true` when one is held.
fn hold_placeholder(path: &Path, kind: Placeholder) -> bool {
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
fn untouched_file(path: &Path, m: &std::fs::Metadata) -> bool {
    m.is_file()
        && (m.len() == 0
            || (path.file_name() == Some(std::ffi::OsStr::new("commondir"))
                && m.len() == SAME_DIR.len() as u64
                && read_nonblocking(path, SAME_DIR.len() as u64).is_ok_and(|b| b == SAME_DIR)))
}

/// The file listing this process's placeholders (NUL-separated paths), so that the next process
/// removes the ones a `kill -9` left: `<temp>/aibuddy-placeholders-<pid>`.
const MANIFEST_PREFIX: &str = "aibuddy-placeholders-";

fn manifest_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{MANIFEST_PREFIX}{pid}"))
}

/// Rewrites the manifest: the placeholders held now plus `about_to_create` (listed before they
/// are made, so a `kill -9` in between leaves none unlisted). Once per command start and end, not
/// per placeholder, and never by truncating to zero (ext4 flushes such a file when it is closed:
/// milliseconds each on a busy disk).
fn record_manifest(about_to_create: &[PathBuf]) {
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
fn sweep_dead_manifests() {
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
fn pid_alive(pid: i32) -> bool {
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
fn is_placeholder(path: &Path) -> bool {
    let held = placeholders().lock().unwrap_or_else(|e| e.into_inner());
    held.contains_key(path)
}

/// Empties a placeholder in place (its inode stays: other commands have it bound), or puts a
/// `commondir` placeholder's content back: `true` when something was in it.
fn empty_placeholder(path: &Path) -> bool {
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
fn release_placeholder(path: &Path) {
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
mod trash {
    use std::collections::HashMap;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, OnceLock, mpsc};

    pub(super) const PREFIX: &str = "aibuddy-trash-";

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

// ------------------------------------------------------------------ snapshots

/// One node of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir { mode: u32 },
    File { mode: u32, bytes: Vec<u8> },
    Link { target: PathBuf },
}

/// A protected path's tree (relative paths, the path itself first), or `None` past the budget.
fn snapshot(path: &Path, budget: &mut u64) -> std::io::Result<Option<Vec<(PathBuf, Node)>>> {
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
fn read_nonblocking(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
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
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Puts a snapshot back at `path` (whatever is there is removed first).
fn restore(path: &Path, nodes: &[(PathBuf, Node)]) -> std::io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[(String, Placeholder)]) -> Vec<&str> {
        list.iter().map(|(p, _)| p.as_str()).collect()
    }

    #[test]
    fn the_list_is_the_table_minus_unprotected_plus_extra() {
        let all = effective_list(&[], &[]);
        assert_eq!(names(&all), builtin_names());
        let l = effective_list(
            &[
                "Makefile".into(),
                ".github/workflows/".into(),
                "../x".into(),
            ],
            &[".idea".into(), ".envrc/".into()],
        );
        assert!(!names(&l).contains(&".idea") && !names(&l).contains(&".envrc"));
        assert!(l.contains(&("Makefile".into(), Placeholder::File)));
        assert!(l.contains(&(".github/workflows".into(), Placeholder::Dir)));
        assert!(!names(&l).iter().any(|n| n.contains("..")));
        for bad in ["", "/etc", "a/../b", "./x", " "] {
            assert!(!valid_entry(bad), "{bad:?}");
        }
        assert!(valid_entry(".vscode/") && valid_entry("a/b"));
    }

    fn git(dir: &Path, args: &[&str]) {
        let st = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    }

    #[test]
    fn git_dirs_of_worktrees_and_submodules_are_found() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let main = base.join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        git(&main, &["worktree", "add", "-q", "../wt"]);
        std::fs::create_dir_all(main.join(".git/modules/libs/a/modules/b")).unwrap();
        std::fs::write(main.join(".git/modules/libs/a/HEAD"), "ref: x\n").unwrap();
        std::fs::write(main.join(".git/modules/libs/a/modules/b/HEAD"), "ref: x\n").unwrap();
        let wt = base.join("wt");
        let list = effective_list(&[], &[]);
        // `base` holds no `.git` of its own: both repositories below it are nested ones, found
        // by the walk, with the worktree's own git directory and the common one.
        let f = find(std::slice::from_ref(&base), &list);
        for g in [main.join(".git"), main.join(".git/worktrees/wt")] {
            assert!(f.git_dirs.contains(&g), "{g:?} in {:?}", f.git_dirs);
        }
        let f = find(&[wt.clone(), main.clone()], &list);
        let gd = main.join(".git/worktrees/wt");
        for g in [
            &gd,
            &main.join(".git"),
            &main.join(".git/modules/libs/a"),
            &main.join(".git/modules/libs/a/modules/b"),
        ] {
            assert!(f.git_dirs.contains(g), "{g:?} in {:?}", f.git_dirs);
        }
        let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
        for p in [
            wt.join(".git"),
            gd.join("commondir"),
            gd.join("hooks"),
            main.join(".git/config"),
            main.join(".git/hooks"),
            main.join(".git/modules/libs/a/config"),
            wt.join(".envrc"),
        ] {
            assert!(paths.contains(&&p), "{p:?} in {paths:?}");
        }
        // Only the worktree writable: the main repository's files are read-only anyway.
        let f = find(std::slice::from_ref(&wt), &list);
        assert!(f.git_dirs.is_empty());
        assert_eq!(
            f.paths.iter().map(|p| p.path.clone()).collect::<Vec<_>>(),
            builtin_names()
                .iter()
                .filter(|n| !n.starts_with(".git/"))
                .map(|n| wt.join(n))
                .chain([wt.join(".git")])
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn restore_puts_back_what_changed_and_removes_what_was_created() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join(".git/hooks/a.sample"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::os::unix::fs::symlink("a.sample", root.join(".git/hooks/l")).unwrap();
        let list = effective_list(&[], &[]);
        let guard = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Restore);
        std::fs::write(root.join(".git/config"), "[core]\nfsmonitor = evil\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::create_dir_all(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".vscode/tasks.json"), "{}").unwrap();
        std::fs::write(root.join(".envrc"), "evil").unwrap();
        std::fs::write(root.join("kept"), "mine").unwrap();
        let report = guard.finish();
        assert_eq!(
            report,
            ProtectedReport {
                removed: vec![root.join(".envrc"), root.join(".vscode")],
                restored: vec![root.join(".git/config"), root.join(".git/hooks")],
                unguarded: vec![],
            }
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_link(root.join(".git/hooks/l")).unwrap(),
            Path::new("a.sample")
        );
        assert!(root.join("kept").exists());
    }

    #[test]
    fn a_symlink_is_put_back_and_its_target_protected() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("shared")).unwrap();
        std::os::unix::fs::symlink("shared", root.join(".vscode")).unwrap();
        std::os::unix::fs::symlink("nowhere", root.join(".envrc")).unwrap();
        let list = effective_list(&[], &[]);
        let guard = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        let ro = guard.read_only();
        assert!(ro.contains(&root.join("shared")), "{ro:?}");
        assert!(!ro.contains(&root.join(".vscode")) && !ro.contains(&root.join(".envrc")));
        std::fs::remove_file(root.join(".envrc")).unwrap();
        std::fs::write(root.join(".envrc"), "evil").unwrap();
        let report = guard.finish();
        assert_eq!(report.restored, vec![root.join(".envrc")]);
        assert_eq!(
            std::fs::read_link(root.join(".envrc")).unwrap(),
            Path::new("nowhere")
        );
    }

    #[test]
    fn hooks_in_the_work_tree_and_a_submodules_git_file_are_protected() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/modules/sub")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = \".husky\" ; husky\n[alias]\n\thookspath = no\n",
        )
        .unwrap();
        std::fs::write(root.join(".git/modules/sub/HEAD"), "ref: x\n").unwrap();
        std::fs::write(
            root.join(".git/modules/sub/config"),
            "[core]\n\tworktree = ../../../sub\n",
        )
        .unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
        let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
        assert!(paths.contains(&&root.join(".husky")), "{paths:?}");
        assert!(paths.contains(&&root.join("sub/.git")), "{paths:?}");
        assert!(
            paths.contains(&&root.join(".git/modules/sub/hooks")),
            "{paths:?}"
        );
    }

    #[test]
    fn includes_nested_repositories_and_a_hooks_path_too_wide_to_bind() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[include]\n\tpath = ../team.gitconfig\n[includeIf \"onbranch:x\"]\n\tpath = ../later.inc\n[include]\n\tpath = ../src\n",
        )
        .unwrap();
        // A tracked file the person included: its `hooksPath = .` would make the project read-only
        // if bound as a whole; its hooks are protected one by one instead.
        std::fs::write(root.join("team.gitconfig"), "[core]\n\thooksPath = .\n").unwrap();
        std::fs::create_dir_all(root.join("src/vendor/lib/.git")).unwrap();
        std::fs::write(root.join("src/vendor/lib/.git/HEAD"), "ref: x\n").unwrap();
        std::fs::write(
            root.join("src/vendor/lib/.git/config"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
        let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
        for p in [
            root.join("team.gitconfig"),
            root.join("later.inc"),
            root.join("pre-commit"),
            root.join("src/vendor/lib/.git/config"),
            root.join("src/vendor/lib/.git/hooks"),
            root.join("src/vendor/lib/.git/commondir"),
            root.join("src/vendor/lib/.githooks"),
        ] {
            assert!(paths.contains(&&p), "{p:?} in {paths:?}");
        }
        for p in [root.clone(), root.join("src")] {
            assert!(!paths.contains(&&p), "{p:?} bound over");
        }
        assert!(f.git_dirs.contains(&root.join("src/vendor/lib/.git")));
        assert!(!f.nested_capped);
        let later = f.paths.iter().find(|p| p.path == root.join("later.inc"));
        assert_eq!(
            later.map(|p| (p.present, p.placeholder)),
            Some((false, Placeholder::File))
        );
    }

    #[test]
    fn the_walk_for_nested_repositories_stops_at_its_caps_and_says_so() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let deep = (0..NESTED_DEPTH_CAP + 1).fold(root.clone(), |p, i| p.join(format!("d{i}")));
        std::fs::create_dir_all(deep.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/.git")).unwrap();
        let s = nested_repositories(std::slice::from_ref(&root));
        assert_eq!(s.work_trees, vec![root.join("a")]);
        assert!(s.capped);
        for i in 0..NESTED_DIR_CAP {
            std::fs::create_dir(root.join(format!("w{i}"))).unwrap();
        }
        std::fs::remove_dir_all(root.join("d0")).unwrap();
        let s = nested_repositories(std::slice::from_ref(&root));
        assert!(s.capped, "{} directories", NESTED_DIR_CAP + 2);
        std::fs::remove_dir(root.join("w0")).unwrap();
        std::fs::remove_dir(root.join("w1")).unwrap();
        let s = nested_repositories(std::slice::from_ref(&root));
        assert!(!s.capped, "exactly at the cap: every directory seen");
    }

    #[test]
    fn a_commondir_placeholder_names_its_own_directory_and_goes_when_untouched() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
        let list = effective_list(&[], &[]);
        let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        assert_eq!(
            std::fs::read(root.join(".git/commondir")).unwrap(),
            SAME_DIR
        );
        assert!(g.read_only().contains(&root.join(".git/commondir")));
        assert_eq!(commondir_of(&root.join(".git")), Some(root.join(".git")));
        assert!(g.finish().is_empty());
        assert!(!root.join(".git/commondir").exists());
    }

    #[test]
    fn a_fifo_planted_as_git_config_does_not_hang_the_launch() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
        for f in [".git/config", ".git/commondir"] {
            let c = std::ffi::CString::new(root.join(f).as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a plain mkfifo on a path we own.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
        assert_eq!(f.git_dirs, vec![root.join(".git")]);
    }

    #[test]
    fn a_git_directory_without_head_is_protected_as_a_whole() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
        assert!(f.git_dirs.is_empty());
        assert!(
            f.paths
                .iter()
                .any(|p| p.path == root.join(".git") && p.present)
        );
    }

    #[test]
    fn placeholders_a_dead_process_left_are_removed_when_still_empty() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let manifests = root.join("tmp");
        std::fs::create_dir(&manifests).unwrap();
        std::fs::create_dir(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".envrc"), "").unwrap();
        std::fs::create_dir(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        let mut list = Vec::new();
        for n in [".vscode", ".envrc", ".claude"] {
            list.extend_from_slice(root.join(n).as_os_str().as_encoded_bytes());
            list.push(0);
        }
        // A pid that cannot be alive (above the kernel's largest pid_max).
        std::fs::write(manifests.join("aibuddy-placeholders-2147483000"), &list).unwrap();
        // A living process's manifest is left alone.
        let mine = manifest_path(&manifests, std::process::id());
        std::fs::write(&mine, &list).unwrap();
        let removed = sweep_manifests_in(&manifests);
        assert_eq!(removed, vec![root.join(".vscode"), root.join(".envrc")]);
        assert!(
            root.join(".claude/settings.json").exists(),
            "written into: kept"
        );
        assert!(mine.exists());
        assert!(!manifests.join("aibuddy-placeholders-2147483000").exists());
    }

    /// A placeholder directory leaves the project at once when its last holder ends (moved to
    /// the trash, removed there in the background); one written into from outside stays; the
    /// trash of a dead process loses its empty directories and itself, nothing else.
    #[test]
    fn placeholder_directories_leave_at_once_and_dead_trash_is_swept() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let list = vec![
            (".cursor".to_string(), Placeholder::Dir),
            (".idea".to_string(), Placeholder::Dir),
        ];
        let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        assert!(root.join(".cursor").is_dir() && root.join(".idea").is_dir());
        let first = std::fs::metadata(root.join(".cursor")).unwrap();
        std::fs::write(root.join(".idea/person.xml"), "mine").unwrap();
        assert!(g.finish().is_empty());
        assert!(
            !root.join(".cursor").exists(),
            "the empty placeholder is gone"
        );
        assert!(root.join(".idea/person.xml").exists(), "written into: kept");
        // The next command's placeholder is the same (empty) directory, back by one rename,
        // where the trash shares the file system (the temp dir here).
        let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        let again = std::fs::metadata(root.join(".cursor")).unwrap();
        let empty = std::fs::read_dir(root.join(".cursor"))
            .unwrap()
            .next()
            .is_none();
        assert!(again.is_dir() && empty);
        if root.starts_with(std::env::temp_dir().canonicalize().unwrap()) {
            assert_eq!(again.ino(), first.ino(), "reused from the trash");
        }
        assert_eq!(g.read_only().len(), 2);
        assert!(g.finish().is_empty());
        assert!(!root.join(".cursor").exists());

        let dead = root.join(format!("{}2147483000", trash::PREFIX));
        std::fs::create_dir_all(dead.join("0")).unwrap();
        std::fs::create_dir_all(dead.join("1")).unwrap();
        std::fs::write(dead.join("1/kept"), "x").unwrap();
        let alive = root.join(format!("{}{}", trash::PREFIX, std::process::id()));
        std::fs::create_dir_all(alive.join("0")).unwrap();
        sweep_trash_in(&root);
        assert!(!dead.join("0").exists() && dead.join("1/kept").exists());
        assert!(
            alive.join("0").exists(),
            "a living process's trash is its own"
        );
    }

    #[test]
    fn placeholders_are_shared_and_removed_by_the_last_holder_when_empty() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let list = vec![
            (".envrc".to_string(), Placeholder::File),
            (".claude".to_string(), Placeholder::Dir),
        ];
        let a = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        assert_eq!(
            a.read_only(),
            vec![root.join(".envrc"), root.join(".claude")]
        );
        let b = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
        assert_eq!(b.read_only().len(), 2, "the second command binds them too");
        assert!(a.finish().is_empty());
        assert!(
            root.join(".envrc").exists(),
            "still held by the other command"
        );
        assert!(b.finish().is_empty());
        assert!(!root.join(".envrc").exists() && !root.join(".claude").exists());
    }
}
