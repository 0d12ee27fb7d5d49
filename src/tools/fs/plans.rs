//! Plan binding between confirmation and effect: `prepare` (before confirmation) previews a write
//! or edit and remembers, by call id, the file state it previewed; `run` passes that state to the
//! sandbox, which refuses (Changed) if the file is no longer what the person saw. A plan is
//! consumed once; at most [`MAX_PLANS`] are kept (the oldest is dropped).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Plans remembered between `prepare` and `run`.
pub const MAX_PLANS: usize = 256;

/// The previewed states of one tool's calls, by call id.
pub struct Plans<P> {
    inner: Mutex<Inner<P>>,
}

struct Inner<P> {
    by_call: HashMap<String, P>,
    order: VecDeque<String>,
}

impl<P> Default for Plans<P> {
    fn default() -> Self {
        Plans {
            inner: Mutex::new(Inner {
                by_call: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }
}

impl<P> Plans<P> {
    /// Remembers the previewed state of `call_id` (replacing an earlier one of the same call).
    pub fn remember(&self, call_id: &str, plan: P) {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if p.by_call.insert(call_id.to_string(), plan).is_none() {
            p.order.push_back(call_id.to_string());
        }
        while p.order.len() > MAX_PLANS {
            if let Some(old) = p.order.pop_front() {
                p.by_call.remove(&old);
            }
        }
    }

    /// Takes the plan of `call_id`, once.
    pub fn take(&self, call_id: &str) -> Option<P> {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        p.order.retain(|c| c != call_id);
        p.by_call.remove(call_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_taken_once_and_the_oldest_is_dropped() {
        let plans = Plans::default();
        plans.remember("a", 1);
        assert_eq!(plans.take("a"), Some(1));
        assert_eq!(plans.take("a"), None);
        for i in 0..=MAX_PLANS {
            plans.remember(&format!("c{i}"), i);
        }
        assert_eq!(plans.take("c0"), None, "the oldest plan was dropped");
        assert_eq!(plans.take("c1"), Some(1));
        assert_eq!(plans.take(&format!("c{MAX_PLANS}")), Some(MAX_PLANS));
    }
}
