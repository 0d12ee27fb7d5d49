//! Watches the open project's `.aibuddy/` folder (where `settings.json` and `mcp.json` live) and,
//! when its trust status changes while the project is open, sends [`TRUST_EVENT`] with the new
//! [`TrustPrompt`] so the window asks again. One thread per watched project owns the `notify`
//! watcher; dropping the [`TrustWatch`] stops it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::state::ShellState;
use crate::trust_view::{TRUST_EVENT, prompt};

/// Changes arriving within this window are evaluated once.
const SETTLE: Duration = Duration::from_millis(150);

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

/// Whether an event touches the trust-relevant folder of `root` (pure).
pub fn relevant(root: &Path, event: &notify::Event) -> bool {
    let dir = root.join(".aibuddy");
    !matches!(event.kind, notify::EventKind::Access(_))
        && event.paths.iter().any(|p| p.starts_with(&dir))
}

/// Starts watching `root`; `last_digest` is the digest the window already knows (no event until the
/// files hash to something else).
pub fn start<R: Runtime>(
    handle: AppHandle<R>,
    root: PathBuf,
    last_digest: String,
) -> notify::Result<TrustWatch> {
    let (tx, rx) = mpsc::channel::<Msg>();
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res {
            let _ = fs_tx.send(Msg::Fs(event));
        }
    })?;
    watcher.watch(&root, RecursiveMode::NonRecursive)?;
    let dir = root.join(".aibuddy");
    let mut watching_dir = dir.is_dir() && watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok();
    std::thread::Builder::new()
        .name("trust-watch".to_string())
        .spawn(move || {
            let mut last = last_digest;
            while let Ok(msg) = rx.recv() {
                let Msg::Fs(first) = msg else { return };
                let mut changed = relevant(&root, &first);
                // Let a burst of writes settle, then evaluate once.
                loop {
                    match rx.recv_timeout(SETTLE) {
                        Ok(Msg::Fs(e)) => changed |= relevant(&root, &e),
                        Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => break,
                    }
                }
                if !changed {
                    continue;
                }
                if !watching_dir && dir.is_dir() {
                    watching_dir = watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok();
                }
                if let Some(digest) = evaluate(&handle, &root, &last) {
                    last = digest;
                }
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(TrustWatch { tx })
}

/// Recomputes the trust status of `root` (if it is still the open project) and tells the window
/// when its digest differs from `last`. Returns the new digest when one was sent.
fn evaluate<R: Runtime>(handle: &AppHandle<R>, root: &Path, last: &str) -> Option<String> {
    let state = handle.try_state::<ShellState>()?;
    let project = state.current()?;
    if project.app.project_root != root {
        return None;
    }
    let status = project.app.trust_status();
    if status.digest == last {
        return None;
    }
    let declined =
        crate::projects::recent_entry(&state, &project.info.root).and_then(|e| e.declined_digest);
    let digest = status.digest.clone();
    let view = prompt(status, declined.as_deref(), project.app.trust.state);
    tracing::info!(project = %project.info.root, ask = view.ask, "trust-relevant files changed");
    if let Err(error) = handle.emit(TRUST_EVENT, &view) {
        tracing::debug!(%error, "could not tell the window the trust status changed");
    }
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: notify::EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn only_changes_under_the_projects_aibuddy_folder_count() {
        let root = Path::new("/p");
        let modify = notify::EventKind::Modify(notify::event::ModifyKind::Any);
        let access = notify::EventKind::Access(notify::event::AccessKind::Any);
        assert!(relevant(root, &event(modify, "/p/.aibuddy/mcp.json")));
        assert!(relevant(root, &event(modify, "/p/.aibuddy")));
        assert!(!relevant(root, &event(modify, "/p/src/main.rs")));
        assert!(!relevant(root, &event(modify, "/q/.aibuddy/mcp.json")));
        assert!(!relevant(root, &event(access, "/p/.aibuddy/mcp.json")));
    }
}
