//! What a hook's exit and output mean (pure), following Claude Code's contract where it fits:
//!
//! - exit 0: success. Stdout that starts with `{` is read as JSON; other stdout is only kept.
//! - exit 2: for `pre_tool_call`, blocks the call, stderr is the reason the model reads; for
//!   `post_tool_call`, stderr becomes the note added to the model's text.
//! - any other exit, a signal, a timeout, stdout JSON that does not parse, or an unknown decision:
//!   the hook failed; recorded and reported, and the call goes on (Claude Code's "non-blocking
//!   error"). A `pre_tool_call` hook that times out therefore does not block.
//!
//! JSON of `pre_tool_call`: `{"decision": "block" | "ask" | "allow", "reason": "..."}`; also
//! Claude Code's `hookSpecificOutput.permissionDecision` (`allow` | `deny` | `ask`) with
//! `permissionDecisionReason`, its older `decision` values `approve` / `deny`, and
//! `"continue": false` (with `stopReason`) as a block. `allow` never skips a confirmation the
//! approval mode or a rule requires. JSON of `post_tool_call`: `{"note": "..."}`, Claude Code's
//! `hookSpecificOutput.additionalContext`, or `{"decision": "block", "reason": "..."}`: the text
//! is added to the model's text as a note.

use serde_json::Value;

use super::record::HookOutcome;

/// How the hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by a signal (not by us).
    Signal(i32),
    TimedOut {
        after_secs: u64,
    },
    Cancelled,
    /// It could not be started.
    NotStarted(String),
}

/// What a `pre_tool_call` hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PreDecision {
    /// No decision (no JSON, or none given, or it failed).
    None,
    Allow,
    Ask,
    Block,
}

impl PreDecision {
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            PreDecision::None => None,
            PreDecision::Allow => Some("allow"),
            PreDecision::Ask => Some("ask"),
            PreDecision::Block => Some("block"),
        }
    }
}

/// The meaning of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub outcome: HookOutcome,
    pub decision: PreDecision,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub problem: Option<String>,
}

impl Reading {
    fn failed(problem: String) -> Reading {
        Reading {
            outcome: HookOutcome::Failed,
            decision: PreDecision::None,
            reason: None,
            note: None,
            problem: Some(problem),
        }
    }

