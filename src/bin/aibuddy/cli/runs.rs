//! `aibuddy runs [--json]` (agent runs, newest first) and `aibuddy runs show RUN_ID [--json]`
//! (one run's stored conversation; with `--next-request`, the exact JSON body the next step
//! would send, key-free). Everything stored came from a model, a tool or a project: printed
//! escaped.

use std::process::ExitCode;

use aibuddy_common::term;
use aibuddy_store::{Conversation, RunListRow};
use clap::{Args, Subcommand};

use std::sync::Arc;

use aibuddy::agent::stored_route::route_for;
use aibuddy::agent::{Agent, AgentOptions};
use aibuddy::app::AppOptions;
use aibuddy::confirm::RejectAll;
use aibuddy::contract::Stage;
use aibuddy_provider::{ApiKey, BaseUrlOverrides, HttpProvider, KeyStore};

use super::history::open_store;
use super::print_json;

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
        /// Print the exact JSON body the next step would send to the provider (rebuilt from
        /// storage by the run loop's own code; keys never appear: they only go in headers).
        #[arg(long)]
        next_request: bool,
    },
}

/// `runs show RUN_ID --next-request`: the run's provider and model (as `run --continue` would
/// pick them), the project opened like `run` does, and the loop's own request building.
async fn next_request(run_id: &str, opts: AppOptions) -> ExitCode {
    let app = match super::open_app(opts).await {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("aibuddy: {} (stage Discovery)", term::block(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let Some(store) = app.persistence.as_ref().map(|p| p.store.clone()) else {
        eprintln!("aibuddy: the store is not open");
        return ExitCode::from(2);
    };
    let stored = match store.get_run(run_id).await {
        Ok(Some(r)) if r.status.is_some() => r,
        Ok(_) => {
            eprintln!("aibuddy: no agent run `{}`", term::line(run_id));
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!(
                "aibuddy: cannot read the run: {}",
                term::line(&e.to_string())
            );
            return ExitCode::from(1);
        }
    };
    let route = match route_for(
        &app.settings.settings.providers,
        Some(&stored),
        None,
        None,
        &BaseUrlOverrides::from_env(),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "aibuddy: {} (stage {})",
                term::line(&e.to_string()),
                e.stage()
            );
            return ExitCode::from(2);
        }
    };
    // Printing needs no key (bodies never carry one); a placeholder satisfies the constructor.
    let key = KeyStore::from_env()
        .key_for_route(&route)
        .map(|(k, _)| k)
        .or_else(|| ApiKey::new("not-sent"));
    let provider = match HttpProvider::new(route, key) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "aibuddy: {} (stage {})",
                term::line(&e.to_string()),
                e.stage()
            );
            return ExitCode::from(2);
        }
    };
    let agent = Agent::new(
        app.clone(),
        Arc::new(provider),
        Arc::new(RejectAll("runs show does not run tools".into())),
        AgentOptions::from_settings(&app.settings.settings),
    );
    match agent.next_request_body(run_id).await {
        Ok(body) => print_json(&body),
        Err(e) => {
            eprintln!(
                "aibuddy: {} (stage {})",
                term::block(&e.to_string()),
                e.stage()
            );
            ExitCode::from(if e.stage() == Stage::Parameters { 2 } else { 1 })
        }
    }
}

