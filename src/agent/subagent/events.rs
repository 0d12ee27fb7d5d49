//! A child run's events as the parent's: each wrapped in `RunEvent::Subagent` with the parent's
//! `agent` call id, on the parent's run event sink (one channel: `--json` lines, the desktop's
//! `run-event`).

use std::sync::Arc;

use crate::agent::events::{RunEvent, RunEventSink};

pub(crate) struct ChildEvents {
    pub parent: Arc<dyn RunEventSink>,
    pub parent_call_id: String,
}

impl RunEventSink for ChildEvents {
    fn emit(&self, event: RunEvent) {
        self.parent.emit(RunEvent::Subagent {
            parent_tool_call_id: self.parent_call_id.clone(),
            event: Box::new(event),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::events::CollectingRunSink;

    #[test]
    fn child_events_reach_the_parent_wrapped_with_the_call_id() {
        let parent = CollectingRunSink::new();
        let child = ChildEvents {
            parent: parent.clone(),
            parent_call_id: "p:toolu_1".into(),
        };
        child.emit(RunEvent::TextDelta { text: "hi".into() });
        let v = serde_json::to_value(&parent.events()[0]).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "subagent", "parent_tool_call_id": "p:toolu_1",
                "event": {"type": "text_delta", "text": "hi"}})
        );
    }
}
