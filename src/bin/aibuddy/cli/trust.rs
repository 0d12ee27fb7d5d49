//! `aibuddy trust [--json] [--yes] [--revoke]`: show exactly what trusting the project grants (its
//! MCP servers' commands and URLs, each widening settings field with its resolved value) and record
//! it after confirmation on the terminal. `--yes` approves without asking; with no terminal and no
//! `--yes` nothing is recorded (exit 3, like a rejected call). `--json` without `--yes` only
//! reports the status; every `--json` status carries the project's approval mode (`approvals`, see
//! [`with_approvals`]). Everything that comes from the project is escaped before printing.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use aibuddy_common::term::line;
use clap::Args;

use super::print_json;
use aibuddy::app::AppOptions;
use aibuddy::approvals::{self, ApprovalMode};
use aibuddy::settings::ApprovalsSettings;
use aibuddy::trust::{self, TrustState, TrustStatus};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Trust without asking.
    #[arg(long)]
    pub yes: bool,
    /// Print the status (and, with --yes, the result) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Forget the project's trust.
    #[arg(long, conflicts_with = "yes")]
    pub revoke: bool,
    /// Choose this project's approval mode (ask, auto or read-only), kept at the user level.
    /// Nothing else is changed (no trust is granted).
    #[arg(long, value_name = "MODE", conflicts_with_all = ["yes", "revoke"])]
    pub approvals: Option<aibuddy::approvals::ApprovalMode>,
}

/// The human-readable report of a status (every project-supplied string escaped).
pub fn render(status: &TrustStatus) -> String {
    let mut out = format!(
        "project: {}\nstate:   {}\n",
        line(&status.project),
        status.state.as_str().replace('_', " ")
    );
    for p in &status.problems {
        out.push_str(&format!("problem: {}\n", line(p)));
    }
    if status.grants.is_empty() {
        out.push_str("trust grants nothing: the project asks for no MCP server and no setting beyond your own\n");
        return out;
    }
    out.push_str("trusting this project grants:\n");
    for s in &status.grants.servers {
        let replaces = if s.scope == "user" {
            " (from your own mcp.json: it reaches into the project, see its pins)"
        } else if s.replaces_user_server {
            " (replaces your server of the same name)"
        } else {
            ""
        };
        out.push_str(&format!(
            "  MCP server `{}` ({}){replaces}\n",
            line(&s.name),
            line(&s.transport)
        ));
        if let Some(c) = &s.command {
            let argv: Vec<String> = std::iter::once(c)
                .chain(s.args.iter())
                .map(|a| format!("{:?}", line(a)))
                .collect();
            out.push_str(&format!("    runs:    {}\n", argv.join(" ")));
        }
        if let Some(cwd) = &s.cwd {
            let outside = if std::path::Path::new(cwd).starts_with(&status.project) {
                ""
            } else {
                " (outside the project)"
            };
            out.push_str(&format!("    in:      {}{outside}\n", line(cwd)));
        }
        for p in s.pins.iter().filter(|p| p.state != "absent") {
            let note = if p.state == "data file" {
                "its content may change, its kind may not"
            } else {
                "any change needs trust again"
            };
            out.push_str(&format!(
                "    pins:    {}: {} ({note})\n",
                line(&p.path),
                line(&p.state)
            ));
        }
        if let Some(u) = &s.url {
            out.push_str(&format!("    url:     {}\n", line(u)));
        }
        if !s.env.is_empty() {
            let names: Vec<String> = s.env.iter().map(|n| line(n).into_owned()).collect();
            out.push_str(&format!("    sets env: {}\n", names.join(", ")));
        }
        if !s.headers.is_empty() {
            let names: Vec<String> = s.headers.iter().map(|n| line(n).into_owned()).collect();
            out.push_str(&format!("    headers: {}\n", names.join(", ")));
        }
        if !s.variables.is_empty() {
            let vars: Vec<String> = s
                .variables
                .iter()
                .map(|v| match (&v.value, v.set) {
                    (Some(value), _) => format!("{}={:?}", line(&v.name), line(value)),
                    (None, true) => format!("{} (set, value hidden)", line(&v.name)),
                    (None, false) => format!("{} (not set)", line(&v.name)),
                })
                .collect();
            out.push_str(&format!("    reads env: {}\n", vars.join(", ")));
        }
    }
    for h in &status.grants.hooks {
        out.push_str(&format!(
            "  hook {}[{}] runs: {:?}\n",
            line(&h.event),
            h.index,
            line(&h.command)
        ));
        for p in h.pins.iter().filter(|p| p.state != "absent") {
            out.push_str(&format!(
                "    pins:    {}: {} (any change needs trust again)\n",
                line(&p.path),
                line(&p.state)
            ));
        }
    }
    for f in &status.grants.settings {
        let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        out.push_str(&format!(
            "  setting {} = {}  ({}{at})\n",
            line(&f.field),
            line(&f.value.to_string()),
            line(&f.file)
        ));
    }
    out
}

