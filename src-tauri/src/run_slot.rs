//! The window's single agent-run slot (at most one run in progress per open project): claimed by a
//! start, named once the run is recorded, cancelled by the run's id, released by the run's task.
//! Held by the open project (`crate::state::Project`); runs start in `crate::runs`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::error::{CommandError, ErrorCode};

/// The run in progress, if any.
struct Active {
    /// Distinguishes this start from a later one (the task clears only its own entry).
    generation: u64,
    run_id: Option<String>,
    cancel: CancellationToken,
}

/// The window's runs: at most one in progress.
#[derive(Default)]
pub struct Runs {
    active: Mutex<Option<Active>>,
    generation: Mutex<u64>,
}

impl Runs {
    /// Claims the single run slot. Refused while a run is in progress.
    pub(crate) fn claim(&self) -> Result<(u64, CancellationToken), CommandError> {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = active.as_ref() {
            return Err(CommandError::new(
                ErrorCode::Busy,
                format!(
                    "run {} is still in progress: one run at a time per project (stop it first)",
                    a.run_id.as_deref().unwrap_or("(starting)")
                ),
            ));
        }
        let generation = {
            let mut g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
            *g += 1;
            *g
        };
        let cancel = CancellationToken::new();
        *active = Some(Active {
            generation,
            run_id: None,
            cancel: cancel.clone(),
        });
        Ok((generation, cancel))
    }

    pub(crate) fn set_id(&self, generation: u64, run_id: &str) {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = active.as_mut().filter(|a| a.generation == generation) {
            a.run_id = Some(run_id.to_string());
        }
    }

    pub(crate) fn release(&self, generation: u64) {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if active.as_ref().is_some_and(|a| a.generation == generation) {
            *active = None;
        }
    }

    /// The id of the run in progress (None while none runs or it is still being recorded).
    pub fn current(&self) -> Option<String> {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        active.as_ref().and_then(|a| a.run_id.clone())
    }

    /// Whether a run is in progress.
    pub fn busy(&self) -> bool {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        active.is_some()
    }

    /// Cancels run `run_id`. False when it is not the run in progress.
    pub fn cancel(&self, run_id: &str) -> bool {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        match active.as_ref() {
            Some(a) if a.run_id.as_deref() == Some(run_id) => {
                a.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// Cancels the run in progress, if any (the window is closing). True when one was running.
    pub fn cancel_all(&self) -> bool {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        active.as_ref().map(|a| a.cancel.cancel()).is_some()
    }

    /// Waits (polling, bounded) until no run is in progress. True when none is left.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.busy() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// [`Runs::wait_idle`] without blocking the async runtime.
    pub async fn wait_idle_async(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.busy() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_at_a_time_and_stop_by_its_id() {
        let runs = Runs::default();
        let (first, token) = runs.claim().unwrap();
        let busy = runs.claim().unwrap_err();
        assert_eq!(busy.code, ErrorCode::Busy);
        assert!(busy.message.contains("(starting)"), "{}", busy.message);
        runs.set_id(first, "run_a");
        assert_eq!(runs.current().as_deref(), Some("run_a"));
        assert!(!runs.cancel("run_b"));
        assert!(!token.is_cancelled());
        assert!(runs.cancel("run_a"));
        assert!(token.is_cancelled());
        // A stale generation neither names nor releases the slot.
        runs.set_id(first + 1, "run_x");
        runs.release(first + 1);
        assert!(runs.busy());
        runs.release(first);
        assert!(!runs.busy() && runs.wait_idle(Duration::ZERO));
        let (second, _) = runs.claim().unwrap();
        assert!(second > first);
        assert!(runs.cancel_all());
    }
}
