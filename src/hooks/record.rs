//! What one hook run leaves behind: kept with its call (or its run, for run events) in the store,
//! shown on the call's card and by `aibuddy show --json` (`hooks`). Every string is the hook's own
//! output or the person's command: untrusted for a terminal (print through
//! `aibuddy_common::term`), and bounded ([`MAX_KEPT_BYTES`] each).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::settings::HookLevel;

/// Bytes of each of stdout and stderr kept on the record (and read for a decision).
pub const MAX_KEPT_BYTES: usize = 16 * 1024;

/// How a hook run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum HookOutcome {
    /// Exit 0 (its JSON, if any, understood).
    Ok,
    /// It blocked the call (exit 2, or `decision: block`).
    Blocked,
    /// It failed without blocking: another exit code, a signal, unreadable JSON, not startable.
    Failed,
    /// It ran past its `timeout_secs`; its process group was killed. Does not block.
    TimedOut,
    /// The run (or call) was stopped while it ran; its process group was killed.
    Cancelled,
}

/// One hook run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HookRun {
    /// `pre_tool_call`, `post_tool_call`, `run_start`, `run_end` or `waiting_for_person`.
    pub event: String,
    pub level: HookLevel,
    /// The entry's `match`.
    pub matcher: String,
    pub command: String,
    pub outcome: HookOutcome,
    /// The exit code; `null` when killed by a signal, timed out or never started.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Its stdout and stderr, each cut at [`MAX_KEPT_BYTES`] (lossy UTF-8).
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut.
    pub truncated: bool,
    /// The decision it gave (`block`, `ask`, `allow`), for `pre_tool_call`.
    pub decision: Option<String>,
    /// Its reason for the decision (the model sees it for `block`; the person for `ask`).
    pub reason: Option<String>,
    /// The note a `post_tool_call` hook added to the model's text.
    pub note: Option<String>,
    /// Why it counts as failed (`timed out after 60 s`, `stdout is not valid JSON: ...`).
    pub problem: Option<String>,
}