/// The `--json` status with the project's approval mode beside the trust fields:
/// `"approvals": {"mode": "auto", "chosen": true, "narrowed_by_project": null}` (`chosen`: the
/// person chose a mode, for this project or in their settings; `narrowed_by_project`: the stricter
/// mode the project's own settings impose, if any).
///
/// `"sandbox"`: where calls run under the project's effective settings
/// (`aibuddy::services::sandbox_summary`).
pub fn with_approvals(
    status: &TrustStatus,
    approvals: &ApprovalsSettings,
    sandbox: &str,
) -> serde_json::Value {
    let mut value = serde_json::to_value(status).unwrap_or_else(|_| serde_json::json!({}));
    value["sandbox"] = serde_json::Value::String(sandbox.to_string());
    value["approvals"] = serde_json::json!({
        "mode": approvals.mode,
        "chosen": approvals.chosen,
        "narrowed_by_project": approvals.project_narrows,
    });
    value
}

fn ask() -> bool {
    let mut err = std::io::stderr();
    let _ = write!(err, "Trust this project with exactly this? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("aibuddy: {}", line(&e.to_string()));
    ExitCode::from(1)
}

/// `aibuddy trust --approvals MODE`: record the person's mode for this project.
fn set_approvals(mode: ApprovalMode, opts: &AppOptions, json: bool) -> ExitCode {
    let project = match std::fs::canonicalize(&opts.project) {
        Ok(p) => p,
        Err(e) => return fail(format!("project folder cannot be opened: {e}")),
    };
    if let Err(e) = approvals::record::set_mode(&opts.data_dir, &project, mode) {
        return fail(e);
    }
    let effective = trust::load_project(&project, &opts.data_dir)
        .settings
        .settings
        .approvals;
    if json {
        return print_json(&serde_json::json!({
            "project": project.display().to_string(),
            "approvals": {"chosen": mode, "mode": effective.mode},
        }));
    }
    outln!(
        "recorded: approvals for this project: {mode}\n  {}\n{}",
        mode.sentence(),
        super::approvals::banner(&effective)
    );
    ExitCode::SUCCESS
}

pub fn run(args: TrustArgs, opts: AppOptions) -> ExitCode {
    if let Some(mode) = args.approvals {
        return set_approvals(mode, &opts, args.json);
    }
    let (project, data) = (&opts.project, &opts.data_dir);
    if args.revoke {
        return match trust::revoke(project, data) {
            Ok(s) if args.json => print_json(&s),
            Ok(s) => {
                outln!("trust revoked\n{}", render(&s).trim_end());
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        };
    }
    let shown = match trust::status(project, data) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aibuddy: {}", line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let effective = trust::load_project(project, data).settings.settings;
    let sandbox = aibuddy::services::sandbox_summary(&effective.sandbox);
    let approvals = effective.approvals;
    if args.json && !args.yes {
        return print_json(&with_approvals(&shown, &approvals, &sandbox));
    }
    if !args.json {
        out!("{}", render(&shown));
        outln!("sandbox: {}", line(&sandbox));
        outln!(
            "{}\nmodes (change with `aibuddy trust --approvals MODE`):\n{}",
            super::approvals::banner(&approvals),
            super::approvals::all_sentences().trim_end()
        );
    }
    if matches!(shown.state, TrustState::Trusted | TrustState::NotNeeded) {
        return if args.json {
            print_json(&with_approvals(&shown, &approvals, &sandbox))
        } else {
            ExitCode::SUCCESS
        };
    }
    let approved = if args.yes {
        true
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        ask()
    } else {
        eprintln!("aibuddy: not trusted: no terminal to ask and --yes was not given");
        return ExitCode::from(3);
    };
    if !approved {
        eprintln!("aibuddy: not trusted: declined at the terminal");
        return ExitCode::from(3);
    }
    match trust::grant(project, data, &shown.digest) {
        Ok(s) if args.json => print_json(&with_approvals(&s, &approvals, &sandbox)),
        Ok(s) => {
            outln!(
                "recorded: this project is {} at digest {}",
                s.state.as_str().replace('_', " "),
                s.digest
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::settings::WideningField;
    use aibuddy::trust::{Grants, ServerGrant};

    #[test]
    fn render_escapes_everything_from_the_project_and_never_shows_env_values() {
        let status = TrustStatus {
            project: "/p".into(),
            state: TrustState::Untrusted,
            digest: "d".into(),
            grants: Grants {
                servers: vec![ServerGrant {
                    name: "evil\u{1b}[2K\rfine".into(),
                    scope: "project".into(),
                    transport: "stdio".into(),
                    command: Some("sh".into()),
                    args: vec!["-c".into(), "touch x\r  runs: ls".into()],
                    url: None,
                    cwd: Some("/p".into()),
                    env: vec!["TOKEN".into()],
                    headers: vec![],
                    variables: Vec::new(),
                    replaces_user_server: true,
                    pins: vec![],
                }],
                settings: vec![WideningField {
                    file: "/p/.aibuddy/settings.json".into(),
                    line: Some(3),
                    field: "exec.writable_roots".into(),
                    value: serde_json::json!(["/p/cache"]),
                }],
                hooks: vec![],
            },
            problems: vec![],
        };
        let text = render(&status);
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
        assert!(
            text.contains("MCP server `evil\\e[2K\\rfine` (stdio) (replaces"),
            "{text}"
        );
        assert!(
            text.contains("runs:    \"sh\" \"-c\" \"touch x\\\\r  runs: ls\""),
            "{text}"
        );
        assert!(text.contains("sets env: TOKEN"), "{text}");
        assert!(
            text.contains(
                "setting exec.writable_roots = [\"/p/cache\"]  (/p/.aibuddy/settings.json:3)"
            ),
            "{text}"
        );
    }
}
