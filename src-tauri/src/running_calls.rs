//! The calls the window started that are still running (each stoppable by its id), the broker
//! their confirmations wait in, and where a call's late `ToolCompacted` goes. Held by the open
//! project (`crate::state::Project`); the calls themselves run in `crate::calls`.

use std::collections::HashMap;
use std::sync::Mutex;

use aibuddy::confirm::{ConfirmRequest, Decision, PendingBroker};
use tokio_util::sync::CancellationToken;

use crate::compacted::CompactedRouter;

/// The calls of this window that are still running, and the confirmations they wait for.
#[derive(Default)]
pub struct Calls {
    running: Mutex<HashMap<String, CancellationToken>>,
    pub(crate) broker: PendingBroker,
    /// Where a call's late `ToolCompacted` goes (installed as the compactor's sink).
    pub(crate) compacted: CompactedRouter,
}

impl Calls {
    pub(crate) fn start(&self, call_id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(call_id.to_string(), token.clone());
        }
        token
    }

    pub(crate) fn end(&self, call_id: &str) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(call_id);
        }
    }

    /// Stops a running call: one started from the UI, or one call of the run in progress
    /// (`stops`, the project's `App::call_stops`: the run goes on; the model sees that call
    /// cancelled). False when no such call is running.
    pub fn cancel(&self, call_id: &str, stops: &aibuddy::agent::call_stops::CallStops) -> bool {
        let token = self
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(call_id).cloned());
        match token {
            Some(t) => {
                t.cancel();
                true
            }
            None => stops.cancel(call_id),
        }
    }

    /// Stops every running call (the window is closing).
    pub fn cancel_all(&self) -> usize {
        let tokens: Vec<CancellationToken> = self
            .running
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        for token in &tokens {
            token.cancel();
        }
        tokens.len()
    }

    /// Waits until no call is running, up to `timeout`. True when none is left.
    pub fn wait_idle(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.running.lock().map(|r| r.is_empty()).unwrap_or(true) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Network questions waiting for the person.
    pub fn pending_network(&self) -> Vec<aibuddy::confirm::NetworkAsk> {
        self.broker.pending_network()
    }

    /// Answers the network question `ask_id` (the host and port are the core's, never the UI's).
    /// False when it is no longer open.
    pub fn answer_network(&self, ask_id: &str, answer: aibuddy::confirm::NetworkAnswer) -> bool {
        self.broker.answer_network(ask_id, answer)
    }

    /// Confirmation requests waiting for the person.
    pub fn pending_confirms(&self) -> Vec<ConfirmRequest> {
        self.broker.pending()
    }

    /// Answers the pending confirmation of `call_id`. An approval approves exactly the digest the
    /// core computed for that call. False when nothing is pending for it.
    pub fn answer(&self, call_id: &str, approve: bool) -> bool {
        let Some(request) = self
            .pending_confirms()
            .into_iter()
            .find(|r| r.call_id == call_id)
        else {
            return false;
        };
        let decision = if approve {
            Decision::Approved {
                digest: request.digest,
            }
        } else {
            Decision::Rejected {
                reason: Some("rejected in the desktop app".to_string()),
            }
        };
        self.broker.answer(call_id, decision)
    }
}

impl Calls {
    /// Whether call `call_id` (started from the UI) is still running.
    pub fn is_running(&self, call_id: &str) -> bool {
        self.running
            .lock()
            .map(|r| r.contains_key(call_id))
            .unwrap_or(false)
    }
}
