//! Executing the tool calls of one assistant message through `Runner::call`.
//!
//! Consecutive read-only calls run concurrently; every other call runs alone, in order, so
//! confirmations are asked one at a time. Tool events are forwarded as run events; heartbeats
//! re-arm the idle watchdog.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::events::{RunEvent, RunEventSink};
use super::watchdog::IdleWatchdog;
use crate::discovery::ToolSet;
use crate::events::{Event, EventSink};
use crate::human::{CallElicitation, RunHuman};
use crate::pipeline::{CallOutcome, CallRequest, Runner};
use aibuddy_mcp::{CallerElicitation, with_caller};

/// One call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

impl PlannedCall {
    /// The argument text for the Parameters stage: arguments that were not valid JSON are kept
    /// by the provider as a JSON string holding the raw text, and go through unchanged.
    fn arguments(&self) -> String {
        match &self.input {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// Batches of call indexes: each batch runs concurrently, batches run in order. Consecutive
/// read-only calls share a batch; any other call is alone. Pure.
pub fn plan_batches(calls: &[PlannedCall], read_only: impl Fn(&str) -> bool) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut open_read_only = false;
    for (i, c) in calls.iter().enumerate() {
        let ro = read_only(&c.name);
        match batches.last_mut() {
            Some(b) if ro && open_read_only => b.push(i),
            _ => batches.push(vec![i]),
        }
        open_read_only = ro;
    }
    batches
}

/// Tool events as run events.
pub(crate) struct ToolEvents {
    pub run: Arc<dyn RunEventSink>,
    pub watchdog: Arc<IdleWatchdog>,
}

impl EventSink for ToolEvents {
    fn emit(&self, event: Event) {
        match event {
            Event::ToolOutputDelta {
                call_id,
                stream,
                chunk,
            } => {
                self.watchdog.touch();
                self.run.emit(RunEvent::ToolOutput {
                    tool_call_id: call_id,
                    stream,
                    chunk,
                });
            }
            Event::Heartbeat { call_id } => {
                self.watchdog.touch();
                self.run.emit(RunEvent::Heartbeat {
                    tool_call_id: call_id,
                });
            }
            // The run's `confirm_request` comes from `RunConfirm` once the broker can take the
            // answer (the pipeline announces before it registers); it pauses the watchdog.
            Event::ConfirmResolved { .. } => self.watchdog.resume(),
            // MCP progress is a sign of life too (a long server call that reports progress).
            Event::ToolProgress { .. } => self.watchdog.touch(),
            _ => {}
        }
    }
}

/// The run whose calls these are: MCP elicitations that arrive while a call is in flight are asked
/// through the run's person and stored under that call (`aibuddy_mcp::with_caller`).
pub(crate) struct Asker<'a> {
    pub run_id: &'a str,
    pub human: &'a Arc<RunHuman>,
}

impl Asker<'_> {
    fn caller(&self, call_id: &str) -> CallerElicitation {
        CallerElicitation {
            key: self.run_id.to_string(),
            broker: Arc::new(CallElicitation::new(self.human.clone(), call_id)),
        }
    }
}

/// Runs the calls and returns their outcomes in call order.
pub(crate) async fn execute(
    runner: &Runner,
    toolset: &ToolSet,
    calls: &[PlannedCall],
    cancel: &CancellationToken,
    sink: Arc<dyn EventSink>,
    run_events: &dyn RunEventSink,
    asker: &Asker<'_>,
) -> Vec<CallOutcome> {
    let registry = runner.registry.clone();
    let read_only = |name: &str| {
        registry
            .get(name)
            .is_some_and(|(d, _)| d.risk == crate::registry::Risk::ReadOnly)
    };
    let mut outcomes: Vec<Option<CallOutcome>> = vec![None; calls.len()];
    for batch in plan_batches(calls, read_only) {
        let futures = batch.iter().map(|&i| {
            let c = &calls[i];
            run_events.emit(RunEvent::ToolCall {
                tool_call_id: c.id.clone(),
                tool: c.name.clone(),
                input: c.input.clone(),
            });
            let req = CallRequest {
                id: Some(c.id.clone()),
                name: c.name.clone(),
                arguments: c.arguments(),
            };
            with_caller(
                asker.caller(&c.id),
                runner.call(toolset, req, cancel.clone(), sink.clone()),
            )
        });
        let done = futures::future::join_all(futures).await;
        for (&i, outcome) in batch.iter().zip(done) {
            run_events.emit(RunEvent::ToolResult {
                tool_call_id: outcome.tool_call_id.clone(),
                status: outcome.status,
                stage: outcome.stage,
                model: outcome.model.clone(),
            });
            outcomes[i] = Some(outcome);
        }
    }
    outcomes.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str) -> PlannedCall {
        PlannedCall {
            id: format!("id_{name}"),
            name: name.into(),
            input: json!({}),
        }
    }

    #[test]
    fn consecutive_read_only_calls_share_a_batch_others_run_alone() {
        let calls: Vec<PlannedCall> = ["r1", "r2", "w1", "r3", "w2", "w3", "r4", "r5"]
            .into_iter()
            .map(call)
            .collect();
        let b = plan_batches(&calls, |n| n.starts_with('r'));
        assert_eq!(
            b,
            vec![vec![0, 1], vec![2], vec![3], vec![4], vec![5], vec![6, 7]]
        );
        assert!(plan_batches(&[], |_| true).is_empty());
    }

    #[test]
    fn unparsable_arguments_reach_the_parameters_stage_as_text() {
        let mut c = call("x");
        c.input = json!("{not json");
        assert_eq!(c.arguments(), "{not json");
        c.input = json!({"a": 1});
        assert_eq!(c.arguments(), r#"{"a":1}"#);
    }
}
