//! Stopping one call of a run (a desktop `execute` card's own Stop): while a call of any run of
//! the project (`App::call_stops`) runs, its own cancellation token (a child of the run's) is registered here under
//! its stored tool call id (`<run_id>:<provider id>`, unique across runs). Cancelling it ends that
//! call alone (process tree, confirmation wait): the model gets the call back cancelled and the
//! run goes on. Entries leave when the call ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

/// The running calls of this process's runs, by tool call id (with a registration number, so a
/// guard only removes its own entry).
#[derive(Default)]
pub struct CallStops {
    running: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next: AtomicU64,
}

/// Keeps a call stoppable until dropped.
pub struct Stoppable<'a> {
    stops: &'a CallStops,
    id: String,
    number: u64,
}

impl Drop for Stoppable<'_> {
    fn drop(&mut self) {
        let mut running = self.stops.lock();
        if running
            .get(&self.id)
            .is_some_and(|(n, _)| *n == self.number)
        {
            running.remove(&self.id);
        }
    }
}

impl CallStops {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes call `id` stoppable through `token` until the returned guard is dropped.
    pub fn register(&self, id: &str, token: &CancellationToken) -> Stoppable<'_> {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id.to_string(), (number, token.clone()));
        Stoppable {
            stops: self,
            id: id.to_string(),
            number,
        }
    }

    /// Stops call `id`. False when no call runs under that id.
    pub fn cancel(&self, id: &str) -> bool {
        let token = self.lock().get(id).map(|(_, t)| t.clone());
        token.map(|t| t.cancel()).is_some()
    }

    /// Whether call `id` is running.
    pub fn is_running(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_stoppable_while_registered_and_only_itself_is_cancelled() {
        let stops = CallStops::default();
        let run = CancellationToken::new();
        let (a, b) = (run.child_token(), run.child_token());
        let ga = stops.register("r:a", &a);
        let _gb = stops.register("r:b", &b);
        assert!(!stops.cancel("r:zz"));
        assert!(stops.cancel("r:a"));
        assert!(a.is_cancelled());
        assert!(
            !b.is_cancelled() && !run.is_cancelled(),
            "the run and its other calls go on"
        );
        drop(ga);
        assert!(!stops.is_running("r:a"));
        assert!(stops.is_running("r:b"));
        assert!(!stops.cancel("r:a"));
    }
}
