//! The CLI's confirm broker: asks on the terminal. With `--yes` every confirmation of that one
//! invocation is approved; with no terminal and no `--yes` the call is rejected.
//!
//! A running command's host on no `exec.network` list is asked about here too
//! ([`render_network`]): `Allow? [o]nce, [p]roject, [N]o` (Enter refuses). `--yes` and no terminal
//! never ask: such hosts are refused and the model is told how the person can allow them.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use aibuddy_common::term;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use aibuddy::approvals::RuleBook;
use aibuddy::approvals::rules::{ApprovalRule, offer_for_call};
use aibuddy::confirm::{
    ApproveAll, ConfirmBroker, ConfirmDisplay, ConfirmRequest, Decision, NetworkAnswer, NetworkAsk,
    RejectAll,
};

/// One question on the terminal at a time (a command may ask about several hosts at once).
static PROMPT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Asks on stderr and reads the answer from stdin (a terminal). With `offers` (where the
/// project's rules are kept), a command's prompt may offer a rule for this project
/// ([`offer_text`]), stored at the user level and applied to later calls when the person picks it.
#[derive(Default)]
pub struct TerminalBroker {
    pub offers: Option<RuleBook>,
}

/// The rule a confirmation of `req` may offer: for `execute`, "allow commands starting with
/// `cargo test`" (see `aibuddy::approvals::rules::offer_for`).
pub fn offer_of(req: &ConfirmRequest) -> Option<ApprovalRule> {
    offer_for_call(&req.tool, &req.target)
}

/// The prompt lines of an offer: the exact rule, where it is stored, what it covers.
pub fn offer_text(rule: &ApprovalRule) -> String {
    let pattern = rule.command.as_deref().unwrap_or_default();
    let prefix = pattern.strip_suffix(" *").unwrap_or(pattern);
    format!(
        "  offer:       [a] approve this call once and allow commands starting with `{}` in this \
         project from now on\n               (adds the rule {{\"command\": \"{}\", \"decision\": \
         \"allow\"}} to your own approvals for this project, never to the project's files)\n",
        term::line(prefix),
        term::line(pattern)
    )
}

/// Lines of a diff shown in the prompt; the rest is counted.
pub const DIFF_LINES: usize = 80;

/// The prompt text for one request. Everything in it may come from the model or the project (the
/// target, the consequence, the diff, a tool name from an MCP server). The fields are shown
/// through [`term::reveal`], as the window shows them ([`ConfirmDisplay`]): a line break is a
/// visible `⏎` and a real break, a zero-width, format, bidi or TAG character is a code such as
/// `<U+200B>`, non-ASCII characters of the target are listed with their codes; so nothing can
/// redraw, hide or disguise what the person approves. The model's description is labelled as the
/// model's, apart from the app's consequence line.
pub fn render(req: &ConfirmRequest) -> String {
    const INDENT: &str = "               ";
    let shown = ConfirmDisplay::of(req);
    let text = |segments: &[term::DisplaySegment]| term::segments_text(segments, INDENT);
    let mut s = format!(
        "\n── confirm {} ({}) ──\n  target:      {}\n",
        text(&shown.tool),
        req.risk.as_str(),
        text(&shown.target),
    );
    if !shown.target_non_ascii.is_empty() {
        s.push_str(&format!(
            "  note:        the target contains non-ASCII characters: {}\n",
            shown.target_non_ascii.join(", ")
        ));
    }
    s.push_str(&format!("  consequence: {}\n", text(&shown.consequence)));
    if let Some(says) = &shown.model_says {
        s.push_str(&format!(
            "  model says:  \"{}\" (the model's own description, not checked)\n",
            text(says)
        ));
    }
    for line in &shown.scope {
        s.push_str(&format!("  scope:       {}\n", text(line)));
    }
    if let Some(diff) = &shown.diff {
        s.push_str("  diff:\n");
        let total = diff.len();
        for l in diff.iter().take(DIFF_LINES) {
            s.push_str(&format!("    {}\n", text(l)));
        }
        if total > DIFF_LINES {
            s.push_str(&format!("    ({} more lines)\n", total - DIFF_LINES));
        }
    }
    s
}

/// The network question's text: which call's command asks for which host and port. Host and
/// command come from the command and the model: shown through the core's reveal.
pub fn render_network(ask: &NetworkAsk) -> String {
    const INDENT: &str = "               ";
    let text = |segments: &[term::DisplaySegment]| term::segments_text(segments, INDENT);
    let mut s = format!(
        "\n── network: {} (call {}) ──\n  host:        {}\n  port:        {}\n",
        text(&ask.display.tool),
        term::line(&ask.call_id),
        text(&ask.display.host),
        ask.port,
    );
    if !ask.display.host_non_ascii.is_empty() {
        s.push_str(&format!(
            "  note:        the host contains non-ASCII characters: {}\n",
            ask.display.host_non_ascii.join(", ")
        ));
    }
    s.push_str(&format!(
        "  command:     {}\n  The host is on no exec.network list. once: this command only; \
         project: also later calls in this project (kept in your data directory); no: refused.\n",
        text(&ask.display.target)
    ));
    s
}

/// The answer typed at the network prompt (anything else refuses).
pub fn network_answer(line: &str) -> NetworkAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" => NetworkAnswer::Once,
        "p" | "project" => NetworkAnswer::Project,
        _ => NetworkAnswer::Deny,
    }
}

