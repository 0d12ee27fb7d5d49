//! `view_tool_call`: recovers the raw input and output of any earlier call by its id, in bounded
//! slices, so recovery itself respects the output bounds. This is what the note on a compacted
//! result points the model to. Read-only; its own output is never compacted.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use aibuddy_store::{CallRecord, RawFormat, Reader, StoreError};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::registry::{
    CallContext, Compaction, RawOutput, Requirement, Risk, Source, ToolConfig, ToolConfigMeta,
    ToolDef, ToolHandler,
};
use crate::results::utf8_window;

pub const KEY: &str = "view_tool_call";
pub const NAME: &str = "view_tool_call";
/// Bytes of raw output per page by default and at most.
pub const DEFAULT_LIMIT: u64 = 20_000;
pub const MAX_LIMIT: u64 = 30_000;
/// Characters of the raw input shown on the first page.
const INPUT_PREVIEW_CHARS: usize = 4_000;

pub struct ViewToolCallConfig;

pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(
        KEY,
        "View tool call",
        "history",
        Risk::ReadOnly,
        false,
        &[NAME],
    )
}

impl ToolConfig for ViewToolCallConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::Store]
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "Large tool results may be compacted in your context. A compacted result says so and \
             names its tool_call_id; call view_tool_call with that id (and offset/limit to page) \
             to read the complete raw input and output. A cut command output names the byte range \
             it left out: pass it as offset and limit."
                .into(),
        )
    }

    fn compaction(&self) -> Compaction {
        Compaction::None
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool(
                NAME,
                "Read the stored raw input and output of an earlier tool call by its tool_call_id, \
                 one bounded page at a time (offset and limit are byte positions in the raw output).",
                json!({
                    "type": "object",
                    "properties": {
                        "tool_call_id": {"type": "string", "minLength": 1, "maxLength": 128,
                                         "pattern": "^[A-Za-z0-9_:.-]+$"},
                        "offset": {"type": "integer", "minimum": 0, "default": 0},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                  "default": DEFAULT_LIMIT}
                    },
                    "required": ["tool_call_id"],
                    "additionalProperties": false
                }),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(ViewToolCall),
        }])
    }
}

struct ViewToolCall;

pub use crate::call_record::model_call_id;

fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::CallNotFound(id) => ToolError::new(
            crate::contract::Stage::Parameters,
            "unknown_call",
            format!("no stored tool call has the id `{id}`"),
        ),
        other => ToolError::execution("store_unavailable", other.to_string()),
    }
}

/// Reads one page of a call (blocking; run on a blocking thread). Calls of another project are
/// reported as unknown: recovery does not reach past the open project. An id this run's model
/// knows (its provider's own id, stored run-scoped as `<run_id>:<id>`) is found too. A call still
/// running (a background process) is read from its spool file, as far as it is written.
fn read_page(
    data_dir: &std::path::Path,
    project_root: &std::path::Path,
    run_id: &str,
    given: &str,
    offset: u64,
    limit: u64,
) -> Result<Value, ToolError> {
    let reader = Reader::open(data_dir).map_err(store_error)?;
    let unknown = || store_error(StoreError::CallNotFound(given.to_string()));
    let mut id = given.to_string();
    let mut owner = reader.project_root_of(&id).map_err(store_error)?;
    if owner.is_none() && !run_id.is_empty() {
        let scoped = aibuddy_store::scoped_call_id(run_id, given);
        owner = reader.project_root_of(&scoped).map_err(store_error)?;
        id = scoped;
    }
    match owner {
        None => return Err(unknown()),
        Some(Some(root)) if root != project_root.display().to_string() => return Err(unknown()),
        Some(_) => {}
    }
    let rec = reader
        .get_call(&id)
        .map_err(store_error)?
        .ok_or_else(unknown)?;
    if rec.status == aibuddy_store::CallStatus::Running {
        let spool = aibuddy_store::DataPaths::new(data_dir)
            .spool_file(&id)
            .map_err(store_error)?;
        let (bytes, total) = read_spool_slice(&spool, offset, limit)?;
        let (text, next) = utf8_window(&bytes, offset.min(total));
        let mut page = page_value(&rec, offset, &text, next, total);
        page["running"] = Value::Bool(true);
        return Ok(page);
    }
    let slice = reader
        .read_raw_slice(&id, offset, limit)
        .map_err(store_error)?;
    let (text, next) = utf8_window(&slice.bytes, slice.offset);
    Ok(page_value(&rec, offset, &text, next, slice.total_len))
}

