//! What a host watches so that any change to what the trust digest covers is seen while the
//! project is open: the two trust-relevant files ([`super::files`]) and every path a project
//! server's command line names ([`super::pins`]), the pinned script a command could rewrite
//! included. The list comes from the same [`TrustStatus`] as the digest, so the watch cannot
//! drift from what trust hashes.
//!
//! - [`watched_paths`]: the paths (pure).
//! - [`watch_dirs`]: the existing directories to watch, non-recursively, to see those paths
//!   created, written, renamed or removed, and the folders on their way (reads existence only).
//! - [`affects`]: whether a change at a path may change the status (pure).
//!
//! After a relevant change the host re-evaluates the status and asks again for the directories:
//! a folder created on the way to a pin is then watched too.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use super::TrustStatus;
use super::files::{PROJECT_MCP, PROJECT_SETTINGS};

/// Where a pin was evaluated (absolute, lexical; `Pin::at`). Its `Debug` form shows nothing: the
/// path of a pin from the environment is built from a variable's value, which may be a secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PinnedAt(pub PathBuf);

impl fmt::Debug for PinnedAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PinnedAt(..)")
    }
}

/// Every path whose change may change `status` (absolute, sorted, no duplicates): the project's
/// `.aibuddy/mcp.json` and `.aibuddy/settings.json`, and each pinned path of its servers and hooks.
pub fn watched_paths(status: &TrustStatus) -> Vec<PathBuf> {
    let root = Path::new(&status.project);
    let files = [PROJECT_MCP, PROJECT_SETTINGS].map(|f| root.join(f));
    let pins = status
        .grants
        .servers
        .iter()
        .flat_map(|s| s.pins.iter())
        .chain(status.grants.hooks.iter().flat_map(|h| h.pins.iter()))
        .filter(|p| p.at.0.is_absolute())
        .map(|p| p.at.0.clone());
    files
        .into_iter()
        .chain(pins)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The existing directories from each path's parent up to `root` (inclusive; `root` itself for a
/// path that is `root`), to be watched non-recursively. Paths outside `root` are left out.
pub fn watch_dirs(root: &Path, paths: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::new();
    for p in paths.iter().filter(|p| p.starts_with(root)) {
        let from = if p == root {
            p.as_path()
        } else {
            p.parent().unwrap_or(root)
        };
        for dir in from.ancestors().take_while(|d| d.starts_with(root)) {
            if dir.is_dir() {
                dirs.insert(dir.to_path_buf());
            }
        }
    }
    dirs
}

/// Whether a change at `changed` may change the status: it is a watched path, or a folder on the
/// way to one (created, renamed or removed).
pub fn affects(paths: &[PathBuf], changed: &Path) -> bool {
    paths.iter().any(|p| p.starts_with(changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::{TrustState, status};

    #[test]
    fn the_watch_covers_the_trust_files_and_every_pinned_path() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let (root, data) = (base.join("p"), base.join("d"));
        std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(
            root.join(".aibuddy/mcp.json"),
            r#"{"mcpServers": {"s": {"command": "sh", "args": ["bin/start.sh", "--cfg=conf/c.json"],
                "env": {"HELPER": "tools/helper.sh"}}}}"#,
        )
        .unwrap();
        std::fs::write(root.join("bin/start.sh"), "exit 0").unwrap();
        let st = status(&root, &data).unwrap();
        assert_eq!(st.state, TrustState::Untrusted);
        let paths = watched_paths(&st);
        for want in [
            ".aibuddy/mcp.json",
            ".aibuddy/settings.json",
            "bin/start.sh",
            "conf/c.json",
            "tools/helper.sh",
        ] {
            assert!(paths.contains(&root.join(want)), "{want}: {paths:?}");
        }
        assert!(paths.iter().all(|p| p.starts_with(&root)), "{paths:?}");
        // The path of a pin from the environment is watched, never shown.
        assert!(!format!("{st:?}").contains("helper.sh"), "{st:?}");
        // Existing folders on the way, the root included; `conf/` and `tools/` do not exist yet.
        let dirs: Vec<PathBuf> = watch_dirs(&root, &paths).into_iter().collect();
        assert_eq!(
            dirs,
            vec![root.clone(), root.join(".aibuddy"), root.join("bin")]
        );
        // A rewritten script, a folder created on the way to a pin, a new settings file count;
        // another file of the project does not.
        assert!(affects(&paths, &root.join("bin/start.sh")));
        assert!(affects(&paths, &root.join("conf")));
        assert!(affects(&paths, &root.join(".aibuddy")));
        assert!(affects(&paths, &root.join(".aibuddy/settings.json")));
        assert!(!affects(&paths, &root.join("bin/other.sh")));
        assert!(!affects(&paths, &root.join("src/main.rs")));
    }

    #[test]
    fn without_servers_only_the_trust_files_are_watched() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("p");
        std::fs::create_dir_all(&root).unwrap();
        let st = status(&root, &base.join("d")).unwrap();
        assert_eq!(
            watched_paths(&st),
            vec![
                root.join(".aibuddy/mcp.json"),
                root.join(".aibuddy/settings.json")
            ]
        );
        assert_eq!(
            watch_dirs(&root, &watched_paths(&st)),
            BTreeSet::from([root.clone()])
        );
        assert_eq!(
            watch_dirs(&root, &[root.clone(), PathBuf::from("/elsewhere/x")]),
            BTreeSet::from([root.clone()])
        );
    }
}
