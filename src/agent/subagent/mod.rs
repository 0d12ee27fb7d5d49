//! Subagents: the `agent` tool's child runs (`crate::tools::agent`), run by the same loop.
//!
//! `Agent::run` attaches a [`Children`] runner for each top-level run to the plane's
//! `SubagentDesk`; a child run gets none, so a child cannot start children (depth one, and the
//! `agent` tool is also left out of every child's tool set). A child:
//! - is stored as a run of its own linked to the parent run and the `agent` call
//!   (`Store::create_child_run`), titled with the call's `description`;
//! - starts with fresh context: the system prompt (plus the subagent note and its profile's text,
//!   [`shapes::ChildShape::system`]) and the task as its only user message;
//! - uses the parent's provider, model, options, step bound, confirm broker and person (so its calls are
//!   authorized exactly as the parent's would be: same settings, approval mode, rules, sandbox);
//! - has the tool set [`crate::tools::agent::task::child_tools`] gives (`App::child_shapes`),
//!   stored with the run (`runs.child_shape`) so that continuing it (`aibuddy run --continue`)
//!   and `runs show --next-request` shape it the same way;
//! - runs with at most settings `agents.max_concurrent` siblings at once (default 4, read by the
//!   `SubagentDesk`; several `agent` calls of one turn share a batch, being read-only);
//! - runs under the `agent` call's cancellation token: stopping the parent (or the call) stops
//!   the child's stream, its tool calls (commands' process trees included), its background
//!   processes and its compaction, and the call ends `cancelled`;
//! - emits its events to the parent's sink wrapped in `RunEvent::Subagent` (`events.rs`), and
//!   keeps the parent's tool watchdog armed with heartbeats on the call (the child's own
//!   watchdogs bound its steps and calls).

pub(crate) mod events;
// The app holds the subagents' tool sets, so they live below it (in discovery).
pub use crate::discovery::child_shapes as shapes;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::events::RunEventSink;
use super::{Agent, RunStatus};
use crate::contract::{Stage, ToolError};
use crate::discovery::Exposure;
use crate::events::{Event, EventSink};
use crate::tools::agent::task::child_tools;
use crate::tools::agent::{ChildAnswer, ChildRunner, ChildTask};
use shapes::ChildShape;

/// How often a running child re-arms the parent's tool watchdog.
const PARENT_HEARTBEAT: Duration = Duration::from_secs(5);

/// What the system prompt of every child gains.
const CHILD_NOTE: &str = "## Subagent\nYou are a subagent: another agent started you for the one \
task in the user message and sees only your final answer. Work on the task with your tools, then \
answer with everything the other agent needs (findings, file paths, what you changed); there is \
nobody to ask for clarification beyond the tools you have.";

/// A child run to start (built by [`Children`]).
pub(crate) struct ChildStart {
    pub task: ChildTask,
    pub parent_run_id: String,
    pub parent_call_id: String,
    pub shape: ChildShape,
    /// The parent's step bound (`--max-steps`), when it had one.
    pub max_steps: Option<u32>,
}

/// Starts the children of one top-level run.
pub(crate) struct Children {
    pub agent: Agent,
    pub parent_run_id: String,
    pub events: Arc<dyn RunEventSink>,
    /// The parent's `RunStart::max_steps`: a child has the same bound.
    pub max_steps: Option<u32>,
    /// Places for children running at once (settings `agents.max_concurrent`).
    pub slots: Arc<tokio::sync::Semaphore>,
}

impl Children {
    /// The tools the parent could call or search now (its narrowed set, activations included).
    fn parent_tools(&self) -> BTreeSet<String> {
        self.agent
            .app
            .run_toolset(&self.parent_run_id)
            .tools
            .into_iter()
            .filter(|t| t.exposure != Exposure::Absent)
            .map(|t| t.name)
            .collect()
    }
}

