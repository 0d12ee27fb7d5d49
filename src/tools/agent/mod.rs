//! `agent`: the model delegates a task to a child run (a subagent), as Claude Code's `Agent`
//! (formerly `Task`) tool and Codex's spawned agents do.
//!
//! Arguments (the schema below is the contract): `description` (short, shown on the card and as
//! the child run's title), `prompt` (the task, the child's only user message), optional `tools`
//! (tool names the child is narrowed to) and optional `profile` (a named profile of settings
//! `agents.profiles`, `crate::settings::AgentProfile`: its `tools` narrow too, its `prompt` joins
//! the child's system prompt).
//!
//! The child is a run of its own (stored with its parent run and this call's id, store schema
//! 12), with fresh context (system prompt + task), the parent's provider, model, sandbox,
//! confinement and approval rules (its calls go through the same pipeline and brokers), and a tool
//! set that is at most the parent's: the parent's tools minus `agent` (so the depth is one),
//! intersected with `tools` and the profile's. Its events reach the parent's run events wrapped
//! in `RunEvent::Subagent` with this call's id. The child's final answer is this call's result
//! (bounded to [`MODEL_MAX_CHARS`]); a child that ends any other way makes the call fail with its
//! stage (`cancelled` when stopped). The call's cancellation token is the child's: stopping the
//! parent (or this call) stops the child's model stream, its commands and its compaction.
//!
//! The call itself is read-only (never confirmed, takes no checkpoint lock): every call of the
//! child is authorized on its own.

pub mod desk;
pub mod task;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

pub use desk::{ChildAnswer, ChildRunner, ChildTask, SubagentDesk, SubagentGuard};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::registry::{
    CallContext, Compaction, Prepared, RawOutput, Risk, Source, ToolConfig, ToolConfigMeta,
    ToolDef, ToolHandler,
};

pub const KEY: &str = "agent";
pub const TOOL_NAME: &str = "agent";
/// Longest `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Longest `prompt`.
pub const MAX_PROMPT_CHARS: usize = 100_000;
/// Most characters of the child's answer that enter the parent model's context (head and tail
/// are kept; the whole answer stays in the child run and this call's stored output).
pub const MODEL_MAX_CHARS: usize = 30_000;

/// The config; starts children through the runners attached to `desk`.
pub struct AgentConfig {
    desk: Arc<SubagentDesk>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self::new(Arc::new(SubagentDesk::default()))
    }
}

impl AgentConfig {
    pub fn new(desk: Arc<SubagentDesk>) -> Self {
        Self { desk }
    }
}

pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(
        KEY,
        "Subagents",
        "agents",
        Risk::ReadOnly,
        false,
        &[TOOL_NAME],
    )
}

/// The tool's input schema.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS,
                "description": "A short (3-8 words) description of the task"},
            "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_PROMPT_CHARS,
                "description": "The task for the subagent, self-contained: it sees only this, not your conversation. Say what to return."},
            "tools": {"type": "array", "maxItems": 500, "uniqueItems": true,
                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                "description": "Narrow the subagent to these of your tools (default: all of yours but `agent`)"},
            "profile": {"type": "string", "minLength": 1, "maxLength": 64,
                "description": "A named subagent profile from the person's settings (its tools and instructions)"}
        },
        "required": ["description", "prompt"],
        "additionalProperties": false
    })
}

impl ToolConfig for AgentConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }

    /// The profiles of settings `agents.profiles`, when there are any.
    fn instructions(&self) -> Option<String> {
        profiles_text(&self.desk.profiles())
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let spec = define_tool(
            TOOL_NAME,
            "Start a subagent: a separate agent run with its own fresh context that works on one \
task with your tools (or fewer) and returns its final answer as this tool's result. Use it for \
self-contained work whose intermediate steps you do not need to see (a search across many files, \
an investigation, an independent change); give it everything it needs in `prompt`, since it does \
not see your conversation. Subagents cannot start subagents.",
            input_schema(),
        )?;
        Ok(vec![ToolDef {
            spec,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(AgentHandler {
                desk: self.desk.clone(),
            }),
        }])
    }
}

