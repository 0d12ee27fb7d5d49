//! `aibuddy tools search "QUERY" [--limit N] [--json]`: the same ranking `tool_search` uses, over
//! the tools the defer decision covers (nothing is activated: a CLI invocation is not a run).

use std::process::ExitCode;

use aibuddy_common::term;
use clap::Args;
use serde::Serialize;

use super::print_json;
use aibuddy::app::AppOptions;
use aibuddy::discovery::service::Candidate;

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What the tool should do, or `select:name1,name2`.
    pub query: String,
    /// How many candidates to show.
    #[arg(long, default_value_t = 5)]
    pub limit: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct SearchReport {
    query: String,
    /// How many tools the index holds (the deferred ones).
    indexed: usize,
    candidates: Vec<Candidate>,
    unknown: Vec<String>,
}

pub async fn run(args: SearchArgs, opts: AppOptions) -> ExitCode {
    let app = match super::open_app(opts).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    // Computing the tool set refreshes the index from the current gates.
    let _ = app.toolset(&Default::default());
    let discovery = &app.capabilities.discovery;
    let indexed = discovery.index().index.len();
    let out = discovery.search(&args.query, args.limit.clamp(1, 100));
    let report = SearchReport {
        query: args.query.clone(),
        indexed,
        candidates: out.candidates,
        unknown: out.unknown,
    };
    if args.json {
        return print_json(&report);
    }
    if indexed == 0 {
        outln!(
            "nothing is deferred: every available tool is already active (see `aibuddy tools list`)"
        );
        return ExitCode::SUCCESS;
    }
    if report.candidates.is_empty() {
        outln!(
            "no deferred tool matches `{}` ({indexed} indexed)",
            term::line(&report.query)
        );
    }
    // Names and descriptions come from MCP servers: escaped, one line each.
    for (i, c) in report.candidates.iter().enumerate() {
        let desc: String = c.description.chars().take(160).collect();
        outln!(
            "{:2}. {}  ({:.2})\n    {}",
            i + 1,
            term::line(&c.name),
            c.score,
            term::line(&desc.replace('\n', " "))
        );
    }
    for u in &report.unknown {
        outln!("unknown: {}", term::line(u));
    }
    ExitCode::SUCCESS
}