#[async_trait]
impl ChildRunner for Children {
    async fn run_child(
        &self,
        parent_call_id: &str,
        task: ChildTask,
        cancel: CancellationToken,
        call_events: Arc<dyn EventSink>,
    ) -> Result<ChildAnswer, ToolError> {
        let tools = child_tools(&self.parent_tools(), task.tools.as_ref());
        let mut system = CHILD_NOTE.to_string();
        if let Some(text) = &task.system {
            system.push_str("\n\n");
            system.push_str(text.trim_end());
        }
        let start = ChildStart {
            shape: ChildShape {
                tools: tools.clone(),
                system,
            },
            task,
            parent_run_id: self.parent_run_id.clone(),
            parent_call_id: parent_call_id.to_string(),
            max_steps: self.max_steps,
        };
        let sink: Arc<dyn RunEventSink> = Arc::new(events::ChildEvents {
            parent: self.events.clone(),
            parent_call_id: parent_call_id.to_string(),
        });
        // The parent's tool watchdog stops calls that show no sign of life; the child is alive
        // while it runs (its own watchdogs bound its steps and calls).
        let beat = {
            let (events, id, done) = (call_events, parent_call_id.to_string(), cancel.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = done.cancelled() => return,
                        _ = tokio::time::sleep(PARENT_HEARTBEAT) => {
                            events.emit(Event::Heartbeat { call_id: id.clone() });
                        }
                    }
                }
            })
        };
        // Read-only `agent` calls of one turn run together: at most a few children at once.
        let place = tokio::select! {
            p = self.slots.clone().acquire_owned() => p.ok(),
            _ = cancel.cancelled() => None,
        };
        let Some(_place) = place else {
            beat.abort();
            return Err(ToolError::execution(
                "cancelled",
                "the subagent was stopped before it started",
            ));
        };
        let outcome = self.agent.run_child(start, cancel.clone(), sink).await;
        beat.abort();
        let outcome = outcome.map_err(|e| {
            ToolError::new(
                e.stage(),
                "subagent_not_started",
                format!("the subagent could not start: {e}"),
            )
        })?;
        let details = serde_json::json!({"child_run_id": outcome.run_id});
        match outcome.status {
            RunStatus::Completed => Ok(ChildAnswer {
                answer: self.agent.final_answer(&outcome.run_id).await,
                run_id: outcome.run_id,
                steps: outcome.steps,
                tools: tools.into_iter().collect(),
                stop_reason: outcome.stop_reason,
            }),
            RunStatus::Cancelled => Err(ToolError::execution(
                "cancelled",
                format!("the subagent (run {}) was stopped", outcome.run_id),
            )
            .with_details(details)),
            RunStatus::MaxSteps => Err(ToolError::execution(
                "subagent_max_steps",
                format!(
                    "the subagent (run {}) reached its step limit before answering",
                    outcome.run_id
                ),
            )
            .with_details(details)),
            status => Err(ToolError::new(
                outcome.stage.unwrap_or(Stage::Execution),
                "subagent_failed",
                format!(
                    "the subagent (run {}) ended {}: {}",
                    outcome.run_id,
                    status.as_str(),
                    outcome.error.as_deref().unwrap_or("no reason given")
                ),
            )
            .with_details(details)),
        }
    }
}

/// The shape of a stored subagent run (`None` for a top-level run). A child whose stored shape
/// cannot be read gets no tools (fail closed) and the subagent note.
pub(crate) fn stored_shape(run: &aibuddy_store::RunRecord) -> Option<ChildShape> {
    run.parent_run_id.as_ref()?;
    let shape = run
        .child_shape
        .as_deref()
        .and_then(|s| serde_json::from_str::<ChildShape>(s).ok());
    Some(shape.unwrap_or_else(|| {
        tracing::warn!(run = %run.run_id, "the stored subagent shape is unreadable: no tools");
        ChildShape {
            tools: BTreeSet::new(),
            system: CHILD_NOTE.to_string(),
        }
    }))
}

impl Agent {
    /// The text of the run's last assistant message (empty when there is none).
    async fn final_answer(&self, run_id: &str) -> String {
        let Ok(store) = self.store() else {
            return String::new();
        };
        match store.conversation(run_id).await {
            Ok(conv) => conv
                .messages
                .iter()
                .rev()
                .find(|m| m.role == aibuddy_store::MessageRole::Assistant)
                .map(|m| crate::host::stored_messages::text_and_calls(m).0)
                .unwrap_or_default(),
            Err(e) => {
                tracing::warn!(run = %run_id, "the subagent's answer could not be read: {e}");
                String::new()
            }
        }
    }
}
