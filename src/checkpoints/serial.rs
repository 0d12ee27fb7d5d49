//! The project's call lock: a mutating call holds it from just before its before-snapshot until
//! its after-snapshot is recorded, so two mutating calls of one project never overlap and each
//! change set holds only its own call's changes. Read-only calls never take it.
//!
//! Two layers: an async mutex per project key in this process (waiting costs no thread, and a
//! cancelled call stops waiting), then the store's `flock` (`aibuddy_checkpoint::CallLock`),
//! which serializes with every other process on the project (two `aibuddy call`s, a run, the
//! window) and is released by the kernel when its holder dies (`kill -9` never leaves the
//! project locked).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use aibuddy_checkpoint::{CallLock, CheckpointStore};
use tokio_util::sync::CancellationToken;

use super::CheckpointUseError;

/// One async mutex per project key, for the whole process.
static LOCAL: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The project's call lock, held until dropped.
#[derive(Debug)]
pub struct CallGuard {
    // Dropped in this order: the file lock, then the local queue.
    _file: CallLock,
    _local: tokio::sync::OwnedMutexGuard<()>,
}

fn local(key: &str) -> Arc<tokio::sync::Mutex<()>> {
    let mut map = match LOCAL.lock() {
        Ok(m) => m,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry(key.to_string()).or_default().clone()
}

/// Waits for the call lock of `cps`'s project; `None` when `cancel` fired first.
pub(crate) async fn acquire(
    cps: &Arc<CheckpointStore>,
    cancel: &CancellationToken,
) -> Result<Option<CallGuard>, CheckpointUseError> {
    let mutex = local(cps.key());
    let local = tokio::select! {
        g = mutex.lock_owned() => g,
        () = cancel.cancelled() => return Ok(None),
    };
    let store = cps.clone();
    let file = tokio::task::spawn_blocking(move || store.lock_calls());
    let file = tokio::select! {
        f = file => f.map_err(|e| CheckpointUseError::Task(e.to_string()))??,
        // The blocked thread takes the lock later and drops it at once.
        () = cancel.cancelled() => return Ok(None),
    };
    Ok(Some(CallGuard {
        _file: file,
        _local: local,
    }))
}
