//! Ignore rules of the project, read only through the root `Dir`.
//!
//! The ignore files (`.ignore`, `.gitignore` in every directory, `.git/info/exclude` in the
//! root) are project content, so they get what every other read gets: opened beneath the root
//! (a symlink leading out is refused), regular files only and never blocking (a fifo or a device
//! is skipped), and bounded (`MAX_IGNORE_FILE_BYTES`, the rest unread). The `ignore` crate's own
//! loader is not used: it opens these files by absolute path with no such checks, and follows a
//! `.git` file's `gitdir:` line anywhere on the machine.
//!
//! Precedence is ripgrep's: the nearest `.ignore` that has an opinion wins, then the nearest
//! `.gitignore`, then `.git/info/exclude`. Rules are loaded once per directory and cached for
//! the call.
//!
//! Nested repositories are ripgrep's too: a directory holding a `.git` (a directory, or a file
//! as in a submodule or worktree; a symlink does not count and is never followed) starts a
//! repository of its own. Beneath it the `.gitignore` files and `.git/info/exclude` of the
//! directories above it no longer apply, its own do (its `.git/info/exclude` is read only when
//! `.git` is a directory in the project: a `.git` file's `gitdir:` line is never followed);
//! `.ignore` files keep applying across the boundary. Unlike ripgrep, `.gitignore` applies
//! outside any repository as well (`require_git(false)`).

use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::Scoped;
use super::fsio::open_regular;
use crate::error::SandboxError;

/// Bytes read of one ignore file; the rest is ignored.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// Patterns compiled for one call, all ignore files together: each pattern becomes a regex, and a
/// project with a 1 MiB `.gitignore` of wildcard patterns in every folder would otherwise take
/// gigabytes and minutes. An ignore file that does not fit in what is left is not applied (its
/// files are shown) and a warning is logged.
pub const MAX_IGNORE_PATTERNS: usize = 10_000;

/// The rules one directory's own files define.
#[derive(Debug, Default)]
struct Level {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds a `.git`: the git rules of the levels above stop here.
    repo_root: bool,
}

impl Level {
    /// A level that changes nothing for the directories below (left out of chains).
    fn is_inert(&self) -> bool {
        self.ignore.is_none() && self.git.is_none() && self.exclude.is_none() && !self.repo_root
    }
}

/// The levels that apply to a directory's children, shallowest first (levels without rules that
/// start no repository are left out).
type Chain = Arc<Vec<Arc<Level>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GitEntry {
    Dir,
    File,
}

/// The rules of one directory's children ([`IgnoreRules::in_dir`]).
pub struct DirRules<'a> {
    rules: &'a IgnoreRules,
    chain: Chain,
}

impl DirRules<'_> {
    /// Is the child `rel` (relative to the root) of this directory ignored?
    pub fn is_ignored(&self, rel: &Path, is_dir: bool) -> bool {
        self.rules.matches(&self.chain, rel, is_dir)
    }
}

pub struct IgnoreRules {
    root: PathBuf,
    dir: Dir,
    chains: Mutex<HashMap<PathBuf, Chain>>,
    /// Patterns that may still be compiled in this call (see [`MAX_IGNORE_PATTERNS`]).
    budget: AtomicUsize,
}

