//! Finding the protected paths of a request on disk: the table's entries in every root, every
//! git directory (`gitdir:`, `commondir`, submodules, nested repositories within caps), hooks
//! paths, and symlinked entries' targets.

use std::os::unix::fs::OpenOptionsExt;

use super::*;

/// Where a path lives, if inside one of `roots` (the longest match).
pub(super) fn inside<'a>(path: &Path, roots: &'a [PathBuf]) -> Option<&'a PathBuf> {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
}

/// `path` with its parent resolved, or `None` when the parent does not exist.
pub(super) fn resolve_parent(path: &Path) -> Option<PathBuf> {
    let parent = path.parent()?;
    let name = path.file_name()?;
    let real = std::fs::canonicalize(parent).ok()?;
    Some(real.join(name))
}

/// A small regular file of the project as text: never blocks (a fifo planted as `.git/config`
/// reads as nothing), at most 1 MiB.
pub(super) fn read_small(path: &Path) -> Option<String> {
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
pub(super) fn gitdir_of_file(file: &Path) -> Option<PathBuf> {
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
pub(super) fn commondir_of(gitdir: &Path) -> Option<PathBuf> {
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
pub(super) fn git_config(gitdir: &Path) -> gitconfig::Config {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    gitconfig::read(&gitdir.join("config"), home.as_deref(), &read_small)
}

/// Git directories under `modules/` of `gitdir` (submodules; names may hold `/`), bounded.
pub(super) fn module_dirs(gitdir: &Path, out: &mut Vec<PathBuf>) {
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
pub(super) const HOOK_NAMES: &[&str] = &[
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
pub(super) fn push_hooks(found: &mut Layout, roots: &[PathBuf], gitdir: &Path, path: PathBuf) {
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
pub(super) fn git_of(
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
