//! `aibuddy rewind CALL_ID [--dry-run] [--force] [--json]` and
//! `aibuddy rewind --run RUN_ID [--from CALL_ID] [--dry-run] [--force] [--json]`: put back the
//! files a call (or a run's calls from `--from` to the end, newest first) changed in the
//! project. A path changed since the call is a conflict: shown, left alone unless `--force`. A
//! rewind is itself recorded as a call (tool `rewind`) with its own change set, so it can be
//! undone with `aibuddy rewind <its id>`.
//!
//! Exit codes: 0 everything put back; 1 conflicts left alone or paths that could not be written
//! (or the call/run is unknown); 2 the store or project cannot be opened.

use std::process::ExitCode;

use aibuddy_common::term;
use clap::Args;

use super::changes::open_checkpoints;
use super::print_json;
use aibuddy::app::AppOptions;
use aibuddy::checkpoints::{RewindReport, RewindTarget};

#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The tool_call_id to rewind.
    #[arg(required_unless_present = "run", conflicts_with_all = ["run", "from"])]
    pub call_id: Option<String>,
    /// Rewind the checkpointed calls of this run, newest first.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// With --run: start at this call (it and every later call are rewound).
    #[arg(long, value_name = "CALL_ID", requires = "run")]
    pub from: Option<String>,
    /// Show what would be put back and the conflicts; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Put back paths changed since the call too (conflicts).
    #[arg(long)]
    pub force: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: RewindArgs, opts: AppOptions) -> ExitCode {
    let target = match (&args.call_id, &args.run) {
        (Some(id), _) => RewindTarget::Call(id.clone()),
        (None, Some(run)) => RewindTarget::Run {
            run_id: run.clone(),
            from: args.from.clone(),
        },
        (None, None) => {
            eprintln!("aibuddy: give a call id or --run RUN_ID");
            return ExitCode::from(2);
        }
    };
    let cps = match open_checkpoints(&opts).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    let report = match cps.rewind(&target, args.force, args.dry_run).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    let code = if report.unresolved_conflicts() > 0 || report.failures() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        let printed = print_json(&report);
        return if printed == ExitCode::SUCCESS {
            code
        } else {
            printed
        };
    }
    print_report(&report);
    code
}

fn print_report(r: &RewindReport) {
    outln!(
        "{} {} call(s), newest first{}:",
        if r.dry_run { "would rewind" } else { "rewound" },
        r.calls.len(),
        if r.force { " (forced)" } else { "" }
    );
    for c in &r.calls {
        outln!(
            "call {} ({}){}",
            term::line(&c.call_id),
            term::line(&c.tool),
            if c.complete {
                ""
            } else {
                " [did not finish: its changes up to now]"
            }
        );
        if c.actions.is_empty() && c.conflicts.is_empty() && c.not_restorable.is_empty() {
            outln!("  nothing to put back");
        }
        for a in &c.actions {
            outln!(
                "  {:<8} {}{}",
                a.action,
                term::line(&a.path),
                if a.forced {
                    " (forced over a conflict)"
                } else {
                    ""
                }
            );
        }
        for k in &c.conflicts {
            outln!(
                "  conflict {}: changed since the call (the call left {}, found {}){}",
                term::line(&k.path),
                term::line(&k.expected),
                term::line(&k.found),
                if r.force {
                    ""
                } else {
                    "; left alone (--force to put it back)"
                }
            );
        }
        for p in &c.not_restorable {
            outln!("  not checkpointed {}: cannot be put back", term::line(p));
        }
        for f in &c.failures {
            outln!(
                "  failed   {}: {}",
                term::line(&f.path),
                term::line(&f.error)
            );
        }
    }
    outln!("note: {}", r.not_covered);
    if let Some(id) = &r.rewind_call_id {
        outln!(
            "recorded as call {} (undo it with `aibuddy rewind {}`)",
            term::line(id),
            term::line(id)
        );
    }
}
