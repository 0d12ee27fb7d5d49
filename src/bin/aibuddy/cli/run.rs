//! `aibuddy run [PROMPT] [--provider NAME] [--model ID] [--continue RUN_ID] [--max-steps N]
//! [--yes] [--json]`: a model drives the tool plane.
//!
//! The provider comes from settings `providers` (`--provider` or `providers.default`), the base
//! URL may be overridden by `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`, the key comes from the
//! keyring or `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` (never printed). Human output streams the
//! assistant text to stdout and short tool cards to stderr, all escaped; `--json` prints one
//! `RunEvent` per line (JSON Lines, each with its `type`).

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use aibuddy_common::term;
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{ask, prompt};
use aibuddy::agent::{Agent, AgentOptions, RunEvent, RunEventSink, RunStart, RunStatus};
use aibuddy::app::{App, AppOptions};
use aibuddy::contract::Stage;
use aibuddy::plane::PlaneOptions;
use aibuddy_provider::{BaseUrlOverrides, HttpProvider, KeyStore, ProviderError};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt (default: read from stdin).
    pub prompt: Option<String>,
    /// The provider entry of settings `providers` (default: `providers.default`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Override the entry's model.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Resume a stored run (an interrupted one included).
    #[arg(long = "continue", value_name = "RUN_ID")]
    pub continue_run: Option<String>,
    /// Bound on model steps of this run.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Approve every confirmation of this run.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON Lines, one run event per line.
    #[arg(long)]
    pub json: bool,
    /// The approval mode of this run: ask, auto or read-only (the project's own settings may
    /// still narrow it).
    #[arg(long, value_name = "MODE")]
    pub approvals: Option<aibuddy::approvals::ApprovalMode>,
}

/// Prints run events: JSON Lines on stdout, or text on stdout and tool cards on stderr.
struct PrintSink {
    json: bool,
}

/// The card line of a tool event (pure; every untrusted part escaped).
pub fn card(event: &RunEvent) -> Option<String> {
    match event {
        RunEvent::ToolCall { tool, input, .. } => {
            let target = [
                "path",
                "command",
                "file_path",
                "query",
                "pattern",
                "question",
                "description",
            ]
            .iter()
            .find_map(|k| input.get(*k).and_then(|v| v.as_str()))
            .unwrap_or("");
            let target: String = target.chars().take(120).collect();
            Some(format!(
                "[tool] {} {}",
                term::line(tool),
                term::line(&target)
            ))
        }
        RunEvent::ToolResult {
            tool_call_id,
            status,
            stage,
            hooks,
            ..
        } => {
            let mut out = format!(
                "[tool] {} {}{}",
                term::line(tool_call_id),
                status.as_str(),
                stage.map(|s| format!(" (stage {s})")).unwrap_or_default()
            );
            for h in hooks {
                out.push('\n');
                out.push_str(&hook_line(h));
            }
            Some(out)
        }
        RunEvent::Hook { hook } => Some(hook_line(hook)),
        RunEvent::Retry {
            step,
            attempt,
            delay_ms,
            reason,
        } => Some(format!(
            "[retry] step {step} attempt {attempt} in {delay_ms} ms (this step's text so far is discarded): {}",
            term::line(reason)
        )),
        RunEvent::Compaction {
            covers_from,
            covers_to,
        } => Some(format!(
            "[compaction] messages {covers_from}..{covers_to} summarized"
        )),
        RunEvent::Subagent {
            parent_tool_call_id,
            event,
        } => subagent_card(parent_tool_call_id, event),
        _ => None,
    }
}

