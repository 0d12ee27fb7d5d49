//! `aibuddy show ID [--raw] [--offset N --limit N] [--json]`: one stored call.
//! `--raw` writes the stored raw output bytes exactly as produced (or the requested byte range)
//! to stdout; `--json` prints the whole record; the default is a readable summary with the model
//! projection and the first page of the raw output.

use std::io::Write;
use std::process::ExitCode;

use aibuddy_store::{RawSource, Store, StoreError};
use clap::Args;
use serde_json::json;

use super::history::open_store;
use super::print_json;
use crate::app::AppOptions;
use crate::results::utf8_window;

/// Bytes of raw output shown by the readable form when no --limit is given.
const DEFAULT_PAGE: u64 = 4096;

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The tool_call_id.
    pub id: String,
    /// Write the raw output bytes exactly as stored to stdout.
    #[arg(long)]
    pub raw: bool,
    /// First byte of the raw output to show.
    #[arg(long, value_name = "N")]
    pub offset: Option<u64>,
    /// Bytes of raw output to show.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print the whole record as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: ShowArgs, opts: AppOptions) -> ExitCode {
    let store = match open_store(&opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aibuddy: {e}");
            return ExitCode::from(2);
        }
    };
    match show(&store, &args).await {
        Ok(code) => code,
        Err(StoreError::CallNotFound(id)) => {
            eprintln!("aibuddy: no stored call has the id `{id}`");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("aibuddy: {e}");
            ExitCode::from(1)
        }
    }
}

async fn show(store: &Store, args: &ShowArgs) -> Result<ExitCode, StoreError> {
    let rec = store
        .get_call(&args.id)
        .await?
        .ok_or_else(|| StoreError::CallNotFound(args.id.clone()))?;
    if args.raw {
        write_raw(store, args).await?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let mut value =
            serde_json::to_value(&rec).map_err(|e| StoreError::Corrupt(format!("record: {e}")))?;
        let confirms = store.confirm_records(&args.id).await?;
        value["confirm_decisions"] = serde_json::to_value(confirms)
            .map_err(|e| StoreError::Corrupt(format!("confirm records: {e}")))?;
        if args.offset.is_some() || args.limit.is_some() {
            let offset = args.offset.unwrap_or(0);
            let slice = store
                .read_raw_slice(&args.id, offset, args.limit.unwrap_or(DEFAULT_PAGE))
                .await?;
            let (text, next) = utf8_window(&slice.bytes, slice.offset);
            value["raw_slice"] = json!({
                "offset": slice.offset,
                "next_offset": (next < slice.total_len).then_some(next),
                "total_bytes": slice.total_len,
                "text": text,
            });
        }
        return Ok(print_json(&value));
    }
    let offset = args.offset.unwrap_or(0);
    let slice = store
        .read_raw_slice(&args.id, offset, args.limit.unwrap_or(DEFAULT_PAGE))
        .await?;
    let (text, next) = utf8_window(&slice.bytes, slice.offset);
    println!("tool_call_id: {}", rec.tool_call_id);
    println!("run: {}  tool: {} ({})", rec.run_id, rec.tool, rec.config);
    println!(
        "status: {}{}  started: {}  duration: {}",
        rec.status.as_str(),
        rec.stage
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default(),
        rec.started_at,
        rec.duration_ms
            .map(|d| format!("{d} ms"))
            .unwrap_or_else(|| "-".into())
    );
    if let Some(msg) = &rec.error_message {
        println!("error: {msg}");
    }
    println!("input: {}", rec.input);
    match (
        rec.compaction_state,
        &rec.recovery_pointer,
        &rec.compaction_error,
    ) {
        (aibuddy_store::CompactionState::None, ..) => {}
        (state, _, Some(err)) => println!(
            "compaction: {} [Projection stage]: {err} (the original projection stays)",
            state.as_str()
        ),
        (state, Some(p), None) => println!(
            "compaction: {} by {} (raw input and output offloaded to {p})",
            state.as_str(),
            rec.compaction_strategy.as_deref().unwrap_or("?")
        ),
        (state, None, None) => println!("compaction: {}", state.as_str()),
    }

    if let Some(model) = &rec.model_projection {
        println!("--- model projection ---\n{model}");
    }
    println!(
        "--- raw output bytes {}..{} of {}{} ---\n{text}",
        slice.offset,
        next,
        slice.total_len,
        if slice.partial { " (partial)" } else { "" }
    );
    if next < slice.total_len {
        println!(
            "--- more: aibuddy show {} --offset {next} ---",
            rec.tool_call_id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Streams the raw bytes (or the requested range) to stdout unchanged.
async fn write_raw(store: &Store, args: &ShowArgs) -> Result<(), StoreError> {
    let stdout_err = |e: std::io::Error| StoreError::Corrupt(format!("stdout: {e}"));
    if args.offset.is_some() || args.limit.is_some() {
        let slice = store
            .read_raw_slice(
                &args.id,
                args.offset.unwrap_or(0),
                args.limit.unwrap_or(u64::MAX >> 1),
            )
            .await?;
        let mut out = std::io::stdout().lock();
        out.write_all(&slice.bytes).map_err(stdout_err)?;
        return out.flush().map_err(stdout_err);
    }
    match store.raw_source(&args.id).await? {
        RawSource::Inline(bytes) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes).map_err(stdout_err)?;
            out.flush().map_err(stdout_err)
        }
        RawSource::File(path) => {
            let mut f = tokio::fs::File::open(&path)
                .await
                .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
            let mut out = tokio::io::stdout();
            tokio::io::copy(&mut f, &mut out)
                .await
                .map_err(stdout_err)?;
            tokio::io::AsyncWriteExt::flush(&mut out)
                .await
                .map_err(stdout_err)
        }
    }
}
