//! The approval mode at the terminal: the banner line of `run` and `call`, the one-time question
//! of the first `aibuddy run` in a project, and the choice made with `aibuddy trust --approvals`.
//! The choice is the person's: it is stored at the user level for this project
//! (`aibuddy::approvals::record`), never in the project.

use std::io::{BufRead, IsTerminal, Write};

use aibuddy::app::App;
use aibuddy::approvals::mode::MODES;
use aibuddy::approvals::{ApprovalMode, record};
use aibuddy::settings::ApprovalsSettings;
use aibuddy_common::term;

/// The banner line: `approvals: auto` (+ why when the project narrowed it).
pub fn banner(approvals: &ApprovalsSettings) -> String {
    let mut s = format!("approvals: {}", approvals.mode);
    if approvals.project_narrows == Some(approvals.mode) {
        s.push_str(" (narrowed by the project's .aibuddy/settings.json)");
    }
    if !approvals.chosen {
        s.push_str(" (not chosen yet: `aibuddy trust --approvals MODE`)");
    }
    s
}

/// The question's text: one sentence on each mode.
pub fn question() -> String {
    let mut s = String::from(
        "\nHow much should aibuddy ask you in this project? (asked once; change it with \
         `aibuddy trust --approvals MODE`)\n",
    );
    for (i, m) in [
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::ReadOnly,
    ]
    .into_iter()
    .enumerate()
    {
        s.push_str(&format!("  {}) {}\n", i + 1, m.sentence()));
    }
    s.push_str("Mode [1=ask, 2=auto, 3=read-only; Enter: ask] ");
    s
}

/// The mode an answer names (number or name; empty is `ask`), or None.
pub fn answer(line: &str) -> Option<ApprovalMode> {
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "1" => Some(ApprovalMode::Ask),
        "2" => Some(ApprovalMode::Auto),
        "3" => Some(ApprovalMode::ReadOnly),
        other => ApprovalMode::parse(other),
    }
}

/// The first `aibuddy run` in a project on a terminal asks once which mode, and records it. A
/// flag, a mode already chosen, `--json` or no terminal: nothing is asked (`ask` stays).
pub fn choose_first_time(app: &mut App, flag: Option<ApprovalMode>, json: bool) {
    if let Some(mode) = flag {
        app.set_approval_mode(mode);
        return;
    }
    if app.settings.settings.approvals.chosen
        || json
        || !std::io::stdin().is_terminal()
        || !std::io::stderr().is_terminal()
    {
        return;
    }
    let mut err = std::io::stderr();
    let mut mode = None;
    for _ in 0..3 {
        let _ = write!(err, "{}", question());
        let _ = err.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        mode = answer(&line);
        if mode.is_some() {
            break;
        }
        let _ = writeln!(err, "Please answer 1, 2 or 3.");
    }
    let Some(mode) = mode else {
        return;
    };
    match record::set_mode(&app.data_dir, &app.project_root, mode) {
        Ok(_) => {
            let _ = writeln!(
                err,
                "aibuddy: approvals for this project: {mode} (recorded)"
            );
        }
        Err(e) => {
            let _ = writeln!(err, "aibuddy: {}", term::line(&e.to_string()));
        }
    }
    app.set_approval_mode(mode);
}

/// Every mode with its sentence (`aibuddy trust` shows them).
pub fn all_sentences() -> String {
    MODES
        .iter()
        .map(|m| format!("  {}\n", m.sentence()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_by_number_or_name_and_enter_is_ask() {
        assert_eq!(answer("\n"), Some(ApprovalMode::Ask));
        assert_eq!(answer("2\n"), Some(ApprovalMode::Auto));
        assert_eq!(answer(" Read-Only "), Some(ApprovalMode::ReadOnly));
        assert_eq!(answer("yes"), None);
        let q = question();
        for m in MODES {
            assert!(q.contains(m.sentence()));
        }
    }
}