#[async_trait]
impl ConfirmBroker for TerminalBroker {
    fn asks_network(&self) -> bool {
        true
    }

    async fn network(&self, ask: &NetworkAsk, cancel: &CancellationToken) -> NetworkAnswer {
        let text = render_network(ask);
        let (tx, answer) = tokio::sync::oneshot::channel();
        // A plain thread, as for confirmations; questions wait for each other's turn.
        let reader = std::thread::Builder::new()
            .name("aibuddy-network".into())
            .spawn(move || {
                let _turn = PROMPT.lock().unwrap_or_else(|p| p.into_inner());
                let mut err = std::io::stderr();
                let _ = write!(err, "{text}Allow? [o]nce, [p]roject, [N]o ");
                let _ = err.flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                let _ = tx.send(network_answer(&line));
            });
        if reader.is_err() {
            return NetworkAnswer::Deny;
        }
        tokio::select! {
            a = answer => a.unwrap_or(NetworkAnswer::Deny),
            _ = cancel.cancelled() => NetworkAnswer::Deny,
        }
    }

    async fn decide(&self, req: &ConfirmRequest, cancel: &CancellationToken) -> Decision {
        let offer = self.offers.as_ref().and(offer_of(req));
        let mut text = render(req);
        let keys = if let Some(rule) = &offer {
            text.push_str(&offer_text(rule));
            "[y/N/a]"
        } else {
            "[y/N]"
        };
        // A plain thread, not `spawn_blocking`: a read abandoned by a stop must not hold the
        // runtime's shutdown (and the process's exit) until the person presses Enter.
        let (tx, ask) = tokio::sync::oneshot::channel();
        let reader = std::thread::Builder::new()
            .name("aibuddy-confirm".into())
            .spawn(move || {
                let _turn = PROMPT.lock().unwrap_or_else(|p| p.into_inner());
                let mut err = std::io::stderr();
                let _ = write!(err, "{text}Approve? {keys} ");
                let _ = err.flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                let _ = tx.send(match line.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => Answer::Once,
                    "a" if keys.contains("/a") => Answer::OnceAndRule,
                    _ => Answer::No,
                });
            });
        if reader.is_err() {
            return Decision::Rejected {
                reason: Some("the terminal prompt could not start".into()),
            };
        }
        tokio::select! {
            answer = ask => match answer {
                Ok(Answer::Once) => Decision::Approved { digest: req.digest.clone() },
                Ok(Answer::OnceAndRule) => {
                    // This call is approved once, by its digest; the rule applies to later calls.
                    if let (Some(book), Some(rule)) = (&self.offers, offer) {
                        let shown = rule.shown();
                        match book.remember(rule) {
                            Ok(_) => eprintln!("aibuddy: rule recorded for this project: {}", term::line(&shown)),
                            Err(e) => eprintln!("aibuddy: the rule was not recorded: {}", term::line(&e.to_string())),
                        }
                    }
                    Decision::Approved { digest: req.digest.clone() }
                }
                _ => Decision::Rejected { reason: Some("declined at the terminal".into()) },
            },
            _ = cancel.cancelled() => Decision::Rejected { reason: Some("cancelled while waiting".into()) },
        }
    }
}

/// The person's answer at the terminal.
enum Answer {
    No,
    Once,
    /// Approve this call once and record the offered rule for later ones.
    OnceAndRule,
}

