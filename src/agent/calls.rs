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
/// through the run's person and stored under that call (`aibuddy_mcp::with_caller`), and each call
/// is stoppable alone by its id while it runs (`stops`, the project's `App::call_stops`).
pub(crate) struct Asker<'a> {
    pub run_id: &'a str,
    pub human: &'a Arc<RunHuman>,
    pub stops: &'a super::call_stops::CallStops,
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
            // The call's own token: a host may stop this call alone (`call_stops`); the run's
            // stop reaches it too. Stoppable from here until the call has ended.
            let call_cancel = cancel.child_token();
            let stoppable = asker.stops.register(&c.id, &call_cancel);
            let sink = sink.clone();
            let caller = asker.caller(&c.id);
            async move {
                let outcome =
                    with_caller(caller, runner.call(toolset, req, call_cancel, sink)).await;
                drop(stoppable);
                outcome
            }
        });
        let done = futures::future::join_all(futures).await;
        for (&i, outcome) in batch.iter().zip(done) {
            run_events.emit(result_event(&outcome));
            outcomes[i] = Some(outcome);
        }
    }
    outcomes.into_iter().flatten().collect()
}

/// The `tool_result` event of a finished call: status, stage, the model's text, its duration, and
/// what the card shows for `execute` (exit code, bytes cut from the model text; read from the
/// client projection, or from the error's copy of it for a stopped command) and `tool_search`
/// (the tools it activated). Pure.
pub fn result_event(outcome: &CallOutcome) -> RunEvent {
    let client = outcome.shown_client();
    let is_execute = outcome.tool == "execute";
    let exit_code = is_execute
        .then(|| client.get("exit_code").and_then(Value::as_i64))
        .flatten();
    let omitted_bytes = is_execute
        .then(|| client.get("omitted_middle_bytes").and_then(Value::as_u64))
        .flatten()
        .filter(|&n| n > 0);
    let activated = if outcome.tool == crate::discovery::TOOL_SEARCH {
        client
            .get("activated")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let sandbox = client
        .get(crate::tools::execute::CONFINEMENT_DETAIL)
        .and_then(|d| crate::tools::execute::call_sandbox(&outcome.tool, d));
    let sync = crate::tools::execute::call_sync(&outcome.tool, client);
    RunEvent::ToolResult {
        tool_call_id: outcome.tool_call_id.clone(),
        status: outcome.status,
        stage: outcome.stage,
        model: outcome.model.clone(),
        duration_ms: outcome.duration_ms,
        exit_code,
        omitted_bytes,
        activated,
        hooks: outcome.hooks.clone(),
        sandbox,
        sync,
    }
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

    fn outcome(tool: &str, client: Value) -> CallOutcome {
        CallOutcome {
            tool_call_id: "r:c1".into(),
            run_id: "r".into(),
            tool: tool.into(),
            status: crate::events::CallStatus::Ok,
            stage: None,
            error: None,
            model: "text".into(),
            client,
            duration_ms: 1234,
            confirm: None,
            hooks: Vec::new(),
        }
    }

    #[test]
    fn an_execute_result_carries_its_exit_code_duration_and_cut() {
        let e = result_event(&outcome(
            "execute",
            json!({"exit_code": 2, "omitted_middle_bytes": 4096}),
        ));
        let RunEvent::ToolResult {
            duration_ms,
            exit_code,
            omitted_bytes,
            activated,
            ..
        } = e
        else {
            panic!("not a tool result: {e:?}")
        };
        assert_eq!(
            (duration_ms, exit_code, omitted_bytes),
            (1234, Some(2), Some(4096))
        );
        assert!(activated.is_empty());
        // Nothing cut: no omitted bytes; killed by a signal: no exit code.
        let e = result_event(&outcome(
            "execute",
            json!({"exit_code": null, "omitted_middle_bytes": 0}),
        ));
        assert!(matches!(
            e,
            RunEvent::ToolResult {
                exit_code: None,
                omitted_bytes: None,
                ..
            }
        ));
    }

    #[test]
    fn an_execute_result_names_the_container_it_ran_in() {
        let client = json!({"exit_code": 0, "confinement_detail": {
            "kind": "container", "engine": "unix:///run/podman/podman.sock",
            "image": "debian:12", "container": "0123456789ab", "network_isolated": true}});
        let RunEvent::ToolResult { sandbox, .. } = result_event(&outcome("execute", client)) else {
            panic!("not a tool result")
        };
        assert_eq!(
            sandbox.as_deref(),
            Some("container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock")
        );
        // Another tool's projection says nothing about where it ran, whatever it holds.
        let claimed = json!({"confinement_detail": {"kind": "container", "image": "x",
            "container": "0123456789ab", "engine": "unix:///x"}});
        let RunEvent::ToolResult { sandbox, .. } =
            result_event(&outcome("mcp__evil__run", claimed.clone()))
        else {
            panic!("not a tool result")
        };
        assert_eq!(sandbox, None);
        assert_eq!(
            crate::tools::execute::stored_call_sandbox("execute", Some("not json")),
            None
        );
        assert_eq!(
            crate::tools::execute::stored_call_sandbox(
                "execute",
                Some(&claimed["confinement_detail"].to_string())
            )
            .as_deref(),
            Some("container 0123456789ab (image `x`) on unix:///x")
        );
        let local = json!({"confinement_detail": {"kind": "namespaces", "landlock_abi": 7,
            "network_isolated": true, "scopes": true}});
        let RunEvent::ToolResult { sandbox, .. } = result_event(&outcome("execute", local)) else {
            panic!("not a tool result")
        };
        assert_eq!(sandbox, None);
    }

    #[test]
    fn a_stopped_command_reads_its_exit_fields_from_the_error_details() {
        let mut o = outcome("execute", Value::Null);
        o.status = crate::events::CallStatus::Cancelled;
        o.error = Some(
            crate::contract::ToolError::execution("cancelled", "stopped")
                .with_details(json!({"client": {"exit_code": 143, "omitted_middle_bytes": 10}})),
        );
        assert!(matches!(
            result_event(&o),
            RunEvent::ToolResult {
                exit_code: Some(143),
                omitted_bytes: Some(10),
                ..
            }
        ));
    }

    #[test]
    fn a_synced_command_carries_its_sync_report_even_when_stopped() {
        let sync = json!({"copied_in": 2, "removed_in": 0, "brought_back": 1,
            "brought_back_bytes": 5, "deleted": 0,
            "refused": [{"path": ".git/hooks/pre-commit", "why": "protected path"}],
            "incomplete": "stopped"});
        let RunEvent::ToolResult { sync: got, .. } =
            result_event(&outcome("execute", json!({"exit_code": 0, "sync": sync})))
        else {
            panic!("not a tool result")
        };
        let got = got.expect("a sync report");
        assert_eq!((got.copied_in, got.brought_back), (2, 1));
        assert_eq!(got.refused.len(), 1);
        let mut o = outcome("execute", Value::Null);
        o.error = Some(
            crate::contract::ToolError::execution("cancelled", "stopped")
                .with_details(json!({"client": {"exit_code": null, "sync": sync}})),
        );
        let RunEvent::ToolResult { sync: got, .. } = result_event(&o) else {
            panic!("not a tool result")
        };
        assert!(got.is_some_and(|s| s.incomplete.is_some()));
        let RunEvent::ToolResult { sync: got, .. } =
            result_event(&outcome("mcp__evil__run", json!({"sync": sync})))
        else {
            panic!("not a tool result")
        };
        assert_eq!(got, None);
    }

    #[test]
    fn other_tools_have_no_exit_code_and_tool_search_names_what_it_activated() {
        let e = result_event(&outcome("read", json!({"exit_code": 5})));
        assert!(matches!(
            e,
            RunEvent::ToolResult {
                exit_code: None,
                omitted_bytes: None,
                ..
            }
        ));
        let e = result_event(&outcome(
            "tool_search",
            json!({"query": "q", "activated": ["a", "b"]}),
        ));
        let RunEvent::ToolResult { activated, .. } = e else {
            panic!("not a tool result")
        };
        assert_eq!(activated, vec!["a".to_string(), "b".to_string()]);
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
