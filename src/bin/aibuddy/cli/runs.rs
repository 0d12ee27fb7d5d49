//! `aibuddy runs [--json]` (agent runs, newest first) and `aibuddy runs show RUN_ID [--json]`
//! (one run's stored conversation). Everything stored came from a model, a tool or a project:
//! printed escaped.

use std::process::ExitCode;

use aibuddy_common::term;
use aibuddy_store::{Conversation, MessageRecord, RunListRow};
use clap::{Args, Subcommand};

use super::history::open_store;
use super::print_json;
use aibuddy::app::AppOptions;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
    /// Page size.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Show one run's stored conversation.
    Show {
        run_id: String,
        /// Print the conversation as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// One listing line (pure).
pub fn row_line(r: &RunListRow) -> String {
    format!(
        "{}  {}  {}/{}  {}  steps {}  tools {}  {}",
        term::line(&r.run_id),
        r.started_at,
        term::line(r.provider.as_deref().unwrap_or("-")),
        term::line(r.model.as_deref().unwrap_or("-")),
        r.status.as_str(),
        r.steps,
        r.tool_calls,
        term::line(r.title.as_deref().unwrap_or(""))
    )
}

/// The readable text of a stored message's content: its text parts, or its JSON.
fn message_text(m: &MessageRecord) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&m.content) else {
        return m.content.clone();
    };
    if let Some(t) = v.get("text").and_then(|t| t.as_str()) {
        return t.to_string();
    }
    v.to_string()
}

/// The conversation as text (pure; every stored string escaped).
pub fn render(c: &Conversation) -> String {
    let r = &c.run;
    let mut s = format!(
        "run {}  {}/{}  {}  steps {}  tools {}\n",
        term::line(&r.run_id),
        term::line(r.provider.as_deref().unwrap_or("-")),
        term::line(r.model.as_deref().unwrap_or("-")),
        r.status.map(|st| st.as_str()).unwrap_or("-"),
        r.steps,
        r.tool_calls
    );
    if let Some(e) = &r.error_message {
        s.push_str(&format!(
            "error ({}): {}\n",
            term::line(r.stage.as_deref().unwrap_or("-")),
            term::line(e)
        ));
    }
    for m in &c.messages {
        s.push_str(&format!("\n── {} {} ──\n", m.seq, m.role.as_str()));
        if let Some(res) = &m.result {
            s.push_str(&format!(
                "[{} {} {}]\n{}\n",
                term::line(m.tool_call_id.as_deref().unwrap_or("")),
                term::line(&res.tool),
                res.status.as_str(),
                term::block(res.model_projection.as_deref().unwrap_or(""))
            ));
            continue;
        }
        s.push_str(&term::block(&message_text(m)));
        s.push('\n');
        for call in &m.requested_calls {
            s.push_str(&format!(
                "[call {} {}]\n",
                term::line(&call.tool_call_id),
                term::line(&call.tool)
            ));
        }
    }
    s
}

pub async fn run(args: RunsArgs, opts: AppOptions) -> ExitCode {
    let store = match open_store(&opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    match args.command {
        None => match store.list_runs(args.limit, None).await {
            Ok(rows) if args.json => print_json(&rows),
            Ok(rows) => {
                for r in &rows {
                    println!("{}", row_line(r));
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("aibuddy: cannot list runs: {}", term::line(&e.to_string()));
                ExitCode::from(1)
            }
        },
        Some(RunsCommand::Show { run_id, json }) => match store.get_run(&run_id).await {
            Ok(None) => {
                eprintln!("aibuddy: no run `{}`", term::line(&run_id));
                ExitCode::from(2)
            }
            Err(e) => {
                eprintln!(
                    "aibuddy: cannot read the run: {}",
                    term::line(&e.to_string())
                );
                ExitCode::from(1)
            }
            Ok(Some(_)) => match store.conversation(&run_id).await {
                Ok(c) if json || args.json => print_json(&c),
                Ok(c) => {
                    print!("{}", render(&c));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!(
                        "aibuddy: cannot read the run: {}",
                        term::line(&e.to_string())
                    );
                    ExitCode::from(1)
                }
            },
        },
    }
}
