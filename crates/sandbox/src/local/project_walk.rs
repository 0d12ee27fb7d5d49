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
use super::ignores::{DirRules, IgnoreRules};
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
    let rules = project_rules(root, threads, skip)?;
    let mut b = WalkBuilder::new(root);
    b.follow_links(false)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .threads(rules.threads);
    b.filter_entry(move |entry| {
        let Ok(rel) = entry.path().strip_prefix(&rules.root) else {
            return false;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        rules.keeps(rel, is_dir)
    });
    Ok(b)
}

/// The rules of [`project_walker`] on their own, for a walker of its own (checkpoints walk with
/// directory handles): which entries the walk keeps.
pub struct ProjectRules {
    root: PathBuf,
    threads: usize,
    skip: Vec<PathBuf>,
    rules: IgnoreRules,
}

impl std::fmt::Debug for ProjectRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectRules")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl ProjectRules {
    /// Whether the walk keeps `rel` (relative to the root; `is_dir`: it is a directory, not
    /// followed through a symlink): not a `.git` entry, not beneath a path of `skip`, not ignored.
    /// Nothing beneath a directory it does not keep is walked.
    pub fn keeps(&self, rel: &Path, is_dir: bool) -> bool {
        self.kept_by_name(rel) && !self.rules.is_ignored(rel, is_dir)
    }

    /// The rules of the children of the directory `dir` (relative, `""` for the root), looked
    /// up once for all of them.
    pub fn in_dir(&self, dir: &Path) -> ProjectDirRules<'_> {
        ProjectDirRules {
            project: self,
            rules: self.rules.in_dir(dir),
        }
    }

    fn kept_by_name(&self, rel: &Path) -> bool {
        if rel.file_name().is_some_and(|n| n == ".git") {
            return false;
        }
        self.skip.is_empty() || !self.skip.iter().any(|s| self.root.join(rel).starts_with(s))
    }
}

/// [`ProjectRules`] for the children of one directory ([`ProjectRules::in_dir`]).
pub struct ProjectDirRules<'a> {
    project: &'a ProjectRules,
    rules: DirRules<'a>,
}

impl ProjectDirRules<'_> {
    /// [`ProjectRules::keeps`] for a child `rel` (relative to the root) of this directory.
    pub fn keeps(&self, rel: &Path, is_dir: bool) -> bool {
        self.project.kept_by_name(rel) && !self.rules.is_ignored(rel, is_dir)
    }
}

/// The rules of [`project_walker`] for `root` (absolute, canonical).
pub fn project_rules(
    root: &Path,
    threads: usize,
    skip: Vec<PathBuf>,
) -> Result<ProjectRules, SandboxError> {
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
    Ok(ProjectRules {
        root: root.to_path_buf(),
        threads: scoped.threads,
        skip,
        rules,
    })
}