/// One listing line (pure). A subagent run is marked `↳` and names its parent run and call.
pub fn row_line(r: &RunListRow) -> String {
    let parent = match (&r.parent_run_id, &r.parent_call_id) {
        (Some(run), call) => format!(
            "  (subagent of {} via {})",
            term::line(run),
            term::line(call.as_deref().unwrap_or("-"))
        ),
        _ => String::new(),
    };
    format!(
        "{}{}  {}  {}/{}  {}  steps {}  tools {}  {}{parent}",
        if r.parent_run_id.is_some() {
            "  ↳ "
        } else {
            ""
        },
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

/// Children listed under their parent when the parent is on the page (a child whose parent is
/// not stays where it is, still marked). Pure.
pub fn nest(rows: &[RunListRow]) -> Vec<&RunListRow> {
    let on_page = |id: &str| rows.iter().any(|r| r.run_id == id);
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        match &r.parent_run_id {
            Some(p) if on_page(p) => continue,
            _ => {}
        }
        out.push(r);
        // Oldest child first under its parent.
        let mut kids: Vec<&RunListRow> = rows
            .iter()
            .filter(|k| k.parent_run_id.as_deref() == Some(r.run_id.as_str()))
            .collect();
        kids.reverse();
        out.extend(kids);
    }
    out
}

/// The lines of `runs show` naming a run's parent and its subagent runs (pure).
pub fn family_lines(c: &Conversation, children: &[(String, Option<String>)]) -> String {
    let mut s = String::new();
    if let Some(p) = &c.run.parent_run_id {
        s.push_str(&format!(
            "subagent of run {} (call {})\n",
            term::line(p),
            term::line(c.run.parent_call_id.as_deref().unwrap_or("-"))
        ));
    }
    for (id, call) in children {
        s.push_str(&format!(
            "subagent run {} (started by call {})\n",
            term::line(id),
            term::line(call.as_deref().unwrap_or("-"))
        ));
    }
    s
}

/// The conversation as text (pure; every stored string escaped), with the run's hook runs: its
/// own (`run_start` first, the others last) and each call's after the call's result.
pub fn render(c: &Conversation, hooks: &[aibuddy_store::HookRunRow]) -> String {
    let hook_lines = |s: &mut String, pick: &dyn Fn(&aibuddy_store::HookRunRow) -> bool| {
        for h in hooks.iter().filter(|h| pick(h)) {
            s.push_str(&super::run::hook_row_line(h));
            s.push('\n');
        }
    };
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
            r.stage.map_or("-", |s| s.as_str()),
            term::line(e)
        ));
    }
    if let Some(reason) = &r.stop_reason {
        s.push_str(&format!("stop reason: {}\n", term::line(reason)));
    }
    hook_lines(&mut s, &|h| {
        h.tool_call_id.is_none() && h.event == "run_start"
    });
    for sum in &c.summaries {
        s.push_str(&format!(
            "\n── summary of messages {}..{} (the next requests send it instead; the originals \
follow) ──\n{}\n",
            sum.covers_from,
            sum.covers_to,
            term::block(&sum.text)
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
            let id = m.tool_call_id.as_deref();
            hook_lines(&mut s, &|h| id.is_some() && h.tool_call_id.as_deref() == id);
            continue;
        }
        let (text, calls) = aibuddy::host::stored_messages::text_and_calls(m);
        s.push_str(&term::block(&text));
        s.push('\n');
        for call in &calls {
            s.push_str(&format!(
                "[call {} {}]\n",
                term::line(&call.tool_call_id),
                term::line(&call.tool)
            ));
        }
    }
    hook_lines(&mut s, &|h| {
        h.tool_call_id.is_none() && h.event != "run_start"
    });
    s
}

pub async fn run(args: RunsArgs, opts: AppOptions) -> ExitCode {
    if let Some(RunsCommand::Show {
        run_id,
        next_request: true,
        ..
    }) = &args.command
    {
        return next_request(run_id, opts).await;
    }
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
                for r in nest(&rows) {
                    outln!("{}", row_line(r));
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("aibuddy: cannot list runs: {}", term::line(&e.to_string()));
                ExitCode::from(1)
            }
        },
        Some(RunsCommand::Show { run_id, json, .. }) => match store.get_run(&run_id).await {
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
                    let children = store.child_runs(&run_id).await.unwrap_or_default();
                    // Hook runs that cannot be read leave the conversation shown without them.
                    let hooks = store.run_hook_runs(&run_id).await.unwrap_or_default();
                    let text = render(&c, &hooks);
                    // The family lines go right after the run's header line.
                    let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
                    out!("{head}\n{}{rest}", family_lines(&c, &children));
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

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy_store::RunStatus;

    fn row(id: &str, parent: Option<&str>) -> RunListRow {
        RunListRow {
            run_id: id.into(),
            title: None,
            provider: None,
            model: None,
            status: RunStatus::Completed,
            started_at: String::new(),
            started_at_ms: 0,
            steps: 0,
            tool_calls: 0,
            parent_run_id: parent.map(str::to_string),
            parent_call_id: parent.map(|p| format!("{p}:toolu_1")),
        }
    }

    #[test]
    fn children_follow_their_parent_oldest_first_and_orphans_stay_marked() {
        // Newest first, as the store lists them.
        let rows = vec![
            row("c2", Some("p")),
            row("c1", Some("p")),
            row("p", None),
            row("orphan", Some("gone")),
        ];
        let order: Vec<&str> = nest(&rows).iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(order, ["p", "c1", "c2", "orphan"]);
        let line = row_line(&rows[3]);
        assert!(line.starts_with("  ↳ orphan"), "{line}");
        assert!(
            line.ends_with("(subagent of gone via gone:toolu_1)"),
            "{line}"
        );
        assert!(!row_line(&rows[2]).contains("subagent"));
    }
}