    fn ok() -> Reading {
        Reading {
            outcome: HookOutcome::Ok,
            decision: PreDecision::None,
            reason: None,
            note: None,
            problem: None,
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn first_line(s: &str) -> String {
    s.trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The common part: everything but exit 0 and exit 2.
fn abnormal(exit: &Exit, stderr: &str) -> Option<Reading> {
    match exit {
        Exit::Code(0) | Exit::Code(2) => None,
        Exit::Code(c) => Some(Reading::failed(match first_line(stderr) {
            l if l.is_empty() => format!("exited with {c}"),
            l => format!("exited with {c}: {l}"),
        })),
        Exit::Signal(s) => Some(Reading::failed(format!("killed by signal {s}"))),
        Exit::TimedOut { after_secs } => Some(Reading {
            outcome: HookOutcome::TimedOut,
            problem: Some(format!(
                "timed out after {after_secs} s; its process group was killed"
            )),
            ..Reading::ok()
        }),
        Exit::Cancelled => Some(Reading {
            outcome: HookOutcome::Cancelled,
            problem: Some("stopped with the run; its process group was killed".into()),
            ..Reading::ok()
        }),
        Exit::NotStarted(why) => Some(Reading::failed(format!("could not be started: {why}"))),
    }
}

/// Stdout as JSON when it looks like JSON (`Ok(None)`: plain text, only kept).
fn json_of(stdout: &str) -> Result<Option<Value>, String> {
    let t = stdout.trim();
    if !t.starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str(t)
        .map(Some)
        .map_err(|e| format!("stdout is not valid JSON ({e}); ignored"))
}

/// A `pre_tool_call` run.
pub fn pre(exit: &Exit, stdout: &str, stderr: &str) -> Reading {
    if let Some(r) = abnormal(exit, stderr) {
        return r;
    }
    if *exit == Exit::Code(2) {
        return Reading {
            outcome: HookOutcome::Blocked,
            decision: PreDecision::Block,
            reason: Some(non_empty(stderr).unwrap_or_else(|| "a hook blocked the call".into())),
            ..Reading::ok()
        };
    }
    let v = match json_of(stdout) {
        Ok(Some(v)) => v,
        Ok(None) => return Reading::ok(),
        Err(problem) => return Reading::failed(problem),
    };
    let specific = str_at(&v, "/hookSpecificOutput/permissionDecision");
    let given = specific.or_else(|| str_at(&v, "/decision"));
    let decision = match given {
        None if v.get("continue") == Some(&Value::Bool(false)) => PreDecision::Block,
        None => PreDecision::None,
        Some("block" | "deny") => PreDecision::Block,
        Some("ask") => PreDecision::Ask,
        Some("allow" | "approve") => PreDecision::Allow,
        Some(other) => {
            return Reading::failed(format!(
                "unknown decision `{}` (block, ask or allow); ignored",
                first_line(other)
            ));
        }
    };
    let reason = [
        "/hookSpecificOutput/permissionDecisionReason",
        "/reason",
        "/stopReason",
    ]
    .iter()
    .find_map(|p| str_at(&v, p).and_then(non_empty));
    Reading {
        outcome: if decision == PreDecision::Block {
            HookOutcome::Blocked
        } else {
            HookOutcome::Ok
        },
        reason: reason.or_else(|| {
            (decision == PreDecision::Block).then(|| "a hook blocked the call".to_string())
        }),
        decision,
        ..Reading::ok()
    }
}

/// A `post_tool_call` run: its note for the model, if any.
pub fn post(exit: &Exit, stdout: &str, stderr: &str) -> Reading {
    if let Some(r) = abnormal(exit, stderr) {
        return r;
    }
    if *exit == Exit::Code(2) {
        return Reading {
            note: non_empty(stderr),
            ..Reading::ok()
        };
    }
    let v = match json_of(stdout) {
        Ok(Some(v)) => v,
        Ok(None) => return Reading::ok(),
        Err(problem) => return Reading::failed(problem),
    };
    let note = ["/note", "/hookSpecificOutput/additionalContext", "/reason"]
        .iter()
        .find_map(|p| str_at(&v, p).and_then(non_empty));
    Reading {
        note,
        ..Reading::ok()
    }
}

/// A run event's run (`run_start`, `run_end`, `waiting_for_person`): only whether it worked.
pub fn plain(exit: &Exit, stderr: &str) -> Reading {
    abnormal(exit, stderr).unwrap_or_else(|| match exit {
        Exit::Code(2) => Reading::failed(match first_line(stderr) {
            l if l.is_empty() => "exited with 2".to_string(),
            l => format!("exited with 2: {l}"),
        }),
        _ => Reading::ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_2_blocks_with_stderr_as_the_reason() {
        let r = pre(&Exit::Code(2), "", "no rm -rf here\n");
        assert_eq!(r.outcome, HookOutcome::Blocked);
        assert_eq!(r.decision, PreDecision::Block);
        assert_eq!(r.reason.as_deref(), Some("no rm -rf here"));
        let r = pre(&Exit::Code(2), "", "");
        assert_eq!(r.reason.as_deref(), Some("a hook blocked the call"));
    }

    #[test]
    fn our_json_and_claude_codes() {
        let r = pre(
            &Exit::Code(0),
            r#"{"decision":"ask","reason":"prod db"}"#,
            "",
        );
        assert_eq!(
            (r.decision, r.reason.as_deref()),
            (PreDecision::Ask, Some("prod db"))
        );
        let r = pre(&Exit::Code(0), r#"{"decision":"allow"}"#, "");
        assert_eq!(
            (r.decision, r.outcome),
            (PreDecision::Allow, HookOutcome::Ok)
        );
        let r = pre(
            &Exit::Code(0),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"nope"}}"#,
            "",
        );
        assert_eq!(
            (r.decision, r.reason.as_deref()),
            (PreDecision::Block, Some("nope"))
        );
        let r = pre(&Exit::Code(0), r#"{"decision":"approve"}"#, "");
        assert_eq!(r.decision, PreDecision::Allow);
        let r = pre(
            &Exit::Code(0),
            r#"{"continue":false,"stopReason":"halt"}"#,
            "",
        );
        assert_eq!(
            (r.decision, r.reason.as_deref()),
            (PreDecision::Block, Some("halt"))
        );
        let r = pre(&Exit::Code(0), r#"{"decision":"block"}"#, "");
        assert_eq!(r.reason.as_deref(), Some("a hook blocked the call"));
    }

    #[test]
    fn failures_never_block() {
        for (exit, out) in [
            (Exit::Code(1), ""),
            (Exit::Code(0), "{not json"),
            (Exit::Code(0), r#"{"decision":"maybe"}"#),
            (Exit::Signal(9), ""),
            (Exit::NotStarted("no sh".into()), ""),
        ] {
            let r = pre(&exit, out, "boom");
            assert_eq!(r.outcome, HookOutcome::Failed, "{exit:?} {out}");
            assert_eq!(r.decision, PreDecision::None);
            assert!(r.problem.is_some());
        }
        let r = pre(&Exit::TimedOut { after_secs: 3 }, "", "");
        assert_eq!(
            (r.outcome, r.decision),
            (HookOutcome::TimedOut, PreDecision::None)
        );
        assert!(r.problem.unwrap().contains("timed out after 3 s"));
        let r = pre(&Exit::Code(0), "plain words", "");
        assert_eq!(
            (r.outcome, r.decision),
            (HookOutcome::Ok, PreDecision::None)
        );
    }

    #[test]
    fn post_notes() {
        assert_eq!(
            post(&Exit::Code(0), r#"{"note":"formatted"}"#, "")
                .note
                .as_deref(),
            Some("formatted")
        );
        assert_eq!(
            post(
                &Exit::Code(0),
                r#"{"hookSpecificOutput":{"additionalContext":"lint: 2 warnings"}}"#,
                ""
            )
            .note
            .as_deref(),
            Some("lint: 2 warnings")
        );
        assert_eq!(
            post(&Exit::Code(2), "", "check it\n").note.as_deref(),
            Some("check it")
        );
        assert_eq!(post(&Exit::Code(0), "formatted 3 files", "").note, None);
        assert_eq!(post(&Exit::Code(1), "", "x").outcome, HookOutcome::Failed);
    }

    #[test]
    fn plain_events() {
        assert_eq!(plain(&Exit::Code(0), "").outcome, HookOutcome::Ok);
        assert_eq!(plain(&Exit::Code(2), "").outcome, HookOutcome::Failed);
    }
}
