//! `aibuddy history [--run ID] [--tool NAME] [--status S] [--limit N] [--search TEXT] [--before ID] [--json]`:
//! stored calls, newest first, from the SQLite store in the data directory.

use std::process::ExitCode;

use aibuddy_common::term;
use aibuddy_store::{CallStatus, HistoryFilter, HistoryRow, Store};
use clap::Args;

use super::print_json;
use aibuddy::app::AppOptions;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only calls of this run.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Only calls of this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only calls with this status: ok, error, cancelled, rejected, interrupted, running.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Page size.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,
    /// Full-text search over tool names, inputs and display text.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// Only calls older than this call id (next page).
    #[arg(long, value_name = "ID")]
    pub before: Option<String>,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Opens the store (runs start-up recovery) on a blocking thread.
pub(crate) async fn open_store(opts: &AppOptions) -> Result<Store, String> {
    let dir = opts.data_dir.clone();
    tokio::task::spawn_blocking(move || Store::open(&dir))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| {
            format!(
                "cannot open the call store in {}: {e}",
                opts.data_dir.display()
            )
        })
}

pub async fn run(args: HistoryArgs, opts: AppOptions) -> ExitCode {
    let status = match args.status.as_deref().map(|s| (s, CallStatus::parse(s))) {
        None => None,
        Some((_, Some(st))) => Some(st),
        Some((s, None)) => {
            eprintln!(
                "aibuddy: unknown status `{}` (expected one of: {})",
                term::line(s),
                CallStatus::ALL.map(CallStatus::as_str).join(", ")
            );
            return ExitCode::from(2);
        }
    };
    let store = match open_store(&opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    let filter = HistoryFilter {
        run_id: args.run,
        tool: args.tool,
        status,
        search: args.search,
        limit: Some(args.limit),
        before: args.before,
    };
    let rows = match store.history(filter).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    if args.json {
        return print_json(&with_hooks(&store, &rows).await);
    }
    if rows.is_empty() {
        eprintln!("aibuddy: no stored calls match");
    }
    for row in &rows {
        outln!("{}", human_line(row));
    }
    ExitCode::SUCCESS
}

/// The rows as JSON, each with the hooks that ran for its call (`hooks`, `docs/hooks.md`).
async fn with_hooks(
    store: &aibuddy_store::Store,
    rows: &[aibuddy_store::HistoryRow],
) -> serde_json::Value {
    let ids: Vec<String> = rows.iter().map(|r| r.tool_call_id.clone()).collect();
    let hooks = match store.hook_runs_of_calls(&ids).await {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("hook runs not read: {e}");
            Vec::new()
        }
    };
    let values = rows
        .iter()
        .map(|row| {
            let mut v = serde_json::to_value(row).unwrap_or(serde_json::Value::Null);
            let mine: Vec<serde_json::Value> = hooks
                .iter()
                .filter(|h| h.tool_call_id.as_deref() == Some(row.tool_call_id.as_str()))
                .map(|h| h.record.clone())
                .collect();
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("hooks".into(), serde_json::Value::Array(mine));
            }
            v
        })
        .collect();
    serde_json::Value::Array(values)
}

/// One readable row. The tool name, ids and input come from the model, the project or an MCP
/// server: every field is escaped (cut to 60 characters before escaping, so the cut never splits
/// an escape).
fn human_line(r: &HistoryRow) -> String {
    let input = match &r.input {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let input: String = if input.chars().count() > 60 {
        input.chars().take(57).chain("...".chars()).collect()
    } else {
        input
    };
    format!(
        "{}  {:<11} {:<16} {:>7}  {}  {}{}",
        r.started_at,
        r.status.as_str(),
        term::line(&r.tool),
        r.duration_ms
            .map(|d| format!("{d}ms"))
            .unwrap_or_else(|| "-".into()),
        term::line(&r.tool_call_id),
        term::line(&input),
        r.stage.map(|s| format!("  [{s}]")).unwrap_or_default()
    )
}
