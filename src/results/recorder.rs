//! `StoreRecorder`: the pipeline's `CallRecorder` on the SQLite store.
//!
//! Raw output rule (what `aibuddy show --raw` prints):
//! - the tool spooled bytes (`RawOutput::spool`, e.g. a command's complete output): those bytes,
//!   exactly; the structured result is kept beside them (`output_json`);
//! - the result is a JSON string: its text, as UTF-8;
//! - any other JSON result: its compact JSON text;
//! - no result (failure before execution): empty.
//!
//! Up to 64 KiB is stored in the row, more in `blobs/<id>.bin` (see `aibuddy_store`).

use async_trait::async_trait;
use serde_json::Value;

use aibuddy_common::DecisionState;
use aibuddy_store::{
    CallFinish, CallStart as StoreStart, ConfirmRecord as StoreConfirm, RawFormat, Store,
};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::call_record::RecordError;
use crate::confirm::{ConfirmRequest, Decision};
use crate::pipeline::{CallEnd, CallRecorder, CallStart};

/// Longest display text indexed for search.
const DISPLAY_TEXT_MAX: usize = 4096;

/// Records calls in the store. `finish` returns only after the commit.
#[derive(Clone, Debug)]
pub struct StoreRecorder {
    store: Store,
    project_root: Option<String>,
    /// Confirm requests recorded as pending, by call id, awaiting their decision in `finish`.
    pending_confirms: Arc<Mutex<HashMap<String, i64>>>,
}

