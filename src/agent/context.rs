//! Every request is rebuilt from storage: this turns a stored conversation into provider
//! messages. Pure (the loop reads the store, this decides).
//!
//! - user text and summaries become user text; assistant messages come back exactly as stored
//!   (the provider's own blocks replay unchanged to the same format);
//! - a tool result is the linked call's model projection (the compacted form once precompaction
//!   replaced it), never its client projection, live output or heartbeats;
//! - completed confirm and `ask_user_question` interactions are normalized into user text next to
//!   the result (`super::human`);
//! - `tool_search` results carry `tool_reference`s on the native presentation, plus a note of
//!   what references cannot say (nothing found, servers not searched: `super::search_note`);
//!   their activations and every retained call are listed for reactivation of deferred tools;
//! - a result's bounded images (kept in its client projection) follow its text as image blocks,
//!   unless compaction replaced the text;
//! - a requested call with no stored result is answered as interrupted, so the protocol stays
//!   valid whatever the store holds.

use std::collections::{BTreeSet, HashMap};

use aibuddy_provider::{ContentBlock, Message, ResultBlock, Role};
use aibuddy_store::{
    CallStatus, CompactionState, ContextItem, Conversation, Interaction, LinkedResult,
    MessageRecord, MessageRole,
};

use crate::contract::Stage;
use crate::discovery::ContextMessage;
use crate::results::images::ModelImage;
use crate::tools::tool_search::TOOL_NAME as TOOL_SEARCH;

/// A stored conversation the loop cannot turn into a request.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("stored message {seq} of run {run_id} cannot be replayed: {reason}")]
    Corrupt {
        run_id: String,
        seq: i64,
        reason: String,
    },
}

impl ContextError {
    pub fn stage(&self) -> Stage {
        Stage::Projection
    }
}

/// The messages of the next request and what they reference (for reactivation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rebuilt {
    pub messages: Vec<Message>,
    pub references: Vec<ContextMessage>,
}

/// How to present `tool_search` results.
#[derive(Debug, Clone, Default)]
pub struct SearchResults<'a> {
    /// Tools each `tool_search` call activated, by call id.
    pub activated: HashMap<String, Vec<String>>,
    /// Native presentation: results carry `tool_reference`s to these tool names (the request's
    /// tools); `None` on activeTools.
    pub native_tools: Option<&'a BTreeSet<String>>,
    /// What each `tool_search` call's references cannot say (`super::search_note`), by call id:
    /// sent as text beside the references on the native presentation.
    pub notes: HashMap<String, String>,
}

/// The text a model reads for a call with no usable projection.
fn fallback_text(status: CallStatus, result: Option<&LinkedResult>) -> String {
    let message = result
        .and_then(|r| r.error_message.clone())
        .unwrap_or_default();
    match status {
        CallStatus::Interrupted | CallStatus::Running => {
            "Interrupted: the call did not complete (the run was interrupted); its effect, if any, \
is unknown. Check before retrying."
                .to_string()
        }
        CallStatus::Cancelled => format!("Cancelled: {message}").trim_end().to_string(),
        CallStatus::Rejected => format!("Rejected: {message}").trim_end().to_string(),
        CallStatus::Error => format!("Error: {message}").trim_end().to_string(),
        CallStatus::Ok => String::new(),
    }
}

/// A call of the latest assistant message still waiting for its result.
#[derive(Debug, Clone)]
struct Pending {
    /// The model's own id (what the result block names).
    provider_id: String,
    /// The id it is stored under (`tool_calls`, tool messages, interactions).
    stored_id: String,
    tool: String,
}

fn result_block(
    call: &Pending,
    result: Option<&LinkedResult>,
    search: &SearchResults<'_>,
    references: &mut Vec<ContextMessage>,
) -> ContentBlock {
    let status = result.map_or(CallStatus::Interrupted, |r| r.status);
    let text = result
        .and_then(|r| r.model_projection.clone())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| fallback_text(status, result));
    let mut content = Vec::new();
    let tool = result.map_or(call.tool.as_str(), |r| r.tool.as_str());
    if tool == TOOL_SEARCH
        && status == CallStatus::Ok
        && let Some(found) = search.activated.get(&call.stored_id)
    {
        references.push(ContextMessage {
            tool_calls: Vec::new(),
            activated: found.clone(),
        });
        if let Some(names) = search.native_tools {
            content.extend(found.iter().filter(|n| names.contains(*n)).map(|n| {
                ResultBlock::ToolReference {
                    tool_name: n.clone(),
                }
            }));
            // Nothing found, unknown names, servers not searched: said next to the references
            // (Anthropic: a text block of the result; Responses: a message after the outputs).
            if let Some(note) = search.notes.get(&call.stored_id) {
                content.push(ResultBlock::Text { text: note.clone() });
            }
        }
    }
    if content.is_empty() {
        content.push(ResultBlock::Text { text });
    }
    content.extend(result_images(status, result));
    ContentBlock::ToolResult {
        tool_use_id: call.provider_id.clone(),
        content,
        is_error: status != CallStatus::Ok,
    }
}

/// The images a successful result sends beside its text (bounded when the call finished:
/// `crate::results::images`), unless compaction replaced the text they belong with.
fn result_images(status: CallStatus, result: Option<&LinkedResult>) -> Vec<ResultBlock> {
    let Some(r) = result.filter(|_| status == CallStatus::Ok) else {
        return Vec::new();
    };
    if matches!(
        r.compaction_state,
        CompactionState::Compacted | CompactionState::Dropped
    ) {
        return Vec::new();
    }
    let Some(json) = r.model_images.as_deref() else {
        return Vec::new();
    };
    match serde_json::from_str::<Vec<ModelImage>>(json) {
        Ok(images) => images
            .into_iter()
            .map(|i| ResultBlock::Image {
                media_type: i.media_type,
                data: i.data,
            })
            .collect(),
        Err(e) => {
            tracing::warn!(
                "stored images of a {} result are unreadable (Projection): {e}",
                r.tool
            );
            Vec::new()
        }
    }
}

