//! Whether the person's own files are within reach of the project. When the data directory lies
//! inside the project folder (a project opened at `~`, whose default data directory is
//! `~/.local/share/aibuddy`, or a `--data-dir` beneath the project), every command and file tool
//! the project runs may write there: its `mcp.json` (started with no trust needed), its
//! `settings.json` (writable roots anywhere) and `trusted-projects.json` (forged trust). Those files
//! then count as the project's: the project cannot be trusted, the user-level servers are not
//! started and the user-level widening settings are ignored.

use std::path::{Component, Path, PathBuf};

/// The problem line (and refusal) when the data directory lies inside the project.
pub fn message(data_dir: &Path) -> String {
    format!(
        "the data directory `{}` lies inside the project: a command could rewrite its trust records, `mcp.json` and `settings.json`, so the project cannot be trusted and those files' servers and wider settings are not used (use a data directory outside the project)",
        data_dir.display()
    )
}

/// Where `path` really is: canonical when it exists, else its nearest existing ancestor made
/// canonical with the rest appended (`..` folded), so a data directory not created yet (or a
/// symlink to one) is placed correctly.
pub fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut rest: Vec<Component<'_>> = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for c in rest.iter().rev() {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return crate::settings::normalize_lexically(&absolute),
        }
    }
}

/// Whether `data_dir` is `project_root` (canonical) or lies beneath it.
pub fn data_dir_inside(project_root: &Path, data_dir: &Path) -> bool {
    resolve(data_dir).starts_with(project_root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn inside_through_missing_dirs_symlinks_and_dot_dot() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let project = base.join("p");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("data")).unwrap();
        assert!(data_dir_inside(&project, &project));
        assert!(data_dir_inside(&project, &project.join(".data/not/yet")));
        assert!(data_dir_inside(&project, &project.join("sub/../x")));
        assert!(!data_dir_inside(&project, &project.join("sub/../../data")));
        assert!(!data_dir_inside(&project, &base.join("data")));
        assert!(
            !data_dir_inside(&project, &base.join("p2")),
            "a sibling sharing the prefix"
        );
        symlink(&project, base.join("link")).unwrap();
        assert!(data_dir_inside(&project, &base.join("link/d")));
        symlink(base.join("data"), project.join("out")).unwrap();
        assert!(
            !data_dir_inside(&project, &project.join("out")),
            "a link out of the project is where it points"
        );
    }
}
