//! [`PersonWaits`]: how a run's idle watchdog learns that a person is being asked. While a question
//! or an elicitation waits for its answer, silence is expected, so the watchdog does not stop the
//! call that asked; once answered, the idle timer starts again from the answer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::time::Instant;

/// Shared by one run's [`super::RunHuman`] (which counts waits) and its watchdogs (which read them).
#[derive(Debug)]
pub struct PersonWaits {
    waiting: AtomicUsize,
    last_end: Mutex<Instant>,
}

impl Default for PersonWaits {
    fn default() -> Self {
        Self {
            waiting: AtomicUsize::new(0),
            last_end: Mutex::new(Instant::now()),
        }
    }
}

impl PersonWaits {
    /// True while at least one question of the run waits for the person.
    pub fn waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }

    /// When the last wait ended (or when this was created).
    pub fn last_end(&self) -> Instant {
        self.last_end
            .lock()
            .map(|l| *l)
            .unwrap_or_else(|_| Instant::now())
    }

    /// Counts one wait until the returned guard drops.
    pub fn begin(&self) -> WaitGuard<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        WaitGuard { waits: self }
    }
}

/// See [`PersonWaits::begin`].
pub struct WaitGuard<'a> {
    waits: &'a PersonWaits,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut l) = self.waits.last_end.lock() {
            *l = Instant::now();
        }
        let _ = self
            .waits
            .waiting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_counts_until_its_guard_drops_and_marks_its_end() {
        let w = PersonWaits::default();
        let before = w.last_end();
        assert!(!w.waiting());
        {
            let _a = w.begin();
            let _b = w.begin();
            assert!(w.waiting());
        }
        assert!(!w.waiting());
        assert!(w.last_end() >= before);
    }
}
