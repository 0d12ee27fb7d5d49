//! Watches what the open project's trust digest covers, as `aibuddy::trust::watch` lists it (the
//! `.aibuddy/` files and every project path a server's command line names, such as a pinned
//! `start.sh`), and, when its trust status changes while the project is open, has the caller
//! send `crate::trust_view::TRUST_EVENT` with the new prompt so the window asks again. One thread per watched
//! project owns the `notify` watcher; dropping the [`TrustWatch`] stops it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use aibuddy::trust::{TrustStatus, watch};
use notify::{RecursiveMode, Watcher};

/// Changes arriving within this window are evaluated once.
const SETTLE: Duration = Duration::from_millis(150);

/// Re-evaluations after a change that made new folders watchable (a file written in a folder
/// between its creation and its watch is then still seen).
const MAX_REARMS: usize = 8;

enum Msg {
    Fs(notify::Event),
    Stop,
}

/// A running watch; dropping it stops the thread and the watcher.
pub struct TrustWatch {
    tx: Sender<Msg>,
}

impl Drop for TrustWatch {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
    }
}

/// Whether an event may change the trust status, given the watched paths (pure).
pub fn relevant(paths: &[PathBuf], event: &notify::Event) -> bool {
    !matches!(event.kind, notify::EventKind::Access(_))
        && event.paths.iter().any(|p| watch::affects(paths, p))
}

/// The watched folders and the paths they are watched for.
struct Armed {
    paths: Vec<PathBuf>,
    dirs: BTreeSet<PathBuf>,
}

impl Armed {
    /// Watches the folders `status` needs now and stops watching the others; whether any folder
    /// was added.
    fn arm<W: Watcher>(&mut self, watcher: &mut W, root: &Path, status: &TrustStatus) -> bool {
        self.paths = watch::watched_paths(status);
        let want = watch::watch_dirs(root, &self.paths);
        for gone in self.dirs.difference(&want) {
            let _ = watcher.unwatch(gone);
        }
        let mut added = false;
        let mut dirs = BTreeSet::new();
        for dir in want {
            if self.dirs.contains(&dir) {
                dirs.insert(dir);
            } else if watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok() {
                added = true;
                dirs.insert(dir);
            }
        }
        self.dirs = dirs;
        added
    }
}

/// Recomputes the trust status of the watched root and tells the window when its digest differs
/// from the last one (then updated); `None` once the root is no longer the open project. The
/// caller's (it knows the shell's state and the window), so this module knows neither.
pub type Evaluate = Box<dyn FnMut(&Path, &mut String) -> Option<TrustStatus> + Send>;

/// Starts watching the project of `known`, the status the window already knows (no event until
/// the project's trust digest is something else); each relevant change is handed to `evaluate`.
pub fn start(known: &TrustStatus, mut evaluate: Evaluate) -> notify::Result<TrustWatch> {
    let (tx, rx) = mpsc::channel::<Msg>();
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res {
            let _ = fs_tx.send(Msg::Fs(event));
        }
    })?;
    let root = PathBuf::from(&known.project);
    watcher.watch(&root, RecursiveMode::NonRecursive)?;
    let mut armed = Armed {
        paths: Vec::new(),
        dirs: BTreeSet::from([root.clone()]),
    };
    armed.arm(&mut watcher, &root, known);
    let mut last = known.digest.clone();
    std::thread::Builder::new()
        .name("trust-watch".to_string())
        .spawn(move || {
            while let Ok(msg) = rx.recv() {
                let Msg::Fs(first) = msg else { return };
                let mut changed = relevant(&armed.paths, &first);
                // Let a burst of writes settle, then evaluate once.
                loop {
                    match rx.recv_timeout(SETTLE) {
                        Ok(Msg::Fs(e)) => changed |= relevant(&armed.paths, &e),
                        Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => break,
                    }
                }
                if !changed {
                    continue;
                }
                for _ in 0..MAX_REARMS {
                    let Some(status) = evaluate(&root, &mut last) else {
                        break;
                    };
                    if !armed.arm(&mut watcher, &root, &status) {
                        break;
                    }
                }
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(TrustWatch { tx })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: notify::EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn only_changes_to_watched_paths_and_folders_on_their_way_count() {
        let paths = [
            "/p/.aibuddy/mcp.json",
            "/p/.aibuddy/settings.json",
            "/p/bin/start.sh",
        ]
        .map(PathBuf::from);
        let modify = notify::EventKind::Modify(notify::event::ModifyKind::Any);
        let access = notify::EventKind::Access(notify::event::AccessKind::Any);
        assert!(relevant(&paths, &event(modify, "/p/.aibuddy/mcp.json")));
        assert!(relevant(&paths, &event(modify, "/p/.aibuddy")));
        assert!(relevant(&paths, &event(modify, "/p/bin/start.sh")));
        assert!(relevant(&paths, &event(modify, "/p/bin")));
        assert!(!relevant(&paths, &event(modify, "/p/src/main.rs")));
        assert!(!relevant(&paths, &event(modify, "/p/bin/other.sh")));
        assert!(!relevant(&paths, &event(modify, "/q/.aibuddy/mcp.json")));
        assert!(!relevant(&paths, &event(access, "/p/bin/start.sh")));
    }
}
