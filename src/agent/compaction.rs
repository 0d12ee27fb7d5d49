//! Conversation compaction decisions, pure (no I/O; the loop reads the store and calls these).
//!
//! - [`estimate_next_tokens`]: how large the next request is, from the provider's reported usage
//!   of the last request plus an estimate of what was appended since.
//! - [`should_compact`]: whether that passes the threshold share of the context window.
//! - [`cut_point`]: which stored messages one summary replaces: from the first message of the run
//!   (so the new summary contains, and supersedes, any earlier one) up to a turn boundary, keeping
//!   the most recent turns verbatim. A tool call and its result are never separated.
//!
//! A *turn* starts at a user message or at an assistant message (a model step); the tool results
//! answering a step belong to that step's turn.

use aibuddy_store::{MessageRole, SummaryRecord};

/// Bytes per token of the estimate for text the provider has not counted yet. Real tokenizers
/// give about 4 bytes per token on English prose and about 3 on JSON and code: 3 makes the
/// estimate err towards compacting early, never late.
pub const BYTES_PER_TOKEN: u64 = 3;

/// What the estimate knows of the last request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LastUsage {
    /// Input tokens of the request that produced the last assistant message (cache reads and
    /// writes included: they are part of the prompt).
    pub input_tokens: u64,
    /// Tokens of that assistant message (now part of the context).
    pub output_tokens: u64,
}

/// The prompt size a stored usage reports. Anthropic counts cache reads and writes apart from
/// `input_tokens`; the OpenAI formats include cached tokens in `input_tokens` (its
/// `cached_tokens` is a part of it, not an addition).
pub fn prompt_tokens(
    provider_kind: Option<&str>,
    input: u64,
    cache_read: u64,
    cache_write: u64,
) -> u64 {
    match provider_kind {
        Some("anthropic") => input.saturating_add(cache_read).saturating_add(cache_write),
        _ => input,
    }
}

/// Estimated tokens of the next request.
///
/// With the provider's usage of the last request (`last`): its input plus its output (the
/// assistant message now in context) plus `appended_bytes / BYTES_PER_TOKEN` for what was appended
/// after it (tool results, user text). Without usage (first step, a provider that reports none,
/// or a summary written after the last step, which makes that usage stale): the whole request
/// body, `body_bytes / BYTES_PER_TOKEN`.
pub fn estimate_next_tokens(last: Option<LastUsage>, appended_bytes: u64, body_bytes: u64) -> u64 {
    match last {
        Some(u) => u
            .input_tokens
            .saturating_add(u.output_tokens)
            .saturating_add(appended_bytes.div_ceil(BYTES_PER_TOKEN)),
        None => body_bytes.div_ceil(BYTES_PER_TOKEN),
    }
}

/// Whether a request of `estimated` tokens passes `threshold` (a share in (0, 1]) of `window`.
pub fn should_compact(estimated: u64, window: u64, threshold: f64) -> bool {
    if window == 0 {
        return false;
    }
    let t = if threshold.is_finite() && threshold > 0.0 {
        threshold.min(1.0)
    } else {
        1.0
    };
    estimated as f64 > window as f64 * t
}

/// The part of a stored message the cut decision reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnView {
    pub seq: i64,
    pub role: MessageRole,
    /// Role assistant: the (stored) ids of the calls it requested.
    pub requested: Vec<String>,
    /// Role tool: the (stored) id of the call it answers.
    pub answers: Option<String>,
}

impl TurnView {
    pub fn of(m: &aibuddy_store::MessageRecord) -> Self {
        TurnView {
            seq: m.seq,
            role: m.role,
            requested: m
                .requested_calls
                .iter()
                .map(|c| c.tool_call_id.clone())
                .collect(),
            answers: m.tool_call_id.clone(),
        }
    }
}

/// Messages `covers_from..=covers_to` (seq numbers) are summarized into one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub covers_from: i64,
    pub covers_to: i64,
}

/// Where to cut, or `None` when there is nothing new to summarize.
///
/// The summarized range holds at least one model step (the prompt alone is never summarized).
/// The cut keeps the last `keep_recent_turns` turns (at least one) verbatim and is placed at a turn
/// boundary that no call/result pair crosses. It starts at the run's first message, so it contains
/// every earlier summary (which it supersedes); it must reach past the newest summary in effect, so
/// applying the decision and asking again gives `None` (idempotent).
pub fn cut_point(
    messages: &[TurnView],
    summaries: &[SummaryRecord],
    keep_recent_turns: usize,
) -> Option<Cut> {
    let first = messages.first()?.seq;
    // A boundary before index i is crossed when a call requested before i is answered at or
    // after i: such boundaries are not cut points.
    let mut requested_at = std::collections::HashMap::new();
    let mut crossed = vec![0i32; messages.len() + 1];
    for (i, m) in messages.iter().enumerate() {
        for id in &m.requested {
            requested_at.insert(id.as_str(), i);
        }
        if let Some(r) = m.answers.as_deref().and_then(|id| requested_at.get(id)) {
            // Boundaries r+1 ..= i are crossed.
            crossed[r + 1] += 1;
            crossed[i + 1] -= 1;
        }
    }
    let mut open = 0;
    let mut starts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        open += crossed[i];
        let turn_start = matches!(m.role, MessageRole::User | MessageRole::Assistant);
        if turn_start && open == 0 && i > 0 {
            starts.push(i);
        }
    }
    // The kept suffix starts at the keep-th boundary from the end; a run shorter than that has
    // nothing to cut.
    let keep = keep_recent_turns.max(1);
    let cut_at = *starts.iter().rev().nth(keep - 1)?;
    let covers_to = messages[cut_at - 1].seq;
    // Summarizing the prompt alone gains nothing: the range holds at least one model step.
    if !messages[..cut_at]
        .iter()
        .any(|m| m.role == MessageRole::Assistant)
    {
        return None;
    }
    let already = aibuddy_store::conversation::active_summaries(summaries)
        .iter()
        .map(|s| s.covers_to)
        .max();
    if already.is_some_and(|to| to >= covers_to) {
        return None;
    }
    Some(Cut {
        covers_from: first,
        covers_to,
    })
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
