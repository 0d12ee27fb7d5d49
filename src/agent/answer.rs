//! The model's answer of a step, stored before any of its calls runs (a crash leaves the calls
//! dangling, answered on resume): call ids made storable, the calls it plans, and the partial
//! text of a step that was stopped.

use std::collections::BTreeSet;

use aibuddy_provider::{Message, Usage as ProviderUsage};
use aibuddy_store::{NewMessage, RequestedCall, RunRecord, Store, StoreError};

use super::calls::PlannedCall;
use super::run_end::{End, stored_usage};
use crate::contract::Stage;
use crate::pipeline::has_no_name;

/// The tool name stored for a call whose name is empty or blank (`pipeline::has_no_name`).
const NO_NAME: &str = "(no name)";

/// Stores the model's answer of a step (after making its call ids storable) and returns the
/// calls it asks for, under their run-scoped stored ids.
pub(super) async fn record_answer(
    store: &Store,
    run: &RunRecord,
    kind: &str,
    message: &mut Message,
    usage: ProviderUsage,
) -> Result<Vec<PlannedCall>, End> {
    unique_call_ids(store, run, message)
        .await
        .map_err(End::store)?;
    let calls: Vec<PlannedCall> = message
        .tool_calls()
        .map(|(id, name, input, _)| PlannedCall {
            id: run.stored_call_id(id),
            name: name.to_string(),
            input: input.clone(),
        })
        .collect();
    let content = serde_json::to_string(&*message)
        .map_err(|e| End::error(Stage::Projection, format!("assistant message: {e}")))?;
    let requested = calls
        .iter()
        .map(|c| RequestedCall {
            tool_call_id: c.id.clone(),
            // A call with no name is still stored and answered (Discovery tells the model); the
            // store keeps a placeholder for the name it lacks.
            tool: if has_no_name(&c.name) {
                NO_NAME.to_string()
            } else {
                c.name.clone()
            },
        })
        .collect();
    store
        .append_message(
            &run.run_id,
            NewMessage::assistant(kind, content, Some(stored_usage(usage)), requested),
        )
        .await
        .map_err(|e| {
            End::error(
                Stage::Projection,
                format!("the model's answer could not be stored: {e}"),
            )
        })?;
    Ok(calls)
}

/// Keeps the text a step streamed before it was stopped or ran out of time as the model's answer
/// (no calls: none completed). Nothing to keep when nothing was streamed.
pub(super) async fn keep_partial(store: &Store, run_id: &str, kind: &str, partial_text: String) {
    if partial_text.is_empty() {
        return;
    }
    let partial = Message::assistant_text(partial_text);
    let stored = serde_json::to_string(&partial).unwrap_or_default();
    if let Err(e) = store
        .append_message(
            run_id,
            NewMessage::assistant(kind, stored, None, Vec::new()),
        )
        .await
    {
        tracing::warn!(run = %run_id, "partial answer not kept: {e}");
    }
}

/// Makes the model's call ids usable as stored ids before the message is stored. The store keys
/// a run's calls by id, but compatible servers may send no id, the same id twice in one message,
/// or ids they already used in this run (numbered per response: `0`, `call_0`), or characters no
/// stored id may hold: such a call is renamed (`<id>-2`, ...; in the message and its raw blocks,
/// so the model gets the new id back with the result). Ids that are fine are left untouched.
async fn unique_call_ids(
    store: &Store,
    run: &RunRecord,
    message: &mut Message,
) -> Result<(), StoreError> {
    let ids: Vec<String> = message
        .tool_calls()
        .map(|(id, ..)| id.to_string())
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let conv = store.conversation(&run.run_id).await?;
    let mut used: BTreeSet<String> = conv
        .messages
        .iter()
        .flat_map(|m| m.requested_calls.iter().map(|c| c.tool_call_id.clone()))
        .collect();
    for (n, id) in ids.iter().enumerate() {
        let ok = |candidate: &str, used: &BTreeSet<String>| {
            let stored = run.stored_call_id(candidate);
            !candidate.is_empty()
                && aibuddy_store::validate_id(&stored).is_ok()
                && !used.contains(&stored)
        };
        if ok(id, &used) {
            used.insert(run.stored_call_id(id));
            continue;
        }
        let base: String = aibuddy_store::safe_name(id).chars().take(64).collect();
        let base = if base.is_empty() { "call".into() } else { base };
        let fresh = (2u64..10_000)
            .map(|k| format!("{base}-{k}"))
            .find(|c| ok(c, &used))
            .unwrap_or_else(|| format!("call-{}", aibuddy_store::new_id()));
        tracing::warn!(run = %run.run_id, "the provider's call id could not be stored as is; renamed");
        used.insert(run.stored_call_id(&fresh));
        message.rename_tool_call(n, &fresh);
    }
    Ok(())
}
