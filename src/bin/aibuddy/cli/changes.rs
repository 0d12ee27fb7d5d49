//! `aibuddy changes CALL_ID [--json]` and `aibuddy changes --run RUN_ID [--json]`: what a call
//! (or each checkpointed call of a run) changed in the project: per file the kind of change,
//! sizes, and a unified diff (binary files named, not diffed). File names and content come from
//! the project and from commands: printed escaped (`aibuddy_common::term`).

use std::process::ExitCode;
use std::sync::Arc;

use aibuddy_common::term;
use clap::Args;

use super::history::open_store;
use super::print_json;
use aibuddy::app::AppOptions;
use aibuddy::checkpoints::{CallChangesView, Checkpoints};

#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// The tool_call_id.
    #[arg(required_unless_present = "run", conflicts_with = "run")]
    pub call_id: Option<String>,
    /// Every checkpointed call of this run, oldest first.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Print the change sets as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The project's checkpoints on the data directory's store (no MCP server, no registry).
pub(crate) async fn open_checkpoints(opts: &AppOptions) -> Result<Arc<Checkpoints>, String> {
    let store = open_store(opts).await?;
    let (data, project) = (opts.data_dir.clone(), opts.project.clone());
    tokio::task::spawn_blocking(move || {
        // The same size cap as the calls' own snapshots (a rewind's snapshots must agree).
        let cap = aibuddy::trust::load_settings(&data, &project)
            .settings
            .checkpoints
            .max_file_bytes;
        Checkpoints::open(&data, &project, store, cap)
    })
    .await
    .map_err(|e| e.to_string())?
    .map(Arc::new)
    .map_err(|e| format!("cannot open the project's checkpoints: {e}"))
}

pub async fn run(args: ChangesArgs, opts: AppOptions) -> ExitCode {
    let cps = match open_checkpoints(&opts).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    let views = match (&args.call_id, &args.run) {
        (Some(id), _) => cps.changes_for_call(id).await.map(|v| vec![v]),
        (None, Some(run)) => cps.changes_for_run(run).await,
        (None, None) => unreachable_usage(),
    };
    let views = match views {
        Ok(v) => v,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    if args.json {
        return match &args.call_id {
            Some(_) => print_json(&views[0]),
            None => print_json(&serde_json::json!({
                "run_id": args.run,
                "calls": views,
                "not_covered": cps.not_covered(),
            })),
        };
    }
    for v in &views {
        print_view(v);
    }
    outln!("note: {}", cps.not_covered());
    ExitCode::SUCCESS
}

/// clap requires a call id or `--run`; kept as a value rather than a panic.
fn unreachable_usage() -> Result<Vec<CallChangesView>, aibuddy::checkpoints::CheckpointUseError> {
    Err(aibuddy::checkpoints::CheckpointUseError::Task(
        "give a call id or --run RUN_ID".into(),
    ))
}

fn size(s: &Option<aibuddy_checkpoint::EntryState>) -> String {
    match s {
        Some(s) if s.kind == "file" => format!("{} bytes, mode {}", s.size, s.mode),
        Some(s) => format!("{}, mode {}", s.kind, s.mode),
        None => "absent".into(),
    }
}

fn print_view(v: &CallChangesView) {
    outln!(
        "call {} ({}) in run {}{}",
        term::line(&v.call_id),
        term::line(&v.tool),
        term::line(&v.run_id),
        if v.complete {
            ""
        } else {
            " [did not finish: changes up to now]"
        }
    );
    if v.files.is_empty() && v.skipped.is_empty() {
        outln!("  no change");
    }
    for f in &v.files {
        let kind = serde_json::to_value(f.change.change)
            .ok()
            .and_then(|k| k.as_str().map(str::to_string))
            .unwrap_or_default();
        let from = f
            .change
            .from
            .as_deref()
            .map(|p| format!(" (from {})", term::line(p)))
            .unwrap_or_default();
        outln!(
            "  {kind:<15} {}{from}  [{} -> {}]{}",
            term::line(&f.change.path),
            size(&f.change.before),
            size(&f.change.after),
            if f.diff.binary { "  binary file" } else { "" }
        );
        if let Some(note) = &f.diff.note
            && !f.diff.binary
        {
            outln!("    ({})", term::line(note));
        }
        if let Some(d) = &f.diff.diff
            && !d.is_empty()
        {
            out!("{}", term::block(d));
            if !d.ends_with('\n') {
                outln!();
            }
        }
    }
    for s in &v.skipped {
        outln!(
            "  not checkpointed {}  ({})",
            term::line(&s.path),
            term::line(&s.reason)
        );
    }
}