struct AgentHandler {
    desk: Arc<SubagentDesk>,
}

#[async_trait]
impl ToolHandler for AgentHandler {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        let task = task::child_task(args, &ctx.services.settings.agents.profiles)?;
        Ok(Prepared {
            target: task.description.clone(),
            consequence: "starts a subagent run; each of its calls is authorized on its own"
                .to_string(),
            model_says: Some(task.description),
            inside_project: true,
            ..Prepared::default()
        })
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let task = task::child_task(args, &ctx.services.settings.agents.profiles)?;
        let Some(runner) = self.desk.runner(&ctx.run_id) else {
            return Err(ToolError::execution(
                "no_parent_run",
                "the agent tool starts subagents only inside an agent run, and a subagent cannot \
start another",
            ));
        };
        let profile = task.profile.clone();
        let description = task.description.clone();
        let a = runner
            .run_child(&ctx.call_id, task, ctx.cancel.clone(), ctx.events.clone())
            .await?;
        Ok(RawOutput::json(json!({
            "description": description,
            "profile": profile,
            "child_run_id": a.run_id,
            "steps": a.steps,
            "tools": a.tools,
            "stop_reason": a.stop_reason,
            "answer": a.answer,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_text(&raw.value)
    }
}

/// Longest profile description the instructions quote.
const PROFILE_LINE_CHARS: usize = 200;

/// The instructions naming the profiles `(name, description, from the project)`, or None. Pure.
pub fn profiles_text(profiles: &[(String, String, bool)]) -> Option<String> {
    if profiles.is_empty() {
        return None;
    }
    let mut s = String::from("Subagent profiles (`agent` argument `profile`):");
    for (name, description, from_project) in profiles {
        let d: String = description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(PROFILE_LINE_CHARS)
            .collect();
        s.push_str(&format!("\n- `{name}`: {d}"));
        if *from_project {
            s.push_str(" (defined by the project)");
        }
    }
    Some(s)
}

/// The parent model's text: the child's answer, bounded. Pure.
pub fn model_text(raw: &Value) -> String {
    let answer = raw["answer"].as_str().unwrap_or_default();
    let run = raw["child_run_id"].as_str().unwrap_or_default();
    if answer.trim().is_empty() {
        return format!("The subagent (run {run}) finished without a final answer.");
    }
    let total = answer.chars().count();
    if total <= MODEL_MAX_CHARS {
        return answer.to_string();
    }
    let head: String = answer.chars().take(MODEL_MAX_CHARS * 2 / 3).collect();
    let tail_n = MODEL_MAX_CHARS / 3;
    let tail: String = answer.chars().skip(total - tail_n).collect();
    format!(
        "{head}\n[... {} characters of the subagent's answer omitted; the whole answer is stored in its run {run}]\n{tail}",
        total - head.chars().count() - tail_n
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_the_model_text_bounded() {
        assert_eq!(
            model_text(&json!({"answer": "found it", "child_run_id": "r2"})),
            "found it"
        );
        assert!(model_text(&json!({"answer": " ", "child_run_id": "r2"})).contains("r2"));
        let long = "x".repeat(MODEL_MAX_CHARS * 2);
        let m = model_text(&json!({"answer": long, "child_run_id": "r2"}));
        assert!(m.chars().count() < MODEL_MAX_CHARS + 200);
        assert!(m.contains("omitted") && m.contains("r2"));
    }

    #[test]
    fn the_instructions_name_the_profiles_on_one_line_each() {
        assert_eq!(profiles_text(&[]), None);
        let t = profiles_text(&[
            ("reviewer".into(), "Reads\ncode".into(), false),
            ("lint".into(), String::new(), true),
        ])
        .unwrap();
        assert_eq!(
            t,
            "Subagent profiles (`agent` argument `profile`):\n- `reviewer`: Reads code\n- `lint`:  (defined by the project)"
        );
    }

    #[test]
    fn the_schema_is_a_valid_read_only_core_tool() {
        let defs = AgentConfig::default().tools().unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name(), TOOL_NAME);
        assert_eq!(defs[0].risk, Risk::ReadOnly);
    }
}
