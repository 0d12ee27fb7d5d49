//! Stored runs as the UI shows them: the list (`list_runs`) and one conversation (`show_run`),
//! shaped from the store's records (pure; the store queries are the CLI's `aibuddy runs`).
//! Everything here came from a model, a tool or a project: the UI renders it as text.

use aibuddy::contract::Stage;
use aibuddy_store::{
    CallStatus, CompactionState, Conversation, MessageRecord, MessageRole, RunListRow, RunStatus,
    Usage,
};
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

/// Rows `list_runs` returns when the UI gives no limit.
pub const DEFAULT_RUNS_LIMIT: usize = 50;
/// The most rows one `list_runs` returns.
pub const MAX_RUNS_LIMIT: usize = 200;

/// One run in the list, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunSummary {
    pub run_id: String,
    pub title: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub status: RunStatus,
    /// RFC 3339 UTC with milliseconds.
    pub started_at: String,
    pub steps: i64,
    pub tool_calls: i64,
    /// A subagent run: the run whose `agent` call started it, and that call's id.
    pub parent_run_id: Option<String>,
    pub parent_call_id: Option<String>,
}

impl From<RunListRow> for RunSummary {
    fn from(r: RunListRow) -> Self {
        Self {
            run_id: r.run_id,
            title: r.title,
            provider: r.provider,
            model: r.model,
            status: r.status,
            started_at: r.started_at,
            steps: r.steps,
            tool_calls: r.tool_calls,
            parent_run_id: r.parent_run_id,
            parent_call_id: r.parent_call_id,
        }
    }
}

/// A tool call the model asked for in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunToolCall {
    pub tool_call_id: String,
    pub tool: String,
    /// The arguments as the model sent them.
    #[ts(type = "unknown")]
    pub input: Value,
}

/// The stored result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunToolResult {
    pub tool_call_id: String,
    pub tool: String,
    pub status: CallStatus,
    /// The lifecycle stage of a failure (`Execution`, ...).
    pub stage: Option<Stage>,
    pub error_message: Option<String>,
    /// The exact text the model sees (the compacted form once precompaction replaced it).
    pub model: Option<String>,
    /// Precompaction replaced the model text.
    pub compacted: bool,
    /// The person's hooks that ran for the call (`pre_tool_call`, `post_tool_call`), in order.
    pub hooks: Vec<aibuddy::hooks::HookRun>,
    /// Where an `execute` call ran when it was not this machine (a container), as the live
    /// card's `tool_result` names it (the core's `call_sandbox`); absent for a local run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<String>,
    /// A container's project sync around an `execute` call, as the live card's `tool_result`
    /// carries it (the core's `call_sync`); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sync: Option<aibuddy::tools::execute::SyncView>,
}

/// One stored message: `user` and `assistant` carry text (and the assistant's tool calls), `tool`
/// carries the result of one call.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunMessage {
    /// 1-based order within the run.
    pub seq: i64,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text blocks, joined.
    pub text: String,
    pub tool_calls: Vec<RunToolCall>,
    pub result: Option<RunToolResult>,
    pub usage: Option<Usage>,
}

/// One run with its stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunDetail {
    pub run_id: String,
    pub title: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `native` or `active_tools`.
    pub presentation: Option<String>,
    pub status: Option<RunStatus>,
    /// The failure stage of an `error` end.
    pub stage: Option<Stage>,
    pub error_message: Option<String>,
    /// Why the last answer is not a finished one (`max_tokens`, `refusal`, `pause_turn`, or the
    /// provider's word); null when the model finished normally.
    pub stop_reason: Option<String>,
    pub started_at: String,
    pub finished_at_ms: Option<i64>,
    pub usage: Usage,
    /// The context meter's numbers as a continued run would show them first (the last step's
    /// usage against the window of the route it continues on); null when no usage can be trusted
    /// or the route cannot be resolved.
    pub meter: Option<aibuddy::agent::events::RunEvent>,
    pub steps: i64,
    pub tool_calls: i64,
    /// A subagent run: the run whose `agent` call started it, and that call's id.
    pub parent_run_id: Option<String>,
    pub parent_call_id: Option<String>,
    /// The subagent runs this run's `agent` calls started, oldest first (`show_run` fills it).
    pub children: Vec<ChildRunView>,
    pub messages: Vec<RunMessage>,
}

/// A subagent run of a shown run: its id, the `agent` call that started it, how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ChildRunView {
    pub run_id: String,
    pub parent_call_id: Option<String>,
    pub status: Option<RunStatus>,
}