/// A subagent's event under its parent's `agent` card: its start and end, and its own cards
/// indented (its streamed text is not the parent's answer and is not printed).
fn subagent_card(parent_call: &str, event: &RunEvent) -> Option<String> {
    match event {
        RunEvent::RunStarted { run_id, .. } => Some(format!(
            "[subagent {}] started by {}",
            term::line(run_id),
            term::line(parent_call)
        )),
        RunEvent::RunFinished {
            run_id,
            status,
            stage,
            ..
        } => Some(format!(
            "[subagent {}] {}{}",
            term::line(run_id),
            status.as_str(),
            stage.map(|s| format!(" (stage {s})")).unwrap_or_default()
        )),
        other => card(other).map(|c| {
            c.lines()
                .map(|l| format!("  │ {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }),
    }
}

/// A stored hook run as a line: the core's record when it reads, else its columns.
pub fn hook_row_line(h: &aibuddy_store::HookRunRow) -> String {
    match serde_json::from_value::<aibuddy::hooks::HookRun>(h.record.clone()) {
        Ok(run) => hook_line(&run),
        Err(_) => format!(
            "[hook] {} {} ({} ms)",
            term::line(&h.event),
            term::line(&h.outcome),
            h.duration_ms
        ),
    }
}

/// One hook run on a card: event, command, outcome, exit, time, and the reason, note or problem
/// (the command and its output are untrusted for a terminal: escaped).
pub fn hook_line(h: &aibuddy::hooks::HookRun) -> String {
    let command: String = h.command.chars().take(80).collect();
    let outcome = serde_json::to_value(h.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let exit = h
        .exit_code
        .map(|c| format!("exit {c}, "))
        .unwrap_or_default();
    let said = [
        h.decision.as_ref().map(|d| format!("decision {d}")),
        h.reason.as_ref().map(|r| format!("reason: {r}")),
        h.note.as_ref().map(|n| format!("note: {n}")),
        h.problem.as_ref().map(|p| format!("problem: {p}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    let said: String = said.chars().take(300).collect();
    format!(
        "[hook] {} `{}` {outcome} ({exit}{} ms){}",
        term::line(&h.event),
        term::line(&command),
        h.duration_ms,
        if said.is_empty() {
            String::new()
        } else {
            format!(": {}", term::line(&said))
        }
    )
}

impl RunEventSink for PrintSink {
    fn emit(&self, event: RunEvent) {
        if self.json {
            if let Ok(s) = serde_json::to_string(&event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", term::json(&s));
                let _ = out.flush();
            }
            return;
        }
        match &event {
            RunEvent::TextDelta { text } => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(term::block(text).as_bytes());
                let _ = out.flush();
            }
            RunEvent::RunStarted {
                run_id,
                provider,
                model,
                ..
            } => eprintln!(
                "[run {}] {} {}",
                term::line(run_id),
                term::line(provider),
                term::line(model)
            ),
            other => {
                if let Some(line) = card(other) {
                    eprintln!("\n{line}");
                }
            }
        }
    }
}

/// The line that says why a run's last answer is not a finished one (`stop_reason` of the
/// outcome); the reason is the provider's word, escaped for the terminal.
pub fn stop_note(run_id: &str, stop_reason: &str) -> String {
    let what = match stop_reason {
        "max_tokens" => "the model's answer was cut at its output limit (max_tokens)".to_string(),
        "refusal" => "the model refused".to_string(),
        "pause_turn" => {
            "the model's turn is still paused after the automatic continuations (pause_turn); \
             continue the run to resume it"
                .to_string()
        }
        other => format!("the model stopped for a reason other than finishing: {other}"),
    };
    format!("aibuddy: run {}: {}", term::line(run_id), term::line(&what))
}

/// A run that could not start: the message names the stage.
fn fail(stage: Stage, message: &str, code: u8) -> ExitCode {
    eprintln!("aibuddy: {} (stage {stage})", term::block(message));
    ExitCode::from(code)
}

/// The exit code of a finished run (as `call`: 0 completed, 1 error or bound reached, 3 rejected
/// is per call and does not end a run, 130 cancelled).
/// The lines saying which background processes the end of the run stopped (command escaped).
pub fn stopped_lines(stopped: &[aibuddy::tools::process::ProcInfo]) -> Vec<String> {
    stopped
        .iter()
        .map(|p| {
            format!(
                "aibuddy: stopped background process {} at the end of the run: {}",
                term::line(&p.process_id),
                term::line(&p.command)
            )
        })
        .collect()
}

pub fn exit_code(status: RunStatus) -> ExitCode {
    match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Cancelled => ExitCode::from(130),
        _ => ExitCode::from(1),
    }
}

fn read_prompt(args: &RunArgs) -> Result<String, String> {
    if let Some(p) = &args.prompt {
        return Ok(p.clone());
    }
    if args.continue_run.is_some() && std::io::stdin().is_terminal() {
        return Ok(String::new());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    Ok(text.trim_end().to_string())
}

/// The provider of this run, from settings, flags and the environment.
async fn provider_for(app: &App, args: &RunArgs) -> Result<HttpProvider, ProviderError> {
    // A continued run keeps its stored provider and model unless a flag names others.
    let stored = match (&args.continue_run, &app.persistence) {
        (Some(id), Some(p)) => p.store.get_run(id).await.ok().flatten(),
        _ => None,
    };
    let route = aibuddy::agent::stored_route::route_for(
        &app.settings.settings.providers,
        stored.as_ref(),
        args.provider.as_deref(),
        args.model.as_deref(),
        &BaseUrlOverrides::from_env(),
    )?;
    let key = KeyStore::from_env().key_for_route(&route).map(|(k, _)| k);
    HttpProvider::new(route, key)
}

pub async fn run(args: RunArgs, opts: AppOptions) -> ExitCode {
    let prompt_text = match read_prompt(&args) {
        Ok(p) => p,
        Err(e) => return fail(Stage::Parameters, &e, 2),
    };
    if prompt_text.trim().is_empty() && args.continue_run.is_none() {
        return fail(
            Stage::Parameters,
            "a run needs a prompt (argument or stdin)",
            2,
        );
    }
    // A run never waits for MCP servers still connecting: `tool_search` waits for them instead.
    let plane = PlaneOptions {
        mcp_token_vault: Some(Arc::new(aibuddy::plane::KeyringVault)),
        bundled_skills: super::bundled_skills(),
        ..PlaneOptions::for_runs()
    };
    let mut app = match App::open_with(opts, plane).await {
        Ok(a) => a,
        Err(e) => return fail(Stage::Discovery, &e.to_string(), 2),
    };
    super::approvals::choose_first_time(&mut app, args.approvals, args.json);
    if !args.json {
        eprintln!(
            "aibuddy: {}",
            super::approvals::banner(&app.settings.settings.approvals)
        );
    }
    let provider = match provider_for(&app, &args).await {
        Ok(p) => p,
        Err(e) => return fail(e.stage(), &e.to_string(), 2),
    };
    let app = Arc::new(app);
    // `ask_user_question` and MCP elicitations of the run: the terminal, or nobody.
    let agent = Agent::new(
        app.clone(),
        Arc::new(provider),
        prompt::broker_in(args.yes, app.rule_book()),
        AgentOptions::from_settings(&app.settings.settings),
    )
    .with_human(ask::human_broker());
    let cancel = CancellationToken::new();
    super::interrupt::cancel_on_signals(cancel.clone());
    let sink = Arc::new(PrintSink { json: args.json });
    let start = RunStart {
        prompt: prompt_text,
        max_steps: args.max_steps,
        continue_run: args.continue_run.clone(),
    };
    let outcome = match agent.run(start, cancel.clone(), sink).await {
        Ok(o) => o,
        Err(e) => {
            let code = if matches!(e.stage(), Stage::Parameters) {
                2
            } else {
                1
            };
            return fail(e.stage(), &e.to_string(), code);
        }
    };
    if !args.json {
        outln!();
        if let Some(reason) = &outcome.stop_reason {
            eprintln!("{}", stop_note(&outcome.run_id, reason));
        }
        if outcome.status != RunStatus::Completed {
            eprintln!(
                "aibuddy: run {} {}{}{}",
                term::line(&outcome.run_id),
                outcome.status.as_str(),
                outcome
                    .stage
                    .map(|s| format!(", stage {s}"))
                    .unwrap_or_default(),
                outcome
                    .error
                    .as_deref()
                    .map(|m| format!(": {}", term::line(m)))
                    .unwrap_or_default()
            );
        }
    }
    // Said in both modes (on stderr: the `--json` lines stay events).
    for line in stopped_lines(&outcome.stopped_processes) {
        eprintln!("{line}");
    }
    super::settle_precompaction(&app, &cancel).await;
    exit_code(outcome.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::events::CallStatus;
    use serde_json::json;

    #[test]
    fn a_stop_note_names_the_reason_and_escapes_unknown_ones() {
        assert_eq!(
            stop_note("r1", "max_tokens"),
            "aibuddy: run r1: the model's answer was cut at its output limit (max_tokens)"
        );
        assert_eq!(
            stop_note("r1", "refusal"),
            "aibuddy: run r1: the model refused"
        );
        assert_eq!(
            stop_note("r1", "odd\u{1b}[2J"),
            "aibuddy: run r1: the model stopped for a reason other than finishing: odd\\e[2J"
        );
    }

    #[test]
    fn a_tool_card_escapes_the_tool_and_target() {
        let c = card(&RunEvent::ToolCall {
            tool_call_id: "t1".into(),
            tool: "read\u{1b}[2J".into(),
            input: json!({"path": "a\rb"}),
        })
        .unwrap();
        assert_eq!(c, "[tool] read\\e[2J a\\rb");
        let r = card(&RunEvent::ToolResult {
            tool_call_id: "t1".into(),
            status: CallStatus::Rejected,
            stage: Some(Stage::Authorization),
            model: "x".into(),
            duration_ms: 3,
            exit_code: None,
            omitted_bytes: None,
            activated: Vec::new(),
            hooks: Vec::new(),
            sandbox: None,
            sync: None,
        })
        .unwrap();
        assert!(r.starts_with("[tool] t1 rejected (stage "), "{r}");
        assert!(card(&RunEvent::TextDelta { text: "x".into() }).is_none());
    }

    #[test]
    fn a_subagents_cards_are_indented_under_the_parent_and_escaped() {
        let wrap = |event: RunEvent| RunEvent::Subagent {
            parent_tool_call_id: "p:toolu_1".into(),
            event: Box::new(event),
        };
        let started = card(&wrap(RunEvent::RunStarted {
            run_id: "c\u{1b}[2J".into(),
            provider: "p".into(),
            model: "m".into(),
            presentation: "native".into(),
        }))
        .unwrap();
        assert!(started.starts_with("[subagent c"), "{started}");
        assert!(!started.contains('\u{1b}'), "{started}");
        let call = card(&wrap(RunEvent::ToolCall {
            tool_call_id: "c:1".into(),
            tool: "ls".into(),
            input: json!({"path": "src"}),
        }))
        .unwrap();
        assert_eq!(call, "  │ [tool] ls src");
        assert!(card(&wrap(RunEvent::TextDelta { text: "x".into() })).is_none());
        let agent = card(&RunEvent::ToolCall {
            tool_call_id: "p:toolu_1".into(),
            tool: "agent".into(),
            input: json!({"description": "survey", "prompt": "..."}),
        })
        .unwrap();
        assert_eq!(agent, "[tool] agent survey");
    }

    #[test]
    fn a_hook_line_escapes_the_command_and_what_the_hook_said() {
        let h = aibuddy::hooks::HookRun {
            event: "pre_tool_call".into(),
            level: aibuddy::settings::HookLevel::Project,
            matcher: "*".into(),
            command: "./guard\u{1b}[2J.sh".into(),
            outcome: aibuddy::hooks::HookOutcome::Blocked,
            exit_code: Some(2),
            duration_ms: 7,
            stdout: String::new(),
            stderr: "no\u{1b}]0;x".into(),
            truncated: false,
            decision: Some("block".into()),
            reason: Some("no\u{1b}]0;x\rway".into()),
            note: None,
            problem: None,
        };
        let l = hook_line(&h);
        assert!(!l.contains('\u{1b}') && !l.contains('\r'), "{l}");
        assert!(
            l.starts_with("[hook] pre_tool_call `./guard\\e[2J.sh` blocked (exit 2, 7 ms): decision block; reason: no"),
            "{l}"
        );
    }
}
