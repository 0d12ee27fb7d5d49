//! The CLI's confirm broker: asks on the terminal. With `--yes` every confirmation of that one
//! invocation is approved; with no terminal and no `--yes` the call is rejected.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::confirm::{ApproveAll, ConfirmBroker, ConfirmRequest, Decision, RejectAll};

/// Asks on stderr and reads the answer from stdin (a terminal).
pub struct TerminalBroker;

pub fn render(req: &ConfirmRequest) -> String {
    let mut s = format!(
        "\n── confirm {} ({}) ──\n  target:      {}\n  consequence: {}\n",
        req.tool,
        req.risk.as_str(),
        req.target,
        req.consequence
    );
    for line in &req.scope {
        s.push_str(&format!("  scope:       {line}\n"));
    }
    if let Some(diff) = &req.diff {
        s.push_str("  diff:\n");
        for l in diff.lines().take(80) {
            s.push_str(&format!("    {l}\n"));
        }
    }
    s
}

#[async_trait]
impl ConfirmBroker for TerminalBroker {
    async fn decide(&self, req: &ConfirmRequest, cancel: &CancellationToken) -> Decision {
        let text = render(req);
        let ask = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = write!(err, "{text}Approve? [y/N] ");
            let _ = err.flush();
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
        });
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
