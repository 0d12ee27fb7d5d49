//! What may be brought back from the container (pure but for finding the protected paths): the
//! container's content is untrusted, so every name, every write, every deletion and every
//! symlink target is judged here before anything is applied.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use aibuddy_sandbox::aibuddy_exec::protect::{Placeholder, ProtectedNow, protected_now};

use super::manifest::{Rel, at_or_under, parent_of};

/// Entries of a git directory that hold what git runs or obeys: never written from the
/// container, at any depth of any git directory (`modules/<name>/hooks` of a submodule
/// included), whatever the protected list says.
const GIT_CONTROL: &[&[u8]] = &[
    b"config",
    b"config.worktree",
    b"hooks",
    b"info",
    b"commondir",
];

/// The rules of one bring-back.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// Protected paths (`aibuddy_exec::protect`), relative to the project.
    protected: Vec<Rel>,
    /// The git directories of the project (its own and nested repositories'), relative.
    git_dirs: Vec<Rel>,
    /// Credential locations inside the project (`aibuddy_exec::hide`), relative: never copied
    /// in, never written back.
    credentials: Vec<Rel>,
}

/// A checked container name: relative, `/`-joined normal components.
pub(crate) fn check_name(raw: &[u8]) -> Result<Rel, &'static str> {
    let trimmed = raw.strip_suffix(b"/").unwrap_or(raw);
    if trimmed.is_empty() {
        return Err("an empty name");
    }
    if trimmed.starts_with(b"/") {
        return Err("an absolute name");
    }
    if trimmed.contains(&0) {
        return Err("a name with a NUL byte");
    }
    for c in trimmed.split(|b| *b == b'/') {
        match c {
            b"" | b"." => return Err("a name with an empty or `.` component"),
            b".." => return Err("a name leading out of the project (`..`)"),
            _ => {}
        }
    }
    Ok(trimmed.to_vec())
}

impl Policy {
    /// The rules for the project `root` (resolved): its protected paths as they are now (the
    /// list `aibuddy_exec` holds for a command: `list`) and the credential locations.
    pub(crate) fn for_project(
        root: &Path,
        list: &[(String, Placeholder)],
        credentials: &[PathBuf],
    ) -> Self {
        let found: ProtectedNow = protected_now(&[root.to_path_buf()], list);
        let rel = |p: &Path| -> Option<Rel> {
            let r = p.strip_prefix(root).ok()?;
            let b = r.as_os_str().as_bytes();
            (!b.is_empty()).then(|| b.to_vec())
        };
        Policy {
            protected: found.paths.iter().filter_map(|p| rel(p)).collect(),
            git_dirs: found.git_dirs.iter().filter_map(|p| rel(p)).collect(),
            // A nested repository beyond the search's cap is no known git directory: writes
            // into it are refused (see `write_refusal`).
            credentials: credentials.iter().filter_map(|p| rel(p)).collect(),
        }
    }

    /// Why `rel` may not be created or changed here (`None`: it may).
    pub(crate) fn write_refusal(&self, rel: &[u8]) -> Option<String> {
        if let Some(p) = self.protected.iter().find(|p| at_or_under(rel, p)) {
            return Some(format!("protected path {}", String::from_utf8_lossy(p)));
        }
        if self.credentials.iter().any(|c| at_or_under(rel, c)) {
            return Some("a credential location".into());
        }
        let comps: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
        for (i, c) in comps.iter().enumerate() {
            if *c != b".git" {
                continue;
            }
            let dir = comps[..=i].join(&b'/');
            if !self.git_dirs.contains(&dir) {
                return Some("a git directory that is not one here".into());
            }
            if comps[i + 1..].iter().any(|c| GIT_CONTROL.contains(c)) {
                return Some("git config, hooks or info".into());
            }
        }
        None
    }

    /// Why `rel` may not be removed here: as for a write, and also when a protected path, a git
    /// directory or a credential location lies beneath it.
    pub(crate) fn delete_refusal(&self, rel: &[u8]) -> Option<String> {
        if let Some(why) = self.write_refusal(rel) {
            return Some(why);
        }
        let holds = |list: &[Rel]| list.iter().any(|p| at_or_under(p, rel));
        if holds(&self.protected) || holds(&self.git_dirs) || holds(&self.credentials) {
            return Some(
                "it holds a protected path, a git directory or a credential location".into(),
            );
        }
        None
    }

    /// Why a symlink at `rel` pointing at `target` may not be made here: its target must stay
    /// inside the project (relative, never above the root) and not be refused for a write.
    pub(crate) fn link_refusal(&self, rel: &[u8], target: &[u8]) -> Option<String> {
        if let Some(why) = self.write_refusal(rel) {
            return Some(why);
        }
        if target.is_empty() || target.contains(&0) {
            return Some("a symlink with an empty target".into());
        }
        if target.starts_with(b"/") {
            return Some("a symlink to an absolute path (outside the project)".into());
        }
        let mut at: Vec<&[u8]> = match parent_of(rel) {
            Some(p) => p.split(|b| *b == b'/').collect(),
            None => Vec::new(),
        };
        for c in target.split(|b| *b == b'/') {
            match c {
                b"" | b"." => {}
                b".." => {
                    if at.pop().is_none() {
                        return Some("a symlink leading out of the project".into());
                    }
                }
                c => at.push(c),
            }
        }
        let resolved = at.join(&b'/');
        if resolved.is_empty() {
            return Some(
                "a symlink to the project folder itself (it holds protected paths)".into(),
            );
        }
        // Not to a protected path, nor to a folder holding one (`g -> .git`).
        self.delete_refusal(&resolved)
            .map(|why| format!("a symlink to {why}"))
    }

    /// Whether `rel` is never copied into the container (a credential location or beneath one).
    pub(crate) fn excluded(&self, rel: &[u8]) -> bool {
        self.credentials.iter().any(|c| at_or_under(rel, c))
    }
}

#[cfg(test)]
impl Policy {
    pub(crate) fn of_lists(protected: &[&str], git_dirs: &[&str], credentials: &[&str]) -> Self {
        let v = |l: &[&str]| l.iter().map(|s| s.as_bytes().to_vec()).collect();
        Policy {
            protected: v(protected),
            git_dirs: v(git_dirs),
            credentials: v(credentials),
        }
    }
}
