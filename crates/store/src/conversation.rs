//! Pure decisions over a run's conversation (no I/O): what may be appended, which range a
//! summary may replace, and what the next request is built from.
//!
//! Protocol invariants the store enforces on append (so storage can never hold a conversation
//! that would be rejected on rebuild):
//! - content is JSON text;
//! - only `assistant` messages request calls; every requested id is valid and new in the run;
//! - a `tool` message names exactly one call requested earlier in the run, answered once.
//!
//! Summaries never split a call from its result, and never partially overlap an earlier summary
//! (they contain it, or are disjoint from it).

use std::collections::HashSet;

use crate::ids::validate_id;
use crate::run_types::{
    Conversation, Interaction, MessageRecord, MessageRole, NewMessage, NewSummary, RequestedCall,
    SummaryRecord,
};
use crate::types::{ConfirmRecord, UserAnswer};

/// Checks what can be checked without the database; `Err` is the reason.
pub fn validate_message(msg: &NewMessage) -> Result<(), String> {
    if serde_json::from_str::<serde::de::IgnoredAny>(&msg.content).is_err() {
        return Err("content is not JSON".into());
    }
    if !msg.requested_calls.is_empty() && msg.role != MessageRole::Assistant {
        return Err(format!(
            "a {} message cannot request tool calls",
            msg.role.as_str()
        ));
    }
    match (msg.role, &msg.tool_call_id) {
        (MessageRole::Tool, None) => return Err("a tool message must name its tool call".into()),
        (MessageRole::Tool, Some(id)) => validate_id(id).map_err(|e| e.to_string())?,
        (_, Some(_)) => return Err("only a tool message names a tool call".into()),
        (_, None) => {}
    }
    let mut seen = HashSet::new();
    for call in &msg.requested_calls {
        validate_id(&call.tool_call_id).map_err(|e| e.to_string())?;
        if call.tool.is_empty() {
            return Err(format!("tool call {} has no tool name", call.tool_call_id));
        }
        if !seen.insert(call.tool_call_id.as_str()) {
            return Err(format!("tool call {} requested twice", call.tool_call_id));
        }
    }
    Ok(())
}

/// Checks that `s` may replace its range of `messages` given the run's `existing` summaries.
pub fn validate_summary(
    messages: &[MessageRecord],
    existing: &[SummaryRecord],
    s: &NewSummary,
) -> Result<(), String> {
    let (from, to) = (s.covers_from, s.covers_to);
    if from < 1 || to < from {
        return Err(format!("invalid range {from}..={to}"));
    }
    if !messages.iter().any(|m| m.seq == to) || !messages.iter().any(|m| m.seq == from) {
        return Err(format!(
            "range {from}..={to} names messages that do not exist"
        ));
    }
    let inside = |seq: i64| (from..=to).contains(&seq);
    let mut requested_inside = HashSet::new();
    let mut answered_inside = HashSet::new();
    for m in messages {
        for c in &m.requested_calls {
            if inside(m.seq) {
                requested_inside.insert(c.tool_call_id.as_str());
            }
        }
        if let Some(id) = &m.tool_call_id {
            if inside(m.seq) {
                answered_inside.insert(id.as_str());
            } else if requested_inside.contains(id.as_str()) {
                return Err(format!("tool call {id} would be split from its result"));
            }
        }
    }
    for id in &answered_inside {
        if !requested_inside.contains(id) {
            return Err(format!("the result of {id} would be split from its call"));
        }
    }
    for id in &requested_inside {
        if !answered_inside.contains(id) {
            return Err(format!("tool call {id} has no result yet"));
        }
    }
    for e in existing {
        let disjoint = e.covers_to < from || e.covers_from > to;
        let contains = from <= e.covers_from && e.covers_to <= to;
        if !disjoint && !contains {
            return Err(format!(
                "range {from}..={to} partially overlaps summary {} ({}..={})",
                e.summary_id, e.covers_from, e.covers_to
            ));
        }
    }
    Ok(())
}

/// One item of the next request: an original message, or a summary standing for a range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ContextItem<'a> {
    Message(&'a MessageRecord),
    Summary(&'a SummaryRecord),
}

/// Summaries in effect: those not contained in a later summary's range (a later summary with
/// the same range supersedes an earlier one). Sorted by range.
pub fn active_summaries(summaries: &[SummaryRecord]) -> Vec<&SummaryRecord> {
    let mut active: Vec<&SummaryRecord> = summaries
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !summaries[i + 1..]
                .iter()
                .any(|later| later.covers_from <= s.covers_from && s.covers_to <= later.covers_to)
        })
        .map(|(_, s)| s)
        .collect();
    active.sort_by_key(|s| s.covers_from);
    active
}

impl Conversation {
    /// What the next request is built from, in order: messages not covered by a summary in
    /// effect, each such summary at the place of the first message it replaces.
    pub fn effective(&self) -> Vec<ContextItem<'_>> {
        let active = active_summaries(&self.summaries);
        let mut out = Vec::with_capacity(self.messages.len());
        let mut emitted: HashSet<i64> = HashSet::new();
        for m in &self.messages {
            match active
                .iter()
                .find(|s| (s.covers_from..=s.covers_to).contains(&m.seq))
            {
                Some(s) => {
                    if emitted.insert(s.summary_id) {
                        out.push(ContextItem::Summary(s));
                    }
                }
                None => out.push(ContextItem::Message(m)),
            }
        }
        out
    }

    /// Requested calls without a result message, in request order (what `resume_run` answers).
    pub fn dangling_calls(&self) -> Vec<&RequestedCall> {
        let answered: HashSet<&str> = self
            .messages
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        self.messages
            .iter()
            .flat_map(|m| &m.requested_calls)
            .filter(|c| !answered.contains(c.tool_call_id.as_str()))
            .collect()
    }

    /// The completed interaction (ask_user answer or confirm decision) of a call, if any.
    pub fn interaction_of(&self, tool_call_id: &str) -> Option<&Interaction> {
        self.interactions
            .iter()
            .rev()
            .find(|i| i.tool_call_id() == tool_call_id)
    }
}

/// Merges answers and decided confirms by completion time (answers first on a tie).
pub fn merge_interactions(
    answers: Vec<UserAnswer>,
    confirms: Vec<ConfirmRecord>,
) -> Vec<Interaction> {
    let mut out: Vec<(i64, u8, usize, Interaction)> = Vec::new();
    for (i, a) in answers.into_iter().enumerate() {
        out.push((a.answered_at_ms, 0, i, Interaction::Answer(a)));
    }
    for (i, c) in confirms.into_iter().enumerate() {
        let at = c.decided_at_ms.unwrap_or(c.requested_at_ms);
        out.push((at, 1, i, Interaction::Confirm(c)));
    }
    out.sort_by_key(|(at, kind, i, _)| (*at, *kind, *i));
    out.into_iter().map(|(_, _, _, i)| i).collect()
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