impl StoreRecorder {
    pub fn new(store: Store, project_root: Option<&std::path::Path>) -> Self {
        StoreRecorder {
            store,
            project_root: project_root.map(|p| p.display().to_string()),
            pending_confirms: Arc::default(),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Searchable text of a client projection: its string values (depth first, object keys in
/// sorted order; the bounded images under `model_images` left out), space-separated,
/// at most 4 KiB.
pub fn display_text(client: &Value) -> Option<String> {
    fn walk(v: &Value, out: &mut String) {
        if out.len() >= DISPLAY_TEXT_MAX {
            return;
        }
        match v {
            Value::String(s) => {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(s);
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            // A result's images are pixels, not searchable text.
            Value::Object(map) => map
                .iter()
                .filter(|(k, _)| k.as_str() != super::images::CLIENT_KEY)
                .for_each(|(_, i)| walk(i, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(client, &mut out);
    if out.len() > DISPLAY_TEXT_MAX {
        let mut cut = DISPLAY_TEXT_MAX;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    (!out.is_empty()).then_some(out)
}

fn input_text(input: &Value) -> String {
    match input {
        // Arguments that were not JSON are kept as the text received.
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn confirm_record(
    req: &ConfirmRequest,
    decision: DecisionState,
    requested_at_ms: i64,
    decided_at_ms: Option<i64>,
) -> StoreConfirm {
    StoreConfirm {
        tool_call_id: req.call_id.clone(),
        run_id: None,
        digest: req.digest.clone(),
        target: req.target.clone(),
        scope: req.scope.join("\n"),
        consequence: req.consequence.clone(),
        decision,
        requested_at_ms,
        decided_at_ms,
        policy: None,
    }
}

fn finish_of(end: &CallEnd) -> CallFinish {
    let mut fin = CallFinish::new(&end.tool_call_id, end.status);
    fin.stage = end.stage;
    fin.error_code = end.error.as_ref().map(|e| e.code.to_string());
    fin.error_message = end.error.as_ref().map(|e| e.message.clone());
    match (&end.spool, &end.output) {
        (Some(path), value) => {
            fin.raw_output_file = Some(path.clone());
            fin.raw_format = RawFormat::Bytes;
            fin.output_json = (!value.is_null()).then(|| value.clone());
        }
        (None, Value::String(s)) => {
            fin.raw_output = s.as_bytes().to_vec();
            fin.raw_format = RawFormat::Text;
        }
        (None, Value::Null) => fin.raw_format = RawFormat::Text,
        (None, other) => {
            fin.raw_output = other.to_string().into_bytes();
            fin.raw_format = RawFormat::Json;
        }
    }
    fin.model_projection = Some(end.model.clone());
    fin.client_projection = Some(end.client.clone());
    fin.display_text = display_text(&end.client);
    fin.finished_at_ms = Some(end.finished_at);
    fin
}

#[async_trait]
impl CallRecorder for StoreRecorder {
    async fn begin(&self, start: &CallStart) -> Result<(), RecordError> {
        self.store
            .begin_call(StoreStart {
                tool_call_id: start.tool_call_id.clone(),
                run_id: start.run_id.clone(),
                project_root: self.project_root.clone(),
                tool: start.tool.clone(),
                config: start.config.clone().unwrap_or_default(),
                input: input_text(&start.input),
                started_at_ms: Some(start.started_at),
            })
            .await
            .map_err(|e| RecordError(e.to_string()))
    }

    async fn confirm_requested(&self, request: &ConfirmRequest) -> Result<(), RecordError> {
        let now = aibuddy_store::now_ms();
        let id = self
            .store
            .record_confirm_request(confirm_record(request, DecisionState::Pending, now, None))
            .await
            .map_err(|e| RecordError(e.to_string()))?;
        self.pending_confirms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request.call_id.clone(), id);
        Ok(())
    }

    async fn policy_decided(
        &self,
        request: &ConfirmRequest,
        approved: bool,
        why: &str,
    ) -> Result<(), RecordError> {
        let now = aibuddy_store::now_ms();
        let state = if approved {
            DecisionState::Approved
        } else {
            DecisionState::Rejected
        };
        let mut rec = confirm_record(request, state, now, Some(now));
        rec.policy = Some(why.to_string());
        self.store
            .record_confirm_request(rec)
            .await
            .map(|_| ())
            .map_err(|e| RecordError(e.to_string()))
    }

    async fn hook_ran(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        run: &crate::hooks::HookRun,
    ) -> Result<(), RecordError> {
        self.store
            .record_hook_run(crate::hooks::store_row(run_id, call_id, run))
            .await
            .map(|_| ())
            .map_err(|e| RecordError(e.to_string()))
    }

    async fn finish(&self, end: &CallEnd) -> Result<(), RecordError> {
        let pending = self
            .pending_confirms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&end.tool_call_id);
        if let Some(c) = &end.confirm {
            let decision = match (&c.decision, c.approved) {
                (Decision::Approved { .. }, true) => DecisionState::Approved,
                _ => DecisionState::Rejected,
            };
            let recorded = match pending {
                Some(id) => self.store.record_decision(id, decision).await.map(|_| ()),
                None => self
                    .store
                    .record_confirm_request(confirm_record(
                        &c.request,
                        decision,
                        c.decided_at,
                        Some(c.decided_at),
                    ))
                    .await
                    .map(|_| ()),
            };
            recorded.map_err(|e| RecordError(e.to_string()))?;
        } else if let Some(id) = pending {
            // Asked, but the call ended without a decision (cancelled while waiting).
            self.store
                .record_decision(id, DecisionState::Cancelled)
                .await
                .map_err(|e| RecordError(e.to_string()))?;
        }
        self.store
            .finish_call(finish_of(end))
            .await
            .map_err(|e| RecordError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_text_collects_strings_depth_first_in_key_order() {
        assert_eq!(
            display_text(&json!({"title": "grep TODO", "files": ["a.rs", 3, {"p": "b.rs"}]})),
            Some("a.rs b.rs grep TODO".to_string())
        );
        assert_eq!(display_text(&json!({"n": 1})), None);
        assert_eq!(
            display_text(&json!({"model_images": [{"data": "iVBORw0KGgo"}], "summary": "a.png"})),
            Some("a.png".to_string())
        );
        let long = display_text(&json!("é".repeat(5000))).unwrap();
        assert!(long.len() <= DISPLAY_TEXT_MAX);
    }
}
