//! Writable roots are re-verified at launch: a root resolved when the settings were loaded may
//! have been swapped for a symlink since (a command can do that). Each root must still resolve to
//! exactly the path given; the sandbox binds that resolved path.

use std::path::{Path, PathBuf};

use crate::error::ExecError;

/// The decision for one root, given what it resolves to now (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCheck {
    /// Resolves to itself: use it.
    Same,
    /// Does not exist: skipped (nothing to bind).
    Missing,
    /// Resolves elsewhere now: refuse the launch.
    Changed { now: PathBuf },
}

/// Compares a given root with what it resolves to now.
pub fn check_root(given: &Path, resolved: Option<&Path>) -> RootCheck {
    match resolved {
        None => RootCheck::Missing,
        Some(now) if now == given => RootCheck::Same,
        Some(now) => RootCheck::Changed {
            now: now.to_path_buf(),
        },
    }
}

/// Re-resolves every root: the existing ones, or an Authorization-stage error naming the first
/// root that no longer resolves to itself.
pub(crate) fn verify(roots: &[PathBuf]) -> Result<Vec<PathBuf>, ExecError> {
    let mut ok = Vec::new();
    for root in roots {
        let resolved = std::fs::canonicalize(root).ok();
        match check_root(root, resolved.as_deref()) {
            RootCheck::Same => ok.push(root.clone()),
            RootCheck::Missing => {
                tracing::warn!(root = %root.display(), "writable root does not exist; skipped");
            }
            RootCheck::Changed { now } => {
                return Err(ExecError::RootChanged {
                    root: root.clone(),
                    now,
                });
            }
        }
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_swapped_for_a_symlink_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let root = base.join("cache");
        std::fs::create_dir(&root).unwrap();
        assert_eq!(
            verify(std::slice::from_ref(&root)).unwrap(),
            vec![root.clone()]
        );
        std::fs::remove_dir(&root).unwrap();
        assert!(verify(std::slice::from_ref(&root)).unwrap().is_empty());
        std::os::unix::fs::symlink("/", &root).unwrap();
        let err = verify(std::slice::from_ref(&root)).unwrap_err();
        assert_eq!(err.stage(), crate::ErrorStage::Authorization);
        assert!(err.to_string().contains("resolves to /"), "{err}");
        // A `..` that escapes is not the path it names either.
        let dotted = base.join("x/../../etc");
        assert!(matches!(
            check_root(&dotted, Some(Path::new("/etc"))),
            RootCheck::Changed { .. }
        ));
    }
}