fn message_view(m: &MessageRecord) -> RunMessage {
    if m.role == MessageRole::Tool {
        let result = m.result.as_ref().map(|r| RunToolResult {
            tool_call_id: m.tool_call_id.clone().unwrap_or_default(),
            tool: r.tool.clone(),
            status: r.status,
            stage: r.stage,
            error_message: r.error_message.clone(),
            model: r.model_projection.clone(),
            compacted: r.compaction_state == CompactionState::Compacted,
            hooks: Vec::new(),
            sandbox: aibuddy::tools::execute::stored_call_sandbox(
                &r.tool,
                r.confinement_detail.as_deref(),
            ),
            sync: aibuddy::tools::execute::stored_call_sync(&r.tool, r.sync.as_deref()),
        });
        return RunMessage {
            seq: m.seq,
            role: m.role.as_str().to_string(),
            text: String::new(),
            tool_calls: Vec::new(),
            result,
            usage: m.usage,
        };
    }
    let (text, calls) = aibuddy::host::stored_messages::text_and_calls(m);
    let tool_calls = calls
        .into_iter()
        .map(|c| RunToolCall {
            tool_call_id: c.tool_call_id,
            tool: c.tool,
            input: c.input,
        })
        .collect();
    RunMessage {
        seq: m.seq,
        role: m.role.as_str().to_string(),
        text,
        tool_calls,
        result: None,
        usage: m.usage,
    }
}

impl RunDetail {
    /// Put each stored hook run on the result of its call (run events' hooks have no call).
    pub fn attach_hooks(&mut self, rows: &[aibuddy_store::HookRunRow]) {
        let run_id = self.run_id.clone();
        for result in self.messages.iter_mut().filter_map(|m| m.result.as_mut()) {
            let scoped = aibuddy_store::scoped_call_id(&run_id, &result.tool_call_id);
            result.hooks = rows
                .iter()
                .filter(|h| {
                    h.tool_call_id
                        .as_deref()
                        .is_some_and(|id| id == result.tool_call_id || id == scoped)
                })
                .filter_map(|h| serde_json::from_value(h.record.clone()).ok())
                .collect();
        }
    }
}

impl From<&Conversation> for RunDetail {
    fn from(c: &Conversation) -> Self {
        let r = &c.run;
        Self {
            run_id: r.run_id.clone(),
            title: r.title.clone(),
            provider: r.provider.clone(),
            model: r.model.clone(),
            presentation: r.presentation.clone(),
            status: r.status,
            stage: r.stage,
            error_message: r.error_message.clone(),
            stop_reason: r.stop_reason.clone(),
            started_at: r.started_at.clone(),
            finished_at_ms: r.finished_at_ms,
            usage: r.usage,
            meter: None,
            steps: r.steps,
            tool_calls: r.tool_calls,
            parent_run_id: r.parent_run_id.clone(),
            parent_call_id: r.parent_call_id.clone(),
            children: Vec::new(),
            messages: c.messages.iter().map(message_view).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail_with_result(call_id: &str) -> RunDetail {
        RunDetail {
            run_id: "r1".into(),
            title: None,
            provider: None,
            model: None,
            presentation: None,
            status: None,
            stage: None,
            error_message: None,
            stop_reason: None,
            started_at: String::new(),
            finished_at_ms: None,
            usage: Usage::default(),
            meter: None,
            steps: 0,
            tool_calls: 0,
            parent_run_id: None,
            parent_call_id: None,
            children: Vec::new(),
            messages: vec![RunMessage {
                seq: 1,
                role: "tool".into(),
                text: String::new(),
                tool_calls: Vec::new(),
                result: Some(RunToolResult {
                    tool_call_id: call_id.into(),
                    tool: "execute".into(),
                    status: CallStatus::Rejected,
                    stage: Some(Stage::Authorization),
                    error_message: None,
                    model: None,
                    compacted: false,
                    hooks: Vec::new(),
                    sandbox: None,
                    sync: None,
                }),
                usage: None,
            }],
        }
    }

    fn row(call: Option<&str>, command: &str) -> aibuddy_store::HookRunRow {
        aibuddy_store::HookRunRow {
            run_id: "r1".into(),
            tool_call_id: call.map(str::to_string),
            event: "pre_tool_call".into(),
            outcome: "blocked".into(),
            exit_code: Some(2),
            duration_ms: 3,
            record: serde_json::json!({
                "event": "pre_tool_call", "level": "user", "matcher": "*", "command": command,
                "outcome": "blocked", "exit_code": 2, "duration_ms": 3, "stdout": "",
                "stderr": "no", "truncated": false, "decision": "block", "reason": "no",
                "note": null, "problem": null
            }),
            recorded_at: 0,
        }
    }

    #[test]
    fn stored_hook_runs_land_on_their_calls_result() {
        let mut d = detail_with_result("toolu_1");
        d.attach_hooks(&[
            row(Some("r1:toolu_1"), "guard"),
            row(Some("r1:other"), "elsewhere"),
            row(None, "run_end"),
        ]);
        let hooks = &d.messages[0].result.as_ref().unwrap().hooks;
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].command, "guard");
    }
}
