//! The trust dialog's side of the shell: what the open project asks for (the core's
//! `aibuddy::trust` status, every project-supplied string escaped as `aibuddy trust` prints it,
//! environment variables and headers named, never their values), whether to ask now, and the
//! person's answer. Trusting takes the digest the dialog showed: a file changed in between is
//! refused (the core's `trust::grant`). After a grant or a refusal that changes what applies, the
//! project is reopened so its MCP servers and settings follow the decision (`crate::projects`).

use aibuddy::contract::Stage;
use aibuddy::trust::{TrustError, TrustState, TrustStatus};
use aibuddy_common::term::line;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};

/// The Tauri event sent when the open project's trust-relevant files changed on disk (payload:
/// [`TrustPrompt`]): the window opens the dialog again when `ask` says so.
pub const TRUST_EVENT: &str = "trust-changed";

/// What the trust dialog shows and whether it should open.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct TrustPrompt {
    /// The project's trust now, every project-supplied string escaped; `digest` is what
    /// `trust_project` takes back.
    pub status: TrustStatus,
    /// The dialog should open: the project asks for something, is not trusted at this content,
    /// and the person has not already declined this very content.
    pub ask: bool,
    /// What the open project applies (its trust state when it was opened).
    pub applied: TrustState,
}

/// Whether to ask (pure): something to grant, not trusted at this content, not declined at it.
pub fn should_ask(status: &TrustStatus, declined: Option<&str>) -> bool {
    !status.state.applies() && !status.grants.is_empty() && declined != Some(status.digest.as_str())
}

/// The prompt for `status` (escaped), given the digest the person declined and what applies.
pub fn prompt(status: TrustStatus, declined: Option<&str>, applied: TrustState) -> TrustPrompt {
    let ask = should_ask(&status, declined);
    TrustPrompt {
        status: escaped(status),
        ask,
        applied,
    }
}

/// Every string that comes from the project escaped (control and bidirectional characters), so
/// the dialog shows what the CLI shows. The digest is hex and stays as it is.
pub fn escaped(mut status: TrustStatus) -> TrustStatus {
    let esc = |s: &mut String| *s = line(s).into_owned();
    esc(&mut status.project);
    status.problems.iter_mut().for_each(esc);
    for server in &mut status.grants.servers {
        esc(&mut server.name);
        esc(&mut server.transport);
        server.command.iter_mut().for_each(esc);
        server.args.iter_mut().for_each(esc);
        server.url.iter_mut().for_each(esc);
        server.cwd.iter_mut().for_each(esc);
        server.env.iter_mut().for_each(esc);
        server.headers.iter_mut().for_each(esc);
        for pin in &mut server.pins {
            esc(&mut pin.path);
            esc(&mut pin.state);
        }
        for var in &mut server.variables {
            esc(&mut var.name);
            var.value.iter_mut().for_each(esc);
        }
    }
    for hook in &mut status.grants.hooks {
        esc(&mut hook.event);
        esc(&mut hook.command);
        for pin in &mut hook.pins {
            esc(&mut pin.path);
            esc(&mut pin.state);
        }
    }
    for field in &mut status.grants.settings {
        esc(&mut field.file);
        esc(&mut field.field);
        escape_value(&mut field.value);
    }
    status
}

fn escape_value(value: &mut Value) {
    match value {
        Value::String(s) => *s = line(s).into_owned(),
        Value::Array(items) => items.iter_mut().for_each(escape_value),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                escape_value(&mut v);
                map.insert(line(&k).into_owned(), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A trust failure as the UI receives it (stage Authorization; a changed file says so).
pub fn trust_error(e: TrustError) -> CommandError {
    CommandError {
        code: ErrorCode::Project,
        stage: Some(Stage::Authorization),
        message: line(&e.to_string()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::settings::WideningField;
    use aibuddy::trust::{Grants, ServerGrant};

    fn status(state: TrustState) -> TrustStatus {
        TrustStatus {
            project: "/p\u{202e}x".into(),
            state,
            digest: "abc".into(),
            grants: Grants {
                servers: vec![ServerGrant {
                    name: "evil\u{1b}[2K".into(),
                    scope: "project".into(),
                    transport: "stdio".into(),
                    command: Some("sh".into()),
                    args: vec!["-c".into(), "x\ry".into()],
                    url: None,
                    cwd: None,
                    env: vec!["TOKEN".into()],
                    headers: vec![],
                    replaces_user_server: false,
                    pins: vec![],
                    variables: vec![],
                }],
                settings: vec![WideningField {
                    file: "/p/.aibuddy/settings.json".into(),
                    line: Some(2),
                    field: "exec.writable_roots".into(),
                    value: serde_json::json!(["/etc\u{1b}]0;t"]),
                }],
                hooks: vec![],
            },
            problems: vec![],
        }
    }

    #[test]
    fn asks_only_when_untrusted_with_grants_and_not_declined_at_this_digest() {
        assert!(should_ask(&status(TrustState::Untrusted), None));
        assert!(should_ask(
            &status(TrustState::ChangedSinceTrusted),
            Some("old")
        ));
        assert!(!should_ask(&status(TrustState::Untrusted), Some("abc")));
        assert!(!should_ask(&status(TrustState::Trusted), None));
        let mut nothing = status(TrustState::Untrusted);
        nothing.grants = Grants::default();
        assert!(!should_ask(&nothing, None));
    }

    #[test]
    fn every_project_string_is_escaped_and_the_digest_kept() {
        let p = prompt(status(TrustState::Untrusted), None, TrustState::Untrusted);
        let text = serde_json::to_string(&p).unwrap();
        for raw in ['\u{1b}', '\r', '\u{202e}'] {
            assert!(!text.contains(raw), "{raw:?} reached the view: {text}");
        }
        assert_eq!(p.status.digest, "abc");
        assert_eq!(p.status.grants.servers[0].env, vec!["TOKEN".to_string()]);
        assert!(p.ask);
    }
}
