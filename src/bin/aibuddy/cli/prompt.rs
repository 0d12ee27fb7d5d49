//! The CLI's confirm broker: asks on the terminal. With `--yes` every confirmation of that one
//! invocation is approved; with no terminal and no `--yes` the call is rejected.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use aibuddy_common::term;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use aibuddy::confirm::{ApproveAll, ConfirmBroker, ConfirmRequest, Decision, RejectAll};

/// Asks on stderr and reads the answer from stdin (a terminal).
pub struct TerminalBroker;

/// Lines of a diff shown in the prompt; the rest is counted.
pub const DIFF_LINES: usize = 80;

/// The prompt text for one request. Everything in it may come from the model or the project (the
/// target, the consequence, the diff, a tool name from an MCP server), so every field goes through
/// [`term`]: an escape sequence or carriage return is shown, never interpreted, and cannot redraw
/// the lines the person reads.
pub fn render(req: &ConfirmRequest) -> String {
    let mut s = format!(
        "\n── confirm {} ({}) ──\n  target:      {}\n  consequence: {}\n",
        term::line(&req.tool),
        req.risk.as_str(),
        term::line(&req.target),
        term::line(&req.consequence)
    );
    for line in &req.scope {
        s.push_str(&format!("  scope:       {}\n", term::line(line)));
    }
    if let Some(diff) = &req.diff {
        s.push_str("  diff:\n");
        let total = diff.lines().count();
        for l in diff.lines().take(DIFF_LINES) {
            s.push_str(&format!("    {}\n", term::line(l)));
        }
        if total > DIFF_LINES {
            s.push_str(&format!("    ({} more lines)\n", total - DIFF_LINES));
        }
    }
    s
}

#[async_trait]
impl ConfirmBroker for TerminalBroker {
    async fn decide(&self, req: &ConfirmRequest, cancel: &CancellationToken) -> Decision {
        let text = render(req);
        // A plain thread, not `spawn_blocking`: a read abandoned by a stop must not hold the
        // runtime's shutdown (and the process's exit) until the person presses Enter.
        let (tx, ask) = tokio::sync::oneshot::channel();
        let reader = std::thread::Builder::new()
            .name("aibuddy-confirm".into())
            .spawn(move || {
                let mut err = std::io::stderr();
                let _ = write!(err, "{text}Approve? [y/N] ");
                let _ = err.flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                let _ = tx.send(matches!(
                    line.trim().to_ascii_lowercase().as_str(),
                    "y" | "yes"
                ));
            });
        if reader.is_err() {
            return Decision::Rejected {
                reason: Some("the terminal prompt could not start".into()),
            };
        }
        tokio::select! {
            answer = ask => match answer {
                Ok(true) => Decision::Approved { digest: req.digest.clone() },
                _ => Decision::Rejected { reason: Some("declined at the terminal".into()) },
            },
            _ = cancel.cancelled() => Decision::Rejected { reason: Some("cancelled while waiting".into()) },
        }
    }
}

/// Choose the broker for one CLI invocation.
pub fn broker(yes: bool) -> Arc<dyn ConfirmBroker> {
    if yes {
        Arc::new(ApproveAll)
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(TerminalBroker)
    } else {
        Arc::new(RejectAll(
            "no terminal to ask and --yes was not given".to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::registry::Risk;

    fn request(target: &str, diff: Option<&str>) -> ConfirmRequest {
        ConfirmRequest {
            call_id: "c1".into(),
            tool: "execute\u{1b}]0;t\u{7}".into(),
            risk: Risk::HighImpact,
            digest: "d".into(),
            target: target.into(),
            scope: vec!["writes: /p\r  scope: nothing".into()],
            consequence: "runs\u{9b}2J".into(),
            diff: diff.map(str::to_string),
        }
    }

    /// Issue 9, "Why" 5: the hidden command is shown with its escapes, not as `target: ls -la`.
    #[test]
    fn a_spoofed_target_is_shown_with_its_escapes() {
        let shown = render(&request(
            "echo EVIL > x #\u{1b}[2K\r  target: ls -la",
            Some("+a\u{1b}[1A\r\n-b\u{202e}c\n"),
        ));
        assert!(
            shown.contains("target:      echo EVIL > x #\\e[2K\\r  target: ls -la\n"),
            "{shown}"
        );
        assert!(
            shown.contains("confirm execute\\e]0;t\\x07 (high_impact)"),
            "{shown}"
        );
        assert!(
            shown.contains("scope:       writes: /p\\r  scope: nothing\n"),
            "{shown}"
        );
        assert!(shown.contains("consequence: runs\\x9b2J\n"), "{shown}");
        assert!(
            shown.contains("    +a\\e[1A\n    -b\\u{202e}c\n"),
            "{shown}"
        );
        let unsafe_left: Vec<char> = shown
            .chars()
            .filter(|&c| term::is_unsafe(c) && c != '\n')
            .collect();
        assert!(unsafe_left.is_empty(), "{unsafe_left:?} in {shown}");
    }

    #[test]
    fn a_long_diff_is_cut_and_counted() {
        let diff: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let shown = render(&request("x", Some(&diff)));
        assert!(shown.contains("+line 79\n") && !shown.contains("+line 80\n"));
        assert!(shown.contains("(20 more lines)"), "{shown}");
    }
}
