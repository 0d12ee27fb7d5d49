//! `aibuddy tools list|check|search|instructions`.

use std::process::ExitCode;

use clap::Subcommand;

use super::print_json;
use crate::app::{App, AppOptions, check};
use crate::discovery::Exposure;

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool the current run would have (absent ones with their reason).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Rank the deferred tools for a query, as `tool_search` does.
    Search(super::search::SearchArgs),
    /// Run the startup consistency check; exits non-zero listing every problem.
    Check {
        #[arg(long)]
        json: bool,
    },
    /// The runtime instructions a new run's system prompt would get from its active tools.
    Instructions {
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(cmd: ToolsCommand, opts: AppOptions) -> ExitCode {
    match cmd {
        ToolsCommand::Search(args) => super::search::run(args, opts).await,
        ToolsCommand::Instructions { json } => {
            let app = match App::open(opts).await {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("aibuddy: {e}");
                    return ExitCode::from(2);
                }
            };
            let text = app.instructions("cli");
            if json {
                return print_json(&serde_json::json!({ "instructions": text }));
            }
            println!("{text}");
            ExitCode::SUCCESS
        }
        ToolsCommand::List { json } => {
            let app = match App::open(opts).await {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("aibuddy: {e}");
                    return ExitCode::from(2);
                }
            };
            let tools = app.tools_list();
            if json {
                return print_json(&tools);
            }
            let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
            println!(
                "{:width$}  {:9}  {:11}  {:14}  SOURCE",
                "NAME", "EXPOSURE", "RISK", "CONFIG"
            );
            for t in &tools {
                let exposure = match t.exposure {
                    Exposure::Active => "active",
                    Exposure::Deferred => "deferred",
                    Exposure::Absent => "absent",
                };
                println!(
                    "{:width$}  {:9}  {:11}  {:14}  {}{}",
                    t.name,
                    exposure,
                    t.risk.as_str(),
                    t.config,
                    t.source,
                    t.absent_reason
                        .as_ref()
                        .or(t.deferred_reason.as_ref())
                        .map(|r| format!("  ({r})"))
                        .unwrap_or_default()
                );
            }
            for p in &app.settings.problems {
                eprintln!("warning: settings: {p}");
            }
            for p in &app.capabilities.skills.catalog().problems {
                eprintln!("warning: skill left out: {p}");
            }
            for e in &app.capabilities.mcp_config_errors {
                eprintln!("warning: mcp config: {e}");
            }
            ExitCode::SUCCESS
        }
        ToolsCommand::Check { json } => {
            let report = match check(&opts) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("aibuddy: {e}");
                    return ExitCode::from(2);
                }
            };
            if json {
                let code = print_json(&report);
                return if report.is_ok() {
                    code
                } else {
                    ExitCode::from(1)
                };
            }
            if report.is_ok() {
                println!("ok: registry consistent; settings, skills and MCP config clean");
                return ExitCode::SUCCESS;
            }
            // Problems quote project files (server names, paths): escaped for the terminal.
            let safe = |s: String| aibuddy_common::term::line(&s).into_owned();
            for p in &report.consistency {
                println!("registry: {}", safe(p.to_string()));
            }
            for p in &report.settings {
                println!("settings: {}", safe(p.to_string()));
            }
            for p in &report.skills {
                println!("skills: {}", safe(p.clone()));
            }
            for p in &report.mcp {
                println!("mcp: {}", safe(p.clone()));
            }
            for p in &report.trust {
                println!("trust: {}", safe(p.clone()));
            }
            ExitCode::from(1)
        }
    }
}
