//! [`HumanDesk`]: which broker answers the questions of which run. The agent attaches its run's
//! broker for the length of the run; the `ask_user_question` handler looks it up by the call's
//! run id. A call outside any attached run (e.g. `aibuddy call ask_user_question`) finds nobody
//! and gets the clear "no person" error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::HumanBroker;

#[derive(Default)]
pub struct HumanDesk {
    runs: Mutex<HashMap<String, Arc<dyn HumanBroker>>>,
}

impl HumanDesk {
    /// Route the questions of `run_id` to `broker` until the guard is dropped.
    pub fn attach(self: &Arc<Self>, run_id: &str, broker: Arc<dyn HumanBroker>) -> DeskGuard {
        if let Ok(mut r) = self.runs.lock() {
            r.insert(run_id.to_string(), broker);
        }
        DeskGuard {
            desk: self.clone(),
            run_id: run_id.to_string(),
        }
    }

    /// The broker of `run_id`, if one is attached.
    pub fn broker(&self, run_id: &str) -> Option<Arc<dyn HumanBroker>> {
        self.runs.lock().ok().and_then(|r| r.get(run_id).cloned())
    }
}

/// Detaches its run's broker when dropped.
pub struct DeskGuard {
    desk: Arc<HumanDesk>,
    run_id: String,
}

impl Drop for DeskGuard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.desk.runs.lock() {
            r.remove(&self.run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::human::NoPerson;

    #[test]
    fn a_broker_is_attached_for_the_length_of_its_guard() {
        let desk = Arc::new(HumanDesk::default());
        assert!(desk.broker("r1").is_none());
        let guard = desk.attach("r1", Arc::new(NoPerson::new()));
        assert!(desk.broker("r1").is_some());
        assert!(desk.broker("r2").is_none());
        drop(guard);
        assert!(desk.broker("r1").is_none());
    }
}
