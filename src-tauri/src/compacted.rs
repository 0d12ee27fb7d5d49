//! `ToolCompacted` to the window: background precompaction finishes after its call returned, so
//! the core emits it on one project-level sink. This routes it to the sink (the `Channel`) of the
//! call it belongs to, which the UI still listens on; the most recent calls are remembered
//! (bounded), older ones' announcements are dropped (the history shows the compaction state).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aibuddy::events::{Event, EventSink};

/// How many recent calls a late `ToolCompacted` can still reach.
pub const REMEMBERED_CALLS: usize = 64;

/// One remembered call: its id and where its events go.
type Route = (String, Arc<dyn EventSink>);

/// The sinks of the most recent calls, by call id.
#[derive(Clone, Default)]
pub struct CompactedRouter {
    calls: Arc<Mutex<VecDeque<Route>>>,
}

impl CompactedRouter {
    /// Remember where the events of `call_id` go (the oldest call is forgotten past the bound).
    pub fn remember(&self, call_id: &str, sink: Arc<dyn EventSink>) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if calls.len() >= REMEMBERED_CALLS {
            calls.pop_front();
        }
        calls.push_back((call_id.to_string(), sink));
    }

    fn take(&self, call_id: &str) -> Option<Arc<dyn EventSink>> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let at = calls.iter().position(|(id, _)| id == call_id)?;
        calls.remove(at).map(|(_, sink)| sink)
    }
}

impl EventSink for CompactedRouter {
    fn emit(&self, event: Event) {
        let Event::ToolCompacted { call_id, .. } = &event else {
            return;
        };
        match self.take(call_id) {
            Some(sink) => sink.emit(event),
            None => tracing::debug!(call = %call_id, "compaction of a call no window listens to"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::events::CollectingSink;

    fn compacted(call_id: &str) -> Event {
        Event::ToolCompacted {
            call_id: call_id.into(),
            strategy: "trim".into(),
            tokens_before: 9000,
            tokens_after: 700,
        }
    }

    #[test]
    fn reaches_the_sink_of_its_call_once() {
        let router = CompactedRouter::default();
        let (a, b) = (CollectingSink::new(), CollectingSink::new());
        router.remember("call_a", a.clone());
        router.remember("call_b", b.clone());
        router.emit(compacted("call_b"));
        router.emit(compacted("call_b"));
        assert!(a.events().is_empty());
        assert_eq!(b.events(), vec![compacted("call_b")]);
    }

    #[test]
    fn forgets_the_oldest_calls_past_the_bound() {
        let router = CompactedRouter::default();
        let first = CollectingSink::new();
        router.remember("call_0", first.clone());
        for i in 1..=REMEMBERED_CALLS {
            router.remember(&format!("call_{i}"), CollectingSink::new());
        }
        router.emit(compacted("call_0"));
        assert!(first.events().is_empty());
    }
}
