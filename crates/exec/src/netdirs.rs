//! The proxy folders of a dead app: each command with network on the namespace path gets a `0700`
//! folder `/tmp/aibuddy-net-*` holding its proxy's Unix socket, removed when the command ends. An
//! app killed mid-command (`kill -9`, a crash) leaves its folders behind; the next app's first
//! networked command sweeps them (once per process, on a thread of its own).
//!
//! A folder is removed only when it is ours to judge: owned by this user, older than a minute
//! (a starting command's socket may not be bound yet), and no socket is bound at its
//! `proxy.sock` (`/proc/net/unix` lists every bound path of the host's network namespace, where
//! the apps' proxies listen). Nothing connects to a live proxy to find out: that connection would
//! land in another command's network report.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

/// The prefix of the proxy folders under `/tmp`.
pub(crate) const PREFIX: &str = "aibuddy-net-";

/// How old a folder must be before it may be judged dead.
const MIN_AGE: Duration = Duration::from_secs(60);

/// Starts the sweep of `/tmp` once per process.
pub(crate) fn sweep_once() {
    static SWEPT: Once = Once::new();
    SWEPT.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("aibuddy-net-sweep".into())
            .spawn(|| {
                let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
                    return;
                };
                let bound = bound_paths(&table);
                let removed = sweep(Path::new("/tmp"), MIN_AGE, &bound);
                if removed > 0 {
                    tracing::debug!(removed, "removed proxy folders of a dead app");
                }
            });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "proxy folder sweep not started");
        }
    });
}

/// The socket paths bound in a `/proc/net/unix` table (its last column, when there is one).
pub(crate) fn bound_paths(table: &str) -> HashSet<PathBuf> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(7))
        .map(PathBuf::from)
        .collect()
}

/// Removes the dead proxy folders directly under `dir` (`bound`: the socket paths in use); how
/// many were removed.
pub(crate) fn sweep(dir: &Path, min_age: Duration, bound: &HashSet<PathBuf>) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // Not followed: a link planted under the name is not a folder of ours.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old_enough = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= min_age);
        if !meta.is_dir() || meta.uid() != me || !old_enough {
            continue;
        }
        if !bound.contains(&path.join("proxy.sock")) && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_folders_go_live_and_foreign_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        // A socket file nobody listens on any more (its listener dropped).
        drop(std::os::unix::net::UnixListener::bind(dead.join("proxy.sock")).unwrap());
        let live = tmp.path().join(format!("{PREFIX}live"));
        std::fs::create_dir(&live).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(live.join("proxy.sock")).unwrap();
        let other = tmp.path().join("someone-else");
        std::fs::create_dir(&other).unwrap();
        let bound = bound_paths(&std::fs::read_to_string("/proc/net/unix").unwrap());
        assert!(
            bound.contains(&live.join("proxy.sock")),
            "the live socket is listed"
        );
        assert!(
            !bound.contains(&dead.join("proxy.sock")),
            "the dead one is not"
        );
        // Too young to judge: nothing goes.
        assert_eq!(sweep(tmp.path(), Duration::from_secs(3600), &bound), 0);
        assert!(dead.exists());
        assert_eq!(sweep(tmp.path(), Duration::ZERO, &bound), 1);
        assert!(!dead.exists(), "a folder with no bound socket is removed");
        assert!(live.exists(), "a folder whose proxy listens stays");
        assert!(other.exists(), "other names are not touched");
    }

    #[test]
    fn the_table_gives_the_paths_of_bound_sockets_only() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                     00000000bf39e50e: 00000003 00000000 00000000 0001 03 4103982\n\
                     00000000ab887490: 00000002 00000000 00010000 0001 01 4101991 /tmp/aibuddy-net-x/proxy.sock\n";
        let bound = bound_paths(table);
        assert_eq!(bound.len(), 1);
        assert!(bound.contains(Path::new("/tmp/aibuddy-net-x/proxy.sock")));
    }
}