/// The user text a completed interaction becomes (the separate projection: `super::human`).
fn interaction_text(i: &Interaction) -> Option<String> {
    super::human::interaction_text(i)
}

fn user_text(content: &str, m: &MessageRecord, run_id: &str) -> Result<String, ContextError> {
    let v: serde_json::Value =
        serde_json::from_str(content).map_err(|e| corrupt(run_id, m.seq, e.to_string()))?;
    v.get("text")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| corrupt(run_id, m.seq, "a user message without text".into()))
}

fn corrupt(run_id: &str, seq: i64, reason: String) -> ContextError {
    ContextError::Corrupt {
        run_id: run_id.to_string(),
        seq,
        reason,
    }
}

/// Appends blocks to the trailing user message, or starts one. Tool results go before the
/// message's other blocks (the person's normalized text), as the Messages API requires of a user
/// turn that answers tool calls: results first, text after.
fn push_user(out: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    if blocks.is_empty() {
        return;
    }
    let m = match out.last_mut() {
        Some(m) if m.role == Role::User => m,
        _ => {
            out.push(Message {
                role: Role::User,
                content: Vec::new(),
                raw: None,
            });
            let Some(m) = out.last_mut() else { return };
            m
        }
    };
    for b in blocks {
        if matches!(b, ContentBlock::ToolResult { .. }) {
            let at = m
                .content
                .iter()
                .position(|x| !matches!(x, ContentBlock::ToolResult { .. }))
                .unwrap_or(m.content.len());
            m.content.insert(at, b);
        } else {
            m.content.push(b);
        }
    }
}

/// Answers the calls of the last assistant message that got no result message.
fn close_pending(
    out: &mut Vec<Message>,
    pending: &mut Vec<Pending>,
    search: &SearchResults<'_>,
    references: &mut Vec<ContextMessage>,
) {
    let blocks: Vec<ContentBlock> = pending
        .drain(..)
        .map(|call| result_block(&call, None, search, references))
        .collect();
    push_user(out, blocks);
}

/// Rebuilds the next request's messages from a stored conversation.
pub fn rebuild(conv: &Conversation, search: &SearchResults<'_>) -> Result<Rebuilt, ContextError> {
    let run_id = conv.run.run_id.as_str();
    let mut out: Vec<Message> = Vec::new();
    let mut references = Vec::new();
    // Calls of the latest assistant message still waiting for a result.
    let mut pending: Vec<Pending> = Vec::new();
    // Completed interactions by call: its confirm, its `ask_user_question` answer, and the
    // answers to elicitations that arrived while it ran (several per call possible), in order.
    let mut interactions: HashMap<&str, Vec<&Interaction>> = HashMap::new();
    for i in &conv.interactions {
        interactions.entry(i.tool_call_id()).or_default().push(i);
    }
    for item in conv.effective() {
        let m = match item {
            ContextItem::Summary(s) => {
                close_pending(&mut out, &mut pending, search, &mut references);
                push_user(
                    &mut out,
                    vec![ContentBlock::Text {
                        text: format!("Summary of the earlier conversation:\n{}", s.text),
                    }],
                );
                continue;
            }
            ContextItem::Message(m) => m,
        };
        match m.role {
            MessageRole::System => {}
            MessageRole::User => {
                close_pending(&mut out, &mut pending, search, &mut references);
                let text = user_text(&m.content, m, run_id)?;
                push_user(&mut out, vec![ContentBlock::Text { text }]);
            }
            MessageRole::Assistant => {
                close_pending(&mut out, &mut pending, search, &mut references);
                let msg: Message = serde_json::from_str(&m.content)
                    .map_err(|e| corrupt(run_id, m.seq, e.to_string()))?;
                if msg.role != Role::Assistant {
                    return Err(corrupt(run_id, m.seq, "not an assistant message".into()));
                }
                let calls: Vec<Pending> = msg
                    .tool_calls()
                    .map(|(id, name, _, _)| Pending {
                        provider_id: id.to_string(),
                        stored_id: conv.run.stored_call_id(id),
                        tool: name.to_string(),
                    })
                    .collect();
                references.push(ContextMessage {
                    tool_calls: calls.iter().map(|c| c.tool.clone()).collect(),
                    activated: Vec::new(),
                });
                pending = calls;
                out.push(msg);
            }
            MessageRole::Tool => {
                let Some(id) = m.tool_call_id.as_deref() else {
                    return Err(corrupt(
                        run_id,
                        m.seq,
                        "a tool message without a call".into(),
                    ));
                };
                let Some(pos) = pending.iter().position(|c| c.stored_id == id) else {
                    // A result for a call the context does not hold (summarized): not sent.
                    continue;
                };
                let call = pending.remove(pos);
                let mut blocks = vec![result_block(
                    &call,
                    m.result.as_ref(),
                    search,
                    &mut references,
                )];
                for i in interactions.get(id).into_iter().flatten() {
                    if let Some(text) = interaction_text(i) {
                        if let Some(b) = blocks.first_mut() {
                            super::human::normalize_result(b, i);
                        }
                        blocks.push(ContentBlock::Text { text });
                    }
                }
                push_user(&mut out, blocks);
            }
        }
    }
    close_pending(&mut out, &mut pending, search, &mut references);
    Ok(Rebuilt {
        messages: out,
        references,
    })
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
