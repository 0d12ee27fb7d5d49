//! `aibuddy show ID [--raw] [--offset N --limit N] [--json]`: one stored call.
//! `--raw` writes the stored raw output bytes exactly as produced (or the requested byte range)
//! to stdout when stdout is a pipe or a file; to a terminal the same bytes are shown with control
//! characters escaped (`aibuddy show ID --raw | cat` gives them unchanged). `--json` prints the
//! whole record; the default is a readable summary with the model projection and the first page of
//! the raw output, every stored string escaped (they come from commands, files, the model and MCP
//! servers).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use aibuddy_common::term;
use aibuddy_store::{RawSource, Store, StoreError};
use clap::Args;
use serde_json::json;

use super::history::open_store;
use super::print_json;
use aibuddy::app::AppOptions;
use aibuddy::results::utf8_window;

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
            eprintln!("aibuddy: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    match show(&store, &args).await {
        Ok(code) => code,
        Err(StoreError::CallNotFound(id)) => {
            eprintln!("aibuddy: no stored call has the id `{}`", term::line(&id));
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
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
        // The person's hooks that ran for the call (`docs/hooks.md`), in order.
        let hooks: Vec<serde_json::Value> = store
            .hook_runs(&args.id)
            .await?
            .into_iter()
            .map(|h| h.record)
            .collect();
        value["hooks"] = serde_json::Value::Array(hooks);
        // The call's change set (checkpoints), `null` for a call that changed nothing checkpointed
        // or has not finished (`aibuddy changes ID` computes the latter against the tree).
        value["changes"] = match store.call_changes(&args.id).await? {
            Some(c) => c
                .changes
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or(serde_json::Value::Null),
            None => serde_json::Value::Null,
        };
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
    outln!("tool_call_id: {}", term::line(&rec.tool_call_id));
    outln!(
        "run: {}  tool: {} ({})",
        term::line(&rec.run_id),
        term::line(&rec.tool),
        term::line(&rec.config)
    );
    outln!(
        "status: {}{}  started: {}  duration: {}",
        rec.status.as_str(),
        rec.stage.map(|s| format!(" [{s}]")).unwrap_or_default(),
        rec.started_at,
        rec.duration_ms
            .map(|d| format!("{d} ms"))
            .unwrap_or_else(|| "-".into())
    );
    if let Some(msg) = &rec.error_message {
        outln!("error: {}", term::block(msg));
    }
    outln!("input: {}", term::line(&rec.input.to_string()));
    for line in approval_lines(&store.confirm_records(&args.id).await?) {
        outln!("{line}");
    }
    for h in store.hook_runs(&args.id).await? {
        outln!("{}", super::run::hook_row_line(&h));
    }
    match (
        rec.compaction_state,
        &rec.recovery_pointer,
        &rec.compaction_error,
    ) {
        (aibuddy_store::CompactionState::None, ..) => {}
        (state, _, Some(err)) => outln!(
            "compaction: {} [Projection stage]: {} (the original projection stays)",
            state.as_str(),
            term::block(err)
        ),
        (state, Some(p), None) => outln!(
            "compaction: {} by {} (raw input and output offloaded to {})",
            state.as_str(),
            term::line(rec.compaction_strategy.as_deref().unwrap_or("?")),
            term::line(p)
        ),
        (state, None, None) => outln!("compaction: {}", state.as_str()),
    }

    for line in network_lines(rec.client_projection.as_ref()) {
        outln!("{line}");
    }
    if let Some(model) = &rec.model_projection {
        outln!("--- model projection ---\n{}", term::block(model));
    }
    outln!(
        "--- raw output bytes {}..{} of {}{} ---\n{}",
        slice.offset,
        next,
        slice.total_len,
        if slice.partial { " (partial)" } else { "" },
        term::block(&text)
    );
    if next < slice.total_len {
        outln!(
            "--- more: aibuddy show {} --offset {next} ---",
            term::line(&rec.tool_call_id)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// How the call was approved: the standing policy that decided without asking (`approval: ran
/// without asking: auto mode, confined, checkpointed`), or the person's answer (`approval: asked,
/// approved`). Every stored string is escaped.
fn approval_lines(records: &[aibuddy_store::ConfirmRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| match &r.policy {
            Some(why) => format!("approval: {} ({})", term::line(why), r.decision.as_str()),
            None => format!("approval: asked, {}", r.decision.as_str()),
        })
        .collect()
}

/// The network decisions stored with an `execute` call (its client projection's `network.events`),
/// one line each: host and port (from the command: escaped), allowed or refused, the deciding
/// rule (`asked: allowed once`, `asked: denied`, an `exec.network` entry), the reason and the
/// connection count.
fn network_lines(client: Option<&serde_json::Value>) -> Vec<String> {
    let Some(events) = client
        .and_then(|c| c.pointer("/network/events"))
        .and_then(|e| e.as_array())
    else {
        return Vec::new();
    };
    events
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().map(|s| term::line(s).into_owned());
            let verdict = if e["allowed"].as_bool() == Some(true) {
                "allowed"
            } else {
                "refused"
            };
            let mut line = format!(
                "network: {}:{} {verdict}",
                text("host").unwrap_or_default(),
                e["port"].as_u64().unwrap_or(0)
            );
            if let Some(rule) = text("rule") {
                line.push_str(&format!(" [{rule}]"));
            }
            if let Some(reason) = text("reason") {
                line.push_str(&format!(" ({reason})"));
            }
            line.push_str(&format!(
                ", {} connection(s)",
                e["connections"].as_u64().unwrap_or(0)
            ));
            line
        })
        .collect()
}

/// Where `--raw` bytes go: unchanged to a pipe or file, escaped to a terminal.
struct RawOut {
    out: std::io::Stdout,
    escape: Option<term::BlockStream>,
}

impl RawOut {
    fn new() -> Self {
        let out = std::io::stdout();
        let escape = out.is_terminal().then(term::BlockStream::new);
        RawOut { out, escape }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut out = self.out.lock();
        match &mut self.escape {
            None => out.write_all(bytes),
            Some(stream) => out.write_all(stream.push(bytes).as_bytes()),
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        let mut out = self.out.lock();
        if let Some(stream) = &mut self.escape {
            out.write_all(stream.finish().as_bytes())?;
        }
        out.flush()
    }
}

/// Streams the raw bytes (or the requested range) to stdout: byte for byte to a pipe or a file,
/// with control characters escaped to a terminal.
async fn write_raw(store: &Store, args: &ShowArgs) -> Result<(), StoreError> {
    let stdout_err = |e: std::io::Error| StoreError::Corrupt(format!("stdout: {e}"));
    let mut out = RawOut::new();
    if args.offset.is_some() || args.limit.is_some() {
        let slice = store
            .read_raw_slice(
                &args.id,
                args.offset.unwrap_or(0),
                args.limit.unwrap_or(u64::MAX >> 1),
            )
            .await?;
        out.write(&slice.bytes).map_err(stdout_err)?;
        return out.finish().map_err(stdout_err);
    }
    match store.raw_source(&args.id).await? {
        RawSource::Inline(bytes) => out.write(&bytes).map_err(stdout_err)?,
        RawSource::File(path) => {
            use tokio::io::AsyncReadExt;
            let mut f = tokio::fs::File::open(&path)
                .await
                .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = f
                    .read(&mut buf)
                    .await
                    .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
                if n == 0 {
                    break;
                }
                out.write(&buf[..n]).map_err(stdout_err)?;
            }
        }
    }
    out.finish().map_err(stdout_err)
}
