//! Reading skill folders through the sandbox crate's capability-scoped [`ScopedDir`] (cap-std,
//! kernel `RESOLVE_BENEATH`), the same confinement as the filesystem tools. A project skill root
//! `<project>/.aibuddy/skills` is opened beneath the project, so `.aibuddy` or `skills` linking out
//! of it is refused; the user's and the bundled roots are opened where they are (the person chose
//! them) and nothing is read outside them. Each skill's `SKILL.md` and references are read beneath
//! that skill's own folder: a symlinked skill folder, `SKILL.md` or reference leading outside is
//! refused (Authorization), never followed.

use std::path::{Component, Path};

use aibuddy_sandbox::{EntryKind, SandboxError, ScopedDir};

use super::PROJECT_SKILLS;
use super::catalog::{MAX_FILE_BYTES, MAX_REFERENCES, MAX_VISITED, SKILL_FILE};
use super::{RootKind, SkillRoot};

/// Why a root or a skill folder cannot be opened.
#[derive(Debug)]
pub enum OpenFailure {
    /// Nothing there (or not a directory): no skills, no problem.
    Missing,
    /// It leads outside what it may read (a symlink out of the project or the root).
    Escapes,
    Other(SandboxError),
}

impl From<SandboxError> for OpenFailure {
    fn from(e: SandboxError) -> Self {
        match e {
            SandboxError::NotFound { .. } | SandboxError::NotADirectory { .. } => {
                OpenFailure::Missing
            }
            e if e.is_escape() => OpenFailure::Escapes,
            e => OpenFailure::Other(e),
        }
    }
}

/// What a root may not leave: for a project root, the project.
pub fn confinement_of(root: &SkillRoot) -> &'static str {
    match root.kind {
        RootKind::Project => "the project",
        RootKind::User => "the user's skill folder",
        RootKind::Bundled => "the bundled skill folder",
    }
}

/// Open a skill root (see the module docs for where each kind is confined).
pub fn open_root(root: &SkillRoot) -> Result<ScopedDir, OpenFailure> {
    if root.kind == RootKind::Project
        && let Some(project) = project_of(&root.path)
    {
        let project = ScopedDir::open_root(project)?;
        return Ok(project.open_dir(Path::new(PROJECT_SKILLS))?);
    }
    Ok(ScopedDir::open_root(&root.path)?)
}

/// `<project>` for a root `<project>/.aibuddy/skills`.
fn project_of(path: &Path) -> Option<&Path> {
    if path.ends_with(PROJECT_SKILLS) {
        path.ancestors()
            .nth(Path::new(PROJECT_SKILLS).components().count())
    } else {
        None
    }
}

/// Open one skill folder of a root by its entry name.
pub fn open_skill(root: &ScopedDir, folder: &str) -> Result<ScopedDir, OpenFailure> {
    Ok(root.open_dir(Path::new(folder))?)
}

/// Candidate skill folders of a root: (name, folder handle or why it was refused), sorted by name.
/// Entries that are not directories, and folders without a `SKILL.md`, are left out silently.
pub fn skill_folders(root: &ScopedDir) -> Vec<(String, Result<ScopedDir, OpenFailure>)> {
    let Ok(mut entries) = root.entries(MAX_VISITED) else {
        return Vec::new();
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = Vec::new();
    for e in entries.into_iter().filter(|e| e.utf8) {
        if !matches!(e.kind, EntryKind::Dir | EntryKind::Symlink) {
            continue;
        }
        let folder = match open_skill(root, &e.name) {
            Ok(f) => f,
            Err(OpenFailure::Missing) => continue,
            Err(why) => {
                out.push((e.name, Err(why)));
                continue;
            }
        };
        // A SKILL.md that cannot be followed beneath the folder (a symlink out) stays a
        // candidate: loading it reports the refusal without reading it.
        match folder.kind(Path::new(SKILL_FILE)) {
            Ok(EntryKind::File) => out.push((e.name, Ok(folder))),
            Ok(_) => {}
            Err(e2) => match OpenFailure::from(e2) {
                OpenFailure::Missing => {}
                _ => out.push((e.name, Ok(folder))),
            },
        }
    }
    out
}

/// Why `SKILL.md` or a reference cannot be read.
#[derive(Debug)]
pub enum ReadFailure {
    Escapes,
    TooLarge { size: u64, max: u64 },
    Missing,
    Other(SandboxError),
}

/// Read a file beneath a skill folder, bounded by [`MAX_FILE_BYTES`].
pub fn read_file(folder: &ScopedDir, rel: &str) -> Result<Vec<u8>, ReadFailure> {
    folder
        .read_regular(Path::new(rel), MAX_FILE_BYTES)
        .map_err(|e| match e {
            SandboxError::TooLarge { size, max, .. } => ReadFailure::TooLarge { size, max },
            SandboxError::NotFound { .. }
            | SandboxError::NotADirectory { .. }
            | SandboxError::IsADirectory { .. }
            | SandboxError::NotRegular { .. } => ReadFailure::Missing,
            e if e.is_escape() => ReadFailure::Escapes,
            e => ReadFailure::Other(e),
        })
}

/// Whether a reference path can only name something beneath its skill folder (lexically).
pub fn is_relative_beneath(reference: &str) -> bool {
    !reference.is_empty()
        && Path::new(reference)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Reference files of a skill folder (`/`-separated, sorted, `SKILL.md` and dot files left out).
/// Symlinks are not listed (a reference read through one is still confined to the folder).
pub fn list_references(folder: &ScopedDir) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, Option<ScopedDir>)> = vec![(String::new(), None)];
    let mut visited = 0usize;
    while let Some((prefix, dir)) = stack.pop() {
        let dir = dir.as_ref().unwrap_or(folder);
        let Ok(entries) = dir.entries(MAX_VISITED) else {
            continue;
        };
        for e in entries {
            visited += 1;
            if visited > MAX_VISITED {
                break;
            }
            if !e.utf8 || e.name.starts_with('.') {
                continue;
            }
            let rel = if prefix.is_empty() {
                e.name.clone()
            } else {
                format!("{prefix}/{}", e.name)
            };
            match e.kind {
                EntryKind::Dir => {
                    if let Ok(sub) = dir.open_dir(Path::new(&e.name)) {
                        stack.push((rel, Some(sub)));
                    }
                }
                EntryKind::File if rel != SKILL_FILE => out.push(rel),
                _ => {}
            }
        }
    }
    out.sort();
    out.truncate(MAX_REFERENCES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_of_a_project_root() {
        assert_eq!(
            project_of(Path::new("/p/q/.aibuddy/skills")),
            Some(Path::new("/p/q"))
        );
        assert_eq!(project_of(Path::new("/p/q/skills")), None);
        assert!(is_relative_beneath("docs/a.md") && is_relative_beneath("./a"));
        for bad in ["", "/etc/passwd", "../x", "docs/../../x"] {
            assert!(!is_relative_beneath(bad), "{bad}");
        }
    }
}
