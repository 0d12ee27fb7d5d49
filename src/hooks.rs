//! Hooks: commands the person configures to run around tool calls and runs (settings `hooks`,
//! `docs/hooks.md`), following Claude Code's hook contract where it fits so hooks written for it
//! can be reused.
//!
//! - [`select`]: which entries match a tool (pure).
//! - [`input`]: the JSON a hook reads on stdin (pure; Claude Code's field names too).
//! - [`verdict`]: what an exit code and output mean (pure).
//! - [`process`]: running one hook (I/O): bounded, cancellable, its process group killed.
//! - [`confined`]: a project's hook run inside the sandbox, like `execute`.
//! - [`record`]: what a run leaves on its call ([`HookRun`]).
//!
//! The pipeline runs `pre_tool_call` hooks after Parameters and before Authorization (a block
//! ends the call at Authorization; `ask` makes the person confirm; `allow` changes nothing the
//! approval mode or a rule requires), and `post_tool_call` hooks after a call ran (a note joins
//! the model's text). The agent runs `run_start`, `run_end` and `waiting_for_person` hooks.
//! Which hooks exist is the settings' decision (`crate::settings`): the user file's always, a
//! project's only when the project is trusted.

pub mod confined;
pub mod input;
pub mod process;
pub mod record;
pub mod select;
pub mod verdict;

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use record::{HookOutcome, HookRun};
pub use verdict::PreDecision;

use crate::settings::{ExecSettings, HookEntry, HooksSettings};

/// What a run's hooks need to know.
#[derive(Clone, Copy)]
pub struct HookScope<'a> {
    pub hooks: &'a HooksSettings,
    pub exec: &'a ExecSettings,
    pub project: &'a Path,
    /// The data directory in use (hidden from a project's confined hooks).
    pub data_dir: &'a Path,
    /// The approval mode is `read-only` (a project's confined hooks get it too).
    pub read_only: bool,
    pub run_id: &'a str,
    /// The call's (or run's) token: stopping it kills a running hook.
    pub cancel: &'a CancellationToken,
}

impl HookScope<'_> {
    fn place(&self) -> process::Place<'_> {
        process::Place {
            project: self.project,
            data_dir: self.data_dir,
            exec: self.exec,
            read_only: self.read_only,
        }
    }
}

/// What the `pre_tool_call` hooks of one call decided together: the strongest decision (block >
/// ask > allow), with the reason of the hook that gave it.
#[derive(Debug, Clone)]
pub struct PreOutcome {
    pub decision: PreDecision,
    pub reason: Option<String>,
    pub runs: Vec<HookRun>,
}

fn record_of(event: &str, hook: &HookEntry, ran: process::Ran, r: verdict::Reading) -> HookRun {
    let run = HookRun {
        event: event.to_string(),
        level: hook.level,
        matcher: hook.matcher.clone(),
        command: hook.command.clone(),
        outcome: r.outcome,
        exit_code: match ran.exit {
            verdict::Exit::Code(c) => Some(c),
            _ => None,
        },
        duration_ms: ran.duration.as_millis() as u64,
        stdout: ran.stdout,
        stderr: ran.stderr,
        truncated: ran.truncated,
        decision: r.decision.as_str().map(str::to_string),
        reason: r.reason,
        note: r.note,
        problem: r.problem,
    };
    if let Some(problem) = &run.problem {
        tracing::warn!(event, level = ?run.level, "a hook failed (not blocking): {problem}");
    }
    run
}

/// Run the `pre_tool_call` hooks matching `tool`, in order, until one blocks.
pub async fn pre_tool_call(
    scope: HookScope<'_>,
    tool: &str,
    arguments: &Value,
    call_id: &str,
) -> PreOutcome {
    const EVENT: &str = "pre_tool_call";
    let mut out = PreOutcome {
        decision: PreDecision::None,
        reason: None,
        runs: Vec::new(),
    };
    let entries = select::for_tool(&scope.hooks.pre_tool_call, tool);
    if entries.is_empty() {
        return out;
    }
    let body = input::tool_call(
        EVENT,
        scope.run_id,
        scope.project,
        tool,
        arguments,
        call_id,
        None,
    );
    for hook in entries {
        let ran = process::run(hook, EVENT, &body, scope.place(), scope.cancel).await;
        let reading = verdict::pre(&ran.exit, &ran.stdout, &ran.stderr);
        if reading.decision > out.decision {
            out.decision = reading.decision;
            out.reason = reading.reason.clone();
        }
        let cancelled = reading.outcome == HookOutcome::Cancelled;
        out.runs.push(record_of(EVENT, hook, ran, reading));
        if out.decision == PreDecision::Block || cancelled {
            break;
        }
    }
    out
}

/// Run the `post_tool_call` hooks matching `tool`; their notes, in order.
pub async fn post_tool_call(
    scope: HookScope<'_>,
    tool: &str,
    arguments: &Value,
    call_id: &str,
    result: (&str, &str),
) -> (Vec<String>, Vec<HookRun>) {
    const EVENT: &str = "post_tool_call";
    let entries = select::for_tool(&scope.hooks.post_tool_call, tool);
    let mut notes = Vec::new();
    let mut runs = Vec::new();
    if entries.is_empty() {
        return (notes, runs);
    }
    let body = input::tool_call(
        EVENT,
        scope.run_id,
        scope.project,
        tool,
        arguments,
        call_id,
        Some(result),
    );
    for hook in entries {
        let ran = process::run(hook, EVENT, &body, scope.place(), scope.cancel).await;
        let reading = verdict::post(&ran.exit, &ran.stdout, &ran.stderr);
        notes.extend(reading.note.clone());
        runs.push(record_of(EVENT, hook, ran, reading));
    }
    (notes, runs)
}

/// Run every hook of a run event (`run_start`, `run_end`, `waiting_for_person`) with `extra`
/// facts added to the input.
pub async fn run_event(scope: HookScope<'_>, event: &str, extra: Value) -> Vec<HookRun> {
    let entries = scope.hooks.of(event);
    let mut runs = Vec::new();
    if entries.is_empty() {
        return runs;
    }
    let body = input::run_event(event, scope.run_id, scope.project, extra);
    for hook in entries {
        let ran = process::run(hook, event, &body, scope.place(), scope.cancel).await;
        let reading = verdict::plain(&ran.exit, &ran.stderr);
        runs.push(record_of(event, hook, ran, reading));
    }
    runs
}

/// The store's row of one hook run.
pub fn store_row(run_id: &str, call_id: Option<&str>, run: &HookRun) -> aibuddy_store::HookRunRow {
    aibuddy_store::HookRunRow {
        run_id: run_id.to_string(),
        tool_call_id: call_id.map(str::to_string),
        event: run.event.clone(),
        outcome: serde_json::to_value(run.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        exit_code: run.exit_code.map(i64::from),
        duration_ms: i64::try_from(run.duration_ms).unwrap_or(i64::MAX),
        record: serde_json::to_value(run).unwrap_or(Value::Null),
        recorded_at: aibuddy_store::now_ms(),
    }
}

/// The model's text with the post hooks' notes added.
pub fn with_notes(model: &str, notes: &[String]) -> String {
    let mut out = model.to_string();
    for n in notes {
        out.push_str("\n\n[hook note] ");
        out.push_str(n);
    }
    out
}