/// At most `limit` bytes of a running call's spool from `offset`, and its length now (a call
/// that spools nothing reads as empty).
fn read_spool_slice(
    path: &std::path::Path,
    offset: u64,
    limit: u64,
) -> Result<(Vec<u8>, u64), ToolError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(ToolError::execution("store_unavailable", e.to_string())),
    };
    let io = |e: std::io::Error| ToolError::execution("store_unavailable", e.to_string());
    let total = file.metadata().map_err(io)?.len();
    let start = offset.min(total);
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit.min(total - start))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok((bytes, total))
}

/// At most `INPUT_PREVIEW_CHARS` characters of `s`, saying how many were left out.
fn preview(s: String) -> String {
    let n = s.chars().count();
    if n > INPUT_PREVIEW_CHARS {
        let head: String = s.chars().take(INPUT_PREVIEW_CHARS).collect();
        format!("{head}... [{} more characters]", n - INPUT_PREVIEW_CHARS)
    } else {
        s
    }
}

fn page_value(rec: &CallRecord, offset: u64, text: &str, next: u64, total: u64) -> Value {
    let input = (offset == 0).then(|| {
        preview(match &rec.input {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    });
    let structured = (offset == 0)
        .then(|| rec.output_json.as_ref().map(|v| preview(v.to_string())))
        .flatten();
    json!({
        "tool_call_id": rec.tool_call_id,
        "tool": rec.tool,
        "status": rec.status.as_str(),
        "stage": rec.stage,
        "started_at": rec.started_at,
        "duration_ms": rec.duration_ms,
        "input": input,
        "raw_format": rec.raw_format.map(RawFormat::as_str),
        "structured_output": structured,
        "partial": rec.raw_output_partial,
        "offset": offset.min(total),
        "next_offset": (next < total).then_some(next),
        "total_bytes": total,
        "text": text,
    })
}

#[async_trait]
impl ToolHandler for ViewToolCall {
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let id = args["tool_call_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let offset = args["offset"].as_u64().unwrap_or(0);
        let limit = args["limit"]
            .as_u64()
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT);
        let data_dir = ctx.services.data_dir.clone();
        let project = ctx.services.project_root.clone();
        let run_id = ctx.run_id.clone();
        let page = tokio::task::spawn_blocking(move || {
            read_page(&data_dir, &project, &run_id, &id, offset, limit)
        })
        .await
        .map_err(|e| ToolError::execution("internal", e.to_string()))??;
        Ok(RawOutput::json(page))
    }

    fn client(&self, _args: &Value, raw: &RawOutput) -> Value {
        raw.value.clone()
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_text(&raw.value)
    }
}

/// The model's view of one page.
fn model_text(p: &Value) -> String {
    let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    let mut out = format!(
        "tool_call_id: {}\ntool: {}  status: {}{}  started: {}  duration: {} ms\n",
        s("tool_call_id"),
        s("tool"),
        s("status"),
        p["stage"]
            .as_str()
            .map(|st| format!(" ({st})"))
            .unwrap_or_default(),
        s("started_at"),
        p["duration_ms"].as_i64().unwrap_or(0)
    );
    if let Some(input) = p["input"].as_str() {
        out.push_str(&format!("input: {input}\n"));
    }
    if let Some(structured) = p["structured_output"].as_str() {
        out.push_str(&format!("structured output: {structured}\n"));
    }
    let offset = p["offset"].as_u64().unwrap_or(0);
    let total = p["total_bytes"].as_u64().unwrap_or(0);
    let end = p["next_offset"].as_u64().unwrap_or(total);
    out.push_str(&format!(
        "raw output bytes {offset}..{end} of {total}{}:\n",
        if p["running"].as_bool() == Some(true) {
            " (so far: the call is still running)"
        } else if p["partial"].as_bool() == Some(true) {
            " (partial: the process ended while the call ran)"
        } else {
            ""
        }
    ));
    out.push_str(p["text"].as_str().unwrap_or_default());
    if let Some(next) = p["next_offset"].as_u64() {
        out.push_str(&format!(
            "\n[more: call view_tool_call with {{\"tool_call_id\": \"{}\", \"offset\": {next}}}]",
            s("tool_call_id")
        ));
    }
    out
}
