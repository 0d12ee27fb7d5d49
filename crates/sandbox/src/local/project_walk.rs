//! The project walk other crates use to see the whole tree under the project's ignore rules
//! (checkpoints): the same rules as glob and grep (`.ignore`, `.gitignore` in every directory,
//! `.git/info/exclude`, read through the root `Dir`), but hidden files are included and every
//! `.git` entry (a repository's own store) is left out. Symlinks are never followed.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use ignore::WalkBuilder;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use super::Scoped;
use super::ignores::IgnoreRules;
use crate::error::SandboxError;
use crate::limits::Limits;

/// A walker over `root` (absolute, canonical) that yields what the project's ignore rules keep,
/// hidden files included, `.git` left out, nothing beneath any path of `skip` (absolute paths,
/// e.g. a data directory placed inside the project). `threads` sets the parallel walk's width.
pub fn project_walker(
    root: &Path,
    threads: usize,
    skip: Vec<PathBuf>,
) -> Result<WalkBuilder, SandboxError> {
    let shown = root.display().to_string();
    let dir = Dir::open_ambient_dir(root, ambient_authority())
        .map_err(|e| SandboxError::from_io("open project root", &shown, e))?;
    let scoped = Scoped {
        root: root.to_path_buf(),
        configured_root: root.to_path_buf(),
        dir,
        limits: Limits::default(),
        threads: threads.max(1),
        in_flight: AtomicUsize::new(0),
    };
    let rules = IgnoreRules::new(&scoped)?;
    let mut b = WalkBuilder::new(root);
    b.follow_links(false)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .threads(scoped.threads);
    let root = root.to_path_buf();
    b.filter_entry(move |entry| {
        if entry.file_name() == ".git" {
            return false;
        }
        if skip.iter().any(|s| entry.path().starts_with(s)) {
            return false;
        }
        let Ok(rel) = entry.path().strip_prefix(&root) else {
            return false;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !rules.is_ignored(rel, is_dir)
    });
    Ok(b)
}
