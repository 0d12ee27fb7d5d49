//! `aibuddy tools list|check|search|instructions`.

use std::process::ExitCode;

use aibuddy_common::term;
use clap::Subcommand;

use super::print_json;
use aibuddy::app::{AppOptions, check};
use aibuddy::discovery::Exposure;

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
            let app = match super::open_app(opts).await {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("aibuddy: {}", term::block(&e.to_string()));
                    return ExitCode::from(2);
                }
            };
            let text = app.instructions("cli");
            if json {
                return print_json(&serde_json::json!({ "instructions": text }));
            }
            // MCP servers' instructions and skill purposes: shown, never interpreted.
            outln!("{}", term::block(&text));
            ExitCode::SUCCESS
        }
        ToolsCommand::List { json } => {
            let app = match super::open_app(opts).await {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("aibuddy: {}", term::block(&e.to_string()));
                    return ExitCode::from(2);
                }
            };
            let tools = app.tools_list();
            if json {
                return print_json(&tools);
            }
            // Tool names, sources and reasons may come from MCP servers and project files.
            let names: Vec<String> = tools
                .iter()
                .map(|t| term::line(&t.name).into_owned())
                .collect();
            let width = names
                .iter()
                .map(|n| n.chars().count())
                .max()
                .unwrap_or(4)
                .max(4);
            outln!(
                "{:width$}  {:9}  {:11}  {:14}  SOURCE",
                "NAME",
                "EXPOSURE",
                "RISK",
                "CONFIG"
            );
            for (t, name) in tools.iter().zip(&names) {
                let exposure = match t.exposure {
                    Exposure::Active => "active",
                    Exposure::Deferred => "deferred",
                    Exposure::Absent => "absent",
                };
                outln!(
                    "{:width$}  {:9}  {:11}  {:14}  {}{}",
                    name,
                    exposure,
                    t.risk.as_str(),
                    term::line(&t.config),
                    term::line(&t.source.to_string()),
                    t.absent_reason
                        .as_ref()
                        .or(t.deferred_reason.as_ref())
                        .map(|r| format!("  ({})", term::line(r)))
                        .unwrap_or_default()
                );
            }
            // Where `execute` and the file tools run (the project's sandbox), or why none.
            let sandbox = match &app.services.sandbox {
                Ok(s) => s.location(),
                Err(reason) => format!("unavailable: {reason}"),
            };
            outln!("sandbox: {}", term::line(&sandbox));
            for p in &app.settings.problems {
                eprintln!("warning: settings: {}", term::line(&p.to_string()));
            }
            for p in &app.capabilities.skills.catalog().problems {
                eprintln!("warning: skill left out: {}", term::line(&p.to_string()));
            }
            for e in &app.capabilities.mcp_config_errors {
                eprintln!("warning: mcp config: {}", term::line(&e.to_string()));
            }
            ExitCode::SUCCESS
        }
        ToolsCommand::Check { json } => {
            let report = match check(&opts, super::bundled_skills().as_deref()) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("aibuddy: {}", term::block(&e.to_string()));
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
                outln!("ok: registry consistent; settings, skills and MCP config clean");
                return ExitCode::SUCCESS;
            }
            // Problems quote file names, fields and server text: one escaped line each.
            for p in &report.consistency {
                outln!("registry: {}", term::line(&p.to_string()));
            }
            for p in &report.settings {
                outln!("settings: {}", term::line(&p.to_string()));
            }
            for p in &report.skills {
                outln!("skills: {}", term::line(&p.to_string()));
            }
            for p in &report.mcp {
                outln!("mcp: {}", term::line(&p.to_string()));
            }
            for p in &report.trust {
                outln!("trust: {}", term::line(&p.to_string()));
            }
            ExitCode::from(1)
        }
    }
}
