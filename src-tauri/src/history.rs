//! Past calls of the open project, read from the core's SQLite store with the same queries the CLI
//! uses (`aibuddy history`, `aibuddy show`). Only shapes the rows for the UI; no SQL here.

use aibuddy_store::{CallRecord, CallStatus, HistoryFilter, HistoryRow, Store, StoreError};
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};

/// Rows returned when the UI gives no limit.
pub const DEFAULT_HISTORY_LIMIT: usize = 50;
/// The most rows one `list_history` returns.
pub const MAX_HISTORY_LIMIT: usize = 200;
/// Raw output bytes returned by `show_call` when the UI gives no limit.
pub const DEFAULT_SLICE_BYTES: u64 = 4096;
/// The most raw output bytes one `show_call` returns.
pub const MAX_SLICE_BYTES: u64 = 64 * 1024;

/// One stored call in the history list.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryEntry {
    pub tool_call_id: String,
    pub run_id: String,
    pub tool: String,
    /// ok, error, cancelled, rejected, interrupted or running.
    pub status: String,
    pub stage: Option<String>,
    pub error_message: Option<String>,
    /// RFC 3339 UTC with milliseconds.
    pub started_at: String,
    pub duration_ms: Option<i64>,
}

impl From<HistoryRow> for HistoryEntry {
    fn from(r: HistoryRow) -> Self {
        Self {
            tool_call_id: r.tool_call_id,
            run_id: r.run_id,
            tool: r.tool,
            status: r.status.as_str().to_string(),
            stage: r.stage,
            error_message: r.error_message,
            started_at: r.started_at,
            duration_ms: r.duration_ms,
        }
    }
}

/// One stored call with its input, model text and a bounded slice of its raw output.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct CallDetail {
    pub entry: HistoryEntry,
    /// The arguments as received.
    #[ts(type = "unknown")]
    pub input: Value,
    /// The exact text the model saw, when the call finished.
    pub model: Option<String>,
    /// Raw output decoded as UTF-8 from `raw_offset` (cut at a character boundary).
    pub raw_text: String,
    pub raw_offset: u64,
    /// Where the next slice starts; `None` when this slice reaches the end.
    pub raw_next_offset: Option<u64>,
    pub raw_total_bytes: u64,
    /// True when the output is what was spooled before the process died.
    pub raw_partial: bool,
}

fn entry_of(rec: &CallRecord) -> HistoryEntry {
    HistoryEntry {
        tool_call_id: rec.tool_call_id.clone(),
        run_id: rec.run_id.clone(),
        tool: rec.tool.clone(),
        status: rec.status.as_str().to_string(),
        stage: rec.stage.clone(),
        error_message: rec.error_message.clone(),
        started_at: rec.started_at.clone(),
        duration_ms: rec.duration_ms,
    }
}

/// The history filter for the UI's arguments: limit defaulted and capped, blank search ignored, the
/// status parsed (an unknown status is a typed error, not an empty list).
pub fn filter(
    limit: Option<usize>,
    search: Option<String>,
    status: Option<String>,
) -> Result<HistoryFilter, CommandError> {
    let status = match status.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(CallStatus::parse(s).ok_or_else(|| {
            CommandError::new(
                ErrorCode::Project,
                format!(
                    "unknown status `{s}` (expected one of: {})",
                    CallStatus::ALL.map(CallStatus::as_str).join(", ")
                ),
            )
        })?),
    };
    Ok(HistoryFilter {
        status,
        search: search
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        limit: Some(
            limit
                .unwrap_or(DEFAULT_HISTORY_LIMIT)
                .clamp(1, MAX_HISTORY_LIMIT),
        ),
        ..HistoryFilter::default()
    })
}

fn store_error(error: StoreError) -> CommandError {
    match error {
        StoreError::CallNotFound(id) => CommandError::new(
            ErrorCode::Project,
            format!("no stored call has the id `{id}`"),
        ),
        other => CommandError::new(ErrorCode::Internal, format!("call store: {other}")),
    }
}

/// Stored calls, newest first.
pub async fn list(store: &Store, filter: HistoryFilter) -> Result<Vec<HistoryEntry>, CommandError> {
    let read = || async { store.history(filter.clone()).await.map_err(store_error) };
    let mut rows = read().await?;
    if crate::history_browser::recovered_any(store, rows.iter().map(|r| r.status)).await {
        rows = read().await?;
    }
    Ok(rows.into_iter().map(HistoryEntry::from).collect())
}

/// One stored call and `limit` bytes (capped) of its raw output from `offset`.
pub async fn show(
    store: &Store,
    tool_call_id: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<CallDetail, CommandError> {
    let read = || async {
        store
            .get_call(tool_call_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| store_error(StoreError::CallNotFound(tool_call_id.to_string())))
    };
    let mut rec = read().await?;
    if crate::history_browser::recovered_any(store, std::iter::once(rec.status)).await {
        rec = read().await?;
    }
    let limit = limit
        .unwrap_or(DEFAULT_SLICE_BYTES)
        .clamp(1, MAX_SLICE_BYTES);
    let slice = store
        .read_raw_slice(tool_call_id, offset.unwrap_or(0), limit)
        .await
        .map_err(store_error)?;
    let (raw_text, next) = aibuddy::results::utf8_window(&slice.bytes, slice.offset);
    Ok(CallDetail {
        entry: entry_of(&rec),
        input: rec.input,
        model: rec.model_projection,
        raw_text,
        raw_offset: slice.offset,
        raw_next_offset: (next < slice.total_len).then_some(next),
        raw_total_bytes: slice.total_len,
        raw_partial: slice.partial,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_defaulted_and_capped() {
        assert_eq!(filter(None, None, None).unwrap().limit, Some(50));
        assert_eq!(filter(Some(10_000), None, None).unwrap().limit, Some(200));
        assert_eq!(filter(Some(0), None, None).unwrap().limit, Some(1));
    }

    #[test]
    fn blank_search_is_ignored_and_status_is_parsed() {
        let f = filter(None, Some("  ".into()), Some("error".into())).unwrap();
        assert_eq!(f.search, None);
        assert_eq!(f.status, Some(CallStatus::Error));
        let err = filter(None, None, Some("bogus".into())).unwrap_err();
        assert_eq!(err.code, ErrorCode::Project);
        assert!(err.message.contains("bogus"));
    }
}
