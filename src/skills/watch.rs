//! Watching skill roots with `notify`. Events are debounced and then the whole catalog is reloaded
//! (it is small). A root that does not exist yet is covered by watching its nearest existing
//! ancestor (non-recursively), and the watches are re-armed after every reload so a newly created
//! root becomes watched itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak, mpsc};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use super::SkillsService;

const DEBOUNCE: Duration = Duration::from_millis(150);
/// A reload happens at the latest this long after the first event of a burst.
const MAX_DELAY: Duration = Duration::from_millis(600);

pub(super) struct Watch {
    /// Dropping it stops the events, which ends the reload thread.
    _watcher: Arc<std::sync::Mutex<RecommendedWatcher>>,
}

/// Whether an event on `path` can change the catalog: inside a root, or on the way to one.
fn relevant(path: &Path, roots: &[PathBuf]) -> bool {
    roots
        .iter()
        .any(|r| path.starts_with(r) || r.starts_with(path))
}

/// What to watch for a set of roots: (path, recursive).
fn desired(roots: &[PathBuf]) -> BTreeSet<(PathBuf, bool)> {
    let mut out = BTreeSet::new();
    for r in roots {
        if r.is_dir() {
            out.insert((r.clone(), true));
            continue;
        }
        let mut p: &Path = r;
        while let Some(parent) = p.parent() {
            if parent.is_dir() {
                out.insert((parent.to_path_buf(), false));
                break;
            }
            p = parent;
        }
    }
    out
}

fn arm(
    watcher: &mut RecommendedWatcher,
    current: &mut BTreeSet<(PathBuf, bool)>,
    roots: &[PathBuf],
) {
    let want = desired(roots);
    for (p, _) in current.difference(&want) {
        let _ = watcher.unwatch(p);
    }
    for (p, rec) in want.difference(current) {
        let mode = if *rec {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        if let Err(e) = watcher.watch(p, mode) {
            tracing::warn!("cannot watch skill folder {}: {e}", p.display());
        }
    }
    *current = want;
}

impl Watch {
    pub(super) fn start(svc: &Arc<SkillsService>) -> notify::Result<Watch> {
        let (tx, rx) = mpsc::channel::<()>();
        let roots: Vec<PathBuf> = svc.roots.iter().map(|r| r.path.clone()).collect();
        let filter_roots = roots.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Parents of missing roots are watched too: ignore their unrelated traffic (a data
            // directory with a busy database, say).
            // Reading the files (our own reloads included) raises access events: not changes.
            if let Ok(ev) = res
                && !matches!(ev.kind, notify::EventKind::Access(_))
                && ev.paths.iter().any(|p| relevant(p, &filter_roots))
            {
                let _ = tx.send(());
            }
        })?;
        let watcher = Arc::new(std::sync::Mutex::new(watcher));
        let mut current = BTreeSet::new();
        if let Ok(mut w) = watcher.lock() {
            arm(&mut w, &mut current, &roots);
        }
        let weak: Weak<SkillsService> = Arc::downgrade(svc);
        let w2 = Arc::downgrade(&watcher);
        std::thread::Builder::new()
            .name("skills-watch".into())
            .spawn(move || {
                // Ends when the watcher (and so the sender) is dropped with the service.
                while rx.recv().is_ok() {
                    // Debounce: collect the burst, but never wait longer than MAX_DELAY.
                    let first = std::time::Instant::now();
                    while first.elapsed() < MAX_DELAY && rx.recv_timeout(DEBOUNCE).is_ok() {}
                    let Some(svc) = weak.upgrade() else { break };
                    // Re-arm first, then reload: a file created after the new watches exist
                    // raises an event, and one created before them is seen by the reload. The
                    // other order misses anything created between the reload and the re-arm.
                    if let Some(w) = w2.upgrade()
                        && let Ok(mut w) = w.lock()
                    {
                        arm(&mut w, &mut current, &roots);
                    }
                    svc.reload();
                }
            })
            .map_err(|e| notify::Error::generic(&e.to_string()))?;
        Ok(Watch { _watcher: watcher })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relevance_and_watch_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let existing = tmp.path().join("bundled");
        std::fs::create_dir_all(&existing).unwrap();
        let missing = data.join("skills");
        let roots = vec![existing.clone(), missing.clone()];

        // An existing root is watched recursively, a missing one through its nearest parent.
        let want = desired(&roots);
        assert!(want.contains(&(existing.clone(), true)));
        assert!(want.contains(&(data.clone(), false)));
        assert_eq!(want.len(), 2);

        assert!(relevant(&existing.join("a/SKILL.md"), &roots));
        assert!(relevant(&missing, &roots), "creating the root itself");
        assert!(relevant(&data, &roots), "an ancestor of a root");
        assert!(
            !relevant(&data.join("store.sqlite-wal"), &roots),
            "busy neighbours"
        );
    }
}
