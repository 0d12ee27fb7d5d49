//! The calls of the run in progress that the window may stop one at a time (an `execute` card's
//! own Stop): the agent hands each call's own cancellation token to its event sink
//! ([`RunEventSink::call_started`]); [`CallStops`] wraps the window's sink, keeps each token until
//! the call's `tool_result`, and `cancel_call` cancels it. Stopping one call leaves the run going:
//! the model sees that call cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aibuddy::agent::{RunEvent, RunEventSink};
use tokio_util::sync::CancellationToken;

/// Tokens of the run's calls that are still running, by tool call id.
#[derive(Clone, Default)]
pub struct RunCalls {
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

impl RunCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn started(&self, tool_call_id: &str, cancel: &CancellationToken) {
        self.lock().insert(tool_call_id.to_string(), cancel.clone());
    }

    fn ended(&self, tool_call_id: &str) {
        self.lock().remove(tool_call_id);
    }

    /// Stops run call `tool_call_id`. False when no call of a run is running under that id.
    pub fn cancel(&self, tool_call_id: &str) -> bool {
        let token = self.lock().get(tool_call_id).cloned();
        token.map(|t| t.cancel()).is_some()
    }

    /// Whether run call `tool_call_id` is running.
    pub fn is_running(&self, tool_call_id: &str) -> bool {
        self.lock().contains_key(tool_call_id)
    }

    /// The window's run event sink, keeping each call's token while the call runs.
    pub fn wrap(&self, inner: Arc<dyn RunEventSink>) -> Arc<dyn RunEventSink> {
        Arc::new(CallStops {
            calls: self.clone(),
            inner,
        })
    }
}

/// Forwards every event to the window's sink; keeps call tokens in [`RunCalls`].
struct CallStops {
    calls: RunCalls,
    inner: Arc<dyn RunEventSink>,
}

impl RunEventSink for CallStops {
    fn emit(&self, event: RunEvent) {
        match &event {
            RunEvent::ToolResult { tool_call_id, .. } => self.calls.ended(tool_call_id),
            // A run that ends leaves no call behind (a call cut short may not report).
            RunEvent::RunFinished { .. } => self.calls.lock().clear(),
            _ => {}
        }
        self.inner.emit(event);
    }

    fn call_started(&self, tool_call_id: &str, cancel: &CancellationToken) {
        self.calls.started(tool_call_id, cancel);
        self.inner.call_started(tool_call_id, cancel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::agent::CollectingRunSink;
    use aibuddy::events::CallStatus;

    fn result(id: &str) -> RunEvent {
        RunEvent::ToolResult {
            tool_call_id: id.into(),
            status: CallStatus::Cancelled,
            stage: None,
            model: String::new(),
            duration_ms: 1,
            exit_code: None,
            omitted_bytes: None,
            activated: Vec::new(),
        }
    }

    #[test]
    fn a_call_is_stoppable_from_its_start_to_its_result() {
        let calls = RunCalls::default();
        let inner = CollectingRunSink::new();
        let sink = calls.wrap(inner.clone());
        assert!(!calls.cancel("r:c1"), "nothing runs yet");
        let token = CancellationToken::new();
        sink.call_started("r:c1", &token);
        assert!(calls.is_running("r:c1"));
        assert!(calls.cancel("r:c1"));
        assert!(token.is_cancelled());
        sink.emit(result("r:c1"));
        assert!(!calls.is_running("r:c1"));
        assert!(!calls.cancel("r:c1"));
        assert_eq!(inner.events().len(), 1, "events reach the window unchanged");
    }
}