/// Choose the broker for one CLI invocation in a project: the terminal prompt may offer a rule
/// for commands, kept by `rules` (`App::rule_book`).
pub fn broker_in(yes: bool, rules: RuleBook) -> Arc<dyn ConfirmBroker> {
    choose(
        yes,
        TerminalBroker {
            offers: Some(rules),
        },
    )
}

fn choose(yes: bool, terminal: TerminalBroker) -> Arc<dyn ConfirmBroker> {
    if yes {
        Arc::new(ApproveAll)
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(terminal)
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
            model_says: None,
            display: Default::default(),
        }
        .revealed()
    }

    /// Issue 9, "Why" 5: the hidden command is shown with its escapes, not as `target: ls -la`.
    #[test]
    fn a_spoofed_target_is_shown_with_its_escapes() {
        let shown = render(&request(
            "echo EVIL > x #\u{1b}[2K\r  target: ls -la",
            Some("+a\u{1b}[1A\r\n-b\u{202e}c\n"),
        ));
        assert!(
            shown.contains("target:      echo EVIL > x #<ESC>[2K<CR>  target: ls -la\n"),
            "{shown}"
        );
        assert!(
            shown.contains("confirm execute<ESC>]0;t<U+0007> (high_impact)"),
            "{shown}"
        );
        assert!(
            shown.contains("scope:       writes: /p<CR>  scope: nothing\n"),
            "{shown}"
        );
        assert!(shown.contains("consequence: runs<U+009B>2J\n"), "{shown}");
        assert!(
            shown.contains("    +a<ESC>[1A<CR>\n    -b<U+202E>c\n"),
            "{shown}"
        );
        let unsafe_left: Vec<char> = shown
            .chars()
            .filter(|&c| term::is_hidden(c) && c != '\n')
            .collect();
        assert!(unsafe_left.is_empty(), "{unsafe_left:?} in {shown}");
    }

    /// Issue 22: a second line, zero-width and TAG characters and a full-width `＃` are visible,
    /// and the model's description is labelled as the model's.
    #[test]
    fn a_hidden_second_command_and_invisible_characters_are_shown() {
        let mut req = request(
            "echo cleaning\nrm -rf src\u{200B}\u{E0041} ＃; touch x",
            None,
        );
        req.consequence = "runs the target command".into();
        req.model_says = Some("cleans \u{2060}the build".into());
        let shown = render(&req.revealed());
        assert!(
            shown.contains(
                "  target:      echo cleaning⏎\n               rm -rf src<U+200B><U+E0041> ＃; touch x\n"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("  note:        the target contains non-ASCII characters: ＃ U+FF03\n"),
            "{shown}"
        );
        assert!(
            shown.contains("  consequence: runs the target command\n  model says:  \"cleans <U+2060>the build\" (the model's own description, not checked)\n"),
            "{shown}"
        );
    }

    /// Issue 22: the network question names the host, port and call, with the host's and the
    /// command's hidden characters shown; only `o`/`p` allow, anything else refuses.
    #[test]
    fn the_network_question_names_host_port_and_call() {
        let ask = NetworkAsk {
            ask_id: "net_1".into(),
            call_id: "call_9".into(),
            tool: "execute".into(),
            host: "exаmple.com\u{200B}\u{1b}[2K".into(),
            port: 8443,
            target: "curl x\nrm -rf y".into(),
            display: Default::default(),
        }
        .revealed();
        let shown = render_network(&ask);
        assert!(
            shown.contains("── network: execute (call call_9) ──\n"),
            "{shown}"
        );
        assert!(
            shown.contains("  host:        exаmple.com<U+200B><ESC>[2K\n  port:        8443\n"),
            "{shown}"
        );
        assert!(shown.contains("non-ASCII characters: а U+0430"), "{shown}");
        assert!(
            shown.contains("  command:     curl x⏎\n               rm -rf y\n"),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{200B}'));
        for (typed, want) in [
            ("o\n", NetworkAnswer::Once),
            ("Once", NetworkAnswer::Once),
            ("p", NetworkAnswer::Project),
            ("", NetworkAnswer::Deny),
            ("y", NetworkAnswer::Deny),
            ("n", NetworkAnswer::Deny),
        ] {
            assert_eq!(network_answer(typed), want, "{typed:?}");
        }
    }

    #[test]
    fn a_long_diff_is_cut_and_counted() {
        let diff: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let shown = render(&request("x", Some(&diff)));
        assert!(shown.contains("+line 79\n") && !shown.contains("+line 80\n"));
        assert!(shown.contains("(20 more lines)"), "{shown}");
    }
}