impl std::fmt::Debug for IgnoreRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IgnoreRules")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl IgnoreRules {
    pub fn new(s: &Scoped) -> Result<Self, SandboxError> {
        let dir = s
            .dir
            .try_clone()
            .map_err(|e| SandboxError::from_io("open project root", "", e))?;
        Ok(IgnoreRules {
            root: s.root.clone(),
            dir,
            chains: Mutex::new(HashMap::new()),
            budget: AtomicUsize::new(MAX_IGNORE_PATTERNS),
        })
    }

    /// Is `rel` (relative to the root) ignored by the rules of the directories above it?
    pub fn is_ignored(&self, rel: &Path, is_dir: bool) -> bool {
        let parent = rel.parent().unwrap_or(Path::new(""));
        let chain = self.chain(parent);
        self.matches(&chain, rel, is_dir)
    }

    /// The rules that apply to the children of the directory `dir` (relative, `""` for the
    /// root), looked up once for all of them.
    pub fn in_dir(&self, dir: &Path) -> DirRules<'_> {
        DirRules {
            rules: self,
            chain: self.chain(dir),
        }
    }

    /// Is `rel` ignored by the levels of `chain` (those of its parent directory)?
    fn matches(&self, chain: &Chain, rel: &Path, is_dir: bool) -> bool {
        if chain.is_empty() {
            return false;
        }
        let abs = self.root.join(rel);
        let (mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None);
        // Deepest level first; once a repository's root is passed, the git rules of the levels
        // above it (an outer repository's) no longer apply.
        let mut outside_repo = false;
        for level in chain.iter().rev() {
            if ignore.is_none()
                && let Some(gi) = &level.ignore
            {
                ignore = gi.matched(&abs, is_dir).map(|_| ());
            }
            if !outside_repo
                && git.is_none()
                && let Some(gi) = &level.git
            {
                git = gi.matched(&abs, is_dir).map(|_| ());
            }
            if !outside_repo
                && exclude.is_none()
                && let Some(gi) = &level.exclude
            {
                exclude = gi.matched(&abs, is_dir).map(|_| ());
            }
            outside_repo = outside_repo || level.repo_root;
        }
        let decided = ignore.or(git).or(exclude);
        decided.is_ignore()
    }

    /// Is the directory `rel`, or any directory between it and the root, ignored? (Nothing
    /// beneath an ignored directory is searched, as in git.)
    pub fn is_dir_or_parent_ignored(&self, rel: &Path) -> bool {
        let mut acc = PathBuf::new();
        for c in rel.components() {
            acc.push(c);
            if self.is_ignored(&acc, true) {
                return true;
            }
        }
        false
    }

    /// The levels that apply to the children of `dir` (relative, `""` for the root).
    fn chain(&self, dir: &Path) -> Chain {
        if let Some(c) = self.cached(dir) {
            return c;
        }
        // Build from the deepest cached ancestor down, iteratively (deep trees stay shallow).
        let mut missing = vec![dir.to_path_buf()];
        let mut base: Chain = Arc::new(Vec::new());
        let mut cur = dir.to_path_buf();
        while let Some(parent) = cur.parent().map(Path::to_path_buf) {
            if let Some(c) = self.cached(&parent) {
                base = c;
                break;
            }
            missing.push(parent.clone());
            cur = parent;
        }
        for d in missing.into_iter().rev() {
            let level = self.load(&d);
            let chain = if level.is_inert() {
                base
            } else {
                let mut v = (*base).clone();
                v.push(Arc::new(level));
                Arc::new(v)
            };
            if let Ok(mut m) = self.chains.lock() {
                m.insert(d, Arc::clone(&chain));
            }
            base = chain;
        }
        base
    }

    fn cached(&self, dir: &Path) -> Option<Chain> {
        self.chains.lock().ok()?.get(dir).cloned()
    }

    fn load(&self, d: &Path) -> Level {
        let git = self.git_entry(d);
        Level {
            ignore: self.file(d, &d.join(".ignore")),
            git: self.file(d, &d.join(".gitignore")),
            // The root's exclude file applies even when `.git` was not seen (as before); a nested
            // repository's only when its `.git` is a directory.
            exclude: if d.as_os_str().is_empty() || git == Some(GitEntry::Dir) {
                self.file(d, &d.join(".git/info/exclude"))
            } else {
                None
            },
            repo_root: git.is_some(),
        }
    }

    /// What `d/.git` is, looked at without following a symlink (a symlink, a fifo and the like
    /// start no repository).
    fn git_entry(&self, d: &Path) -> Option<GitEntry> {
        let meta = self.dir.symlink_metadata(d.join(".git")).ok()?;
        if meta.is_dir() {
            Some(GitEntry::Dir)
        } else if meta.is_file() {
            Some(GitEntry::File)
        } else {
            None
        }
    }

    /// The rules of one ignore file, `None` when it is absent, refused or defines nothing.
    fn file(&self, d: &Path, rel: &Path) -> Option<Gitignore> {
        let shown = rel.display().to_string();
        let opened = open_regular(&self.dir, rel, &shown);
        let (file, _) = match opened {
            Ok(f) => f,
            Err(SandboxError::NotFound { .. }) => return None,
            Err(e) => {
                tracing::debug!(path = %shown, error = %e, "ignore file skipped");
                return None;
            }
        };
        let mut bytes = Vec::new();
        if let Err(e) = (&file).take(MAX_IGNORE_FILE_BYTES).read_to_end(&mut bytes) {
            tracing::debug!(path = %shown, error = %e, "ignore file unreadable; skipped");
            return None;
        }
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let patterns: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        let granted = self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(patterns.len())
            });
        if granted.is_err() {
            tracing::warn!(
                path = %shown,
                patterns = patterns.len(),
                max = MAX_IGNORE_PATTERNS,
                "too many ignore patterns in this project; this ignore file is not applied"
            );
            return None;
        }
        let mut builder = GitignoreBuilder::new(self.root.join(d));
        let mut any = false;
        for line in patterns {
            if builder.add_line(None, line).is_ok() {
                any = true;
            }
        }
        if !any {
            return None;
        }
        match builder.build() {
            Ok(gi) if !gi.is_empty() => Some(gi),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(path = %shown, error = %e, "ignore file not usable; skipped");
                None
            }
        }
    }
}
