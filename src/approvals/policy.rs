//! Whether a call runs, is asked, or is refused (pure): the one precedence table of approvals.
//!
//! 1. a `deny` rule (a command line with a denied part, or a tool rule) -> refused at Authorization;
//! 2. `read-only` mode -> a call that may write (anything but a read-only tool or a command) is
//!    refused; a command runs only where it can be confined (the project read-only, no network);
//! 3. an `ask` rule, or a command line that cannot be fully known before it runs -> asked;
//! 4. an `allow` rule (every part of the command line, or the tool) -> runs without asking;
//! 5. the mode's default:
//!    - read-only tools are never asked;
//!    - `ask`: every other call is asked, except writes inside the project under
//!      `confirm.auto_approve_writes`;
//!    - `auto`: a command on the full namespace path runs; on a weaker launch path it is asked;
//!      a file write inside the project runs; a write outside it, an MCP tool that is not
//!      read-only, and any other call are asked; and both run unasked only when the project is
//!      checkpointed (every change can be put back), else they are asked too;
//!    - `read-only`: a confined command runs (step 2 made it read-only).
//!
//! A call that runs without asking carries the reason (`Verdict::Run(Some(why))`), recorded with
//! the call: a mode and a rule are the person's standing policy, never a reused confirmation.

use crate::contract::Risk;

use super::mode::ApprovalMode;
use super::rules::{ApprovalRule, LineVerdict, RuleDecision, line_verdict, tool_verdict};

/// How a command would be launched, from `aibuddy_exec`'s confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// Namespaces + Landlock: protected paths held, network only through the allow list.
    Full,
    /// Confined, but weaker (Landlock only, or namespaces without the inner Landlock layer).
    Degraded,
    /// No confinement at all (unavailable or turned off).
    Unconfined,
}

/// What kind of call this is, for the mode's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind<'a> {
    /// `execute`: its command line and launch path.
    Command { line: &'a str, launch: Launch },
    /// A built-in file tool (`write_file`, `edit_file`, ...).
    File,
    /// An MCP server's tool.
    Mcp,
    /// Anything else.
    Other,
}

/// Everything the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub tool: &'a str,
    pub risk: Risk,
    pub kind: CallKind<'a>,
    /// Every target lies inside the project (or a writable root).
    pub inside_project: bool,
    pub mode: ApprovalMode,
    /// The legacy `confirm.auto_approve_writes` (applies in `ask` mode).
    pub auto_approve_writes: bool,
    /// The call's changes to the project are checkpointed (before and after), so `aibuddy
    /// rewind` can put them back: `auto` runs nothing unasked without it.
    pub checkpointed: bool,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without asking; the reason is recorded with the call when there is one (read-only
    /// tools, never asked, have none).
    Run(Option<String>),
    /// The person is asked; why, when it is not simply the mode's default.
    Ask(Option<String>),
    /// Refused at Authorization without asking.
    Refuse(String),
}

/// The record of a command `auto` ran without asking.
pub const AUTO_CONFINED: &str = "ran without asking: auto mode, confined, checkpointed";
/// The record of a file write inside the project `auto` ran without asking.
pub const AUTO_WRITE: &str =
    "ran without asking: auto mode, a write inside the project, checkpointed";

/// The decision for one call (see the module docs for the precedence).
pub fn decide(facts: &Facts<'_>, rules: &[ApprovalRule]) -> Verdict {
    let line = match facts.kind {
        CallKind::Command { line, .. } => Some(line_verdict(rules, line)),
        _ => None,
    };
    let tool = tool_verdict(rules, facts.tool);
    // 1. deny
    if let Some(LineVerdict::Deny { rule, part }) = &line {
        return Verdict::Refuse(format!(
            "your rule `deny {rule}` refuses `{part}`, part of this command line"
        ));
    }
    if let Some((RuleDecision::Deny, pattern)) = &tool {
        return Verdict::Refuse(format!(
            "your rule `deny tool {pattern}` refuses `{}`",
            facts.tool
        ));
    }
    // 2. read-only mode
    if facts.mode == ApprovalMode::ReadOnly {
        match facts.kind {
            CallKind::Command {
                launch: Launch::Unconfined,
                ..
            } => {
                return Verdict::Refuse(
                    "read-only mode: commands need confinement to see the project read-only, and \
                     none is available here"
                        .into(),
                );
            }
            CallKind::Command { .. } => {}
            _ if facts.risk == Risk::ReadOnly => {}
            _ => {
                return Verdict::Refuse(format!(
                    "read-only mode: `{}` may change things, so it is refused (change the mode with \
                     `aibuddy trust --approvals`)",
                    facts.tool
                ));
            }
        }
    }
    // 3. ask rules, and lines that cannot be known before they run
    match &line {
        Some(LineVerdict::Ask { rule, part }) => {
            return Verdict::Ask(Some(format!("your rule `ask {rule}` matches `{part}`")));
        }
        Some(LineVerdict::Unsure { why }) => {
            return Verdict::Ask(Some(format!(
                "the command line cannot be checked before it runs: {why}"
            )));
        }
        _ => {}
    }
    if let Some((RuleDecision::Ask, pattern)) = &tool {
        return Verdict::Ask(Some(format!("your rule `ask tool {pattern}` matches")));
    }
    // 4. allow rules
    if let Some(LineVerdict::Allow { rules }) = &line {
        let list = rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Verdict::Run(Some(format!(
            "ran without asking: allowed by your rules {list}"
        )));
    }
    if let Some((RuleDecision::Allow, pattern)) = &tool {
        return Verdict::Run(Some(format!(
            "ran without asking: allowed by your rule `tool {pattern}`"
        )));
    }
    // 5. the mode's default
    if facts.risk == Risk::ReadOnly {
        return Verdict::Run(None);
    }
    match (facts.mode, facts.kind) {
        (ApprovalMode::Ask, _) => {
            if !crate::confirm::needs_confirmation(
                facts.risk,
                facts.auto_approve_writes,
                facts.inside_project,
            ) {
                Verdict::Run(Some(
                    "ran without asking: `confirm.auto_approve_writes`, inside the project".into(),
                ))
            } else {
                Verdict::Ask(None)
            }
        }
        (ApprovalMode::Auto, CallKind::Command { .. } | CallKind::File) if !facts.checkpointed => {
            Verdict::Ask(Some(
                "auto mode asks here: the project's checkpoints are unavailable, so the call's \
                 changes could not be undone"
                    .into(),
            ))
        }
        (ApprovalMode::Auto, CallKind::Command { launch, .. }) => match launch {
            Launch::Full => Verdict::Run(Some(AUTO_CONFINED.into())),
            Launch::Degraded => Verdict::Ask(Some(
                "auto mode asks for commands here: the sandbox is weaker on this machine (no \
                 namespaces or no Landlock inside them)"
                    .into(),
            )),
            Launch::Unconfined => Verdict::Ask(Some(
                "auto mode asks for commands here: commands cannot be confined on this machine"
                    .into(),
            )),
        },
        (ApprovalMode::Auto, CallKind::File) if facts.inside_project => {
            Verdict::Run(Some(AUTO_WRITE.into()))
        }
        (ApprovalMode::Auto, CallKind::File) => Verdict::Ask(Some(
            "auto mode asks for writes outside the project and its writable roots".into(),
        )),
        (ApprovalMode::Auto, CallKind::Mcp) => Verdict::Ask(Some(
            "auto mode asks for MCP tools that are not read-only".into(),
        )),
        (ApprovalMode::Auto, CallKind::Other) => Verdict::Ask(None),
        (ApprovalMode::ReadOnly, CallKind::Command { .. }) => Verdict::Run(Some(
            "ran without asking: read-only mode, the project read-only and no network".into(),
        )),
        // Step 2 refused every other call that may write.
        (ApprovalMode::ReadOnly, _) => Verdict::Refuse("read-only mode".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalMode::{Ask, Auto, ReadOnly};
    use RuleDecision::{Allow, Deny};

    fn facts<'a>(mode: ApprovalMode, kind: CallKind<'a>, risk: Risk, inside: bool) -> Facts<'a> {
        let tool = match kind {
            CallKind::Command { .. } => "execute",
            CallKind::File => "write_file",
            CallKind::Mcp => "mcp__gh__create_issue",
            CallKind::Other => "other",
        };
        Facts {
            tool,
            risk,
            kind,
            inside_project: inside,
            mode,
            auto_approve_writes: false,
            checkpointed: true,
        }
    }

    fn cmd(line: &str, launch: Launch) -> CallKind<'_> {
        CallKind::Command { line, launch }
    }

    fn short(v: &Verdict) -> &'static str {
        match v {
            Verdict::Run(_) => "run",
            Verdict::Ask(_) => "ask",
            Verdict::Refuse(_) => "refuse",
        }
    }

    /// mode x kind -> decision, without rules.
    #[test]
    fn mode_table() {
        use Launch::*;
        let hi = Risk::HighImpact;
        let w = Risk::Writes;
        let table: Vec<(ApprovalMode, CallKind<'_>, Risk, bool, &str)> = vec![
            (Ask, cmd("ls", Full), hi, false, "ask"),
            (Ask, CallKind::File, w, true, "ask"),
            (Ask, CallKind::File, Risk::ReadOnly, true, "run"),
            (Ask, CallKind::Mcp, hi, false, "ask"),
            (Auto, cmd("ls", Full), hi, false, "run"),
            (Auto, cmd("ls", Degraded), hi, false, "ask"),
            (Auto, cmd("ls", Unconfined), hi, false, "ask"),
            (Auto, CallKind::File, w, true, "run"),
            (Auto, CallKind::File, w, false, "ask"),
            (Auto, CallKind::Mcp, hi, false, "ask"),
            (Auto, CallKind::Mcp, Risk::ReadOnly, false, "run"),
            (Auto, CallKind::Other, hi, false, "ask"),
            (ReadOnly, cmd("ls", Full), hi, false, "run"),
            (ReadOnly, cmd("ls", Degraded), hi, false, "run"),
            (ReadOnly, cmd("ls", Unconfined), hi, false, "refuse"),
            (ReadOnly, CallKind::File, w, true, "refuse"),
            (ReadOnly, CallKind::File, Risk::ReadOnly, true, "run"),
            (ReadOnly, CallKind::Mcp, hi, false, "refuse"),
        ];
        for (mode, kind, risk, inside, want) in table {
            let got = decide(&facts(mode, kind, risk, inside), &[]);
            assert_eq!(
                short(&got),
                want,
                "{mode} {kind:?} {risk:?} inside={inside}: {got:?}"
            );
        }
    }

    #[test]
    fn auto_approve_writes_keeps_its_meaning_in_ask_mode() {
        let mut f = facts(Ask, CallKind::File, Risk::Writes, true);
        f.auto_approve_writes = true;
        assert!(matches!(decide(&f, &[]), Verdict::Run(Some(_))));
        f.inside_project = false;
        assert_eq!(decide(&f, &[]), Verdict::Ask(None));
    }

    #[test]
    fn precedence_deny_read_only_ask_allow_default() {
        let rules = vec![
            ApprovalRule::command("cargo test *", Allow),
            ApprovalRule::command("git push *", RuleDecision::Ask),
            ApprovalRule::command("rm *", Deny),
            ApprovalRule::tool("mcp__gh__*", Allow),
            ApprovalRule::tool("mcp__gh__delete*", Deny),
        ];
        let hi = Risk::HighImpact;
        let d = |mode, kind, risk| decide(&facts(mode, kind, risk, false), &rules);
        // deny beats every mode
        for mode in [Ask, Auto, ReadOnly] {
            assert_eq!(
                short(&d(mode, cmd("cargo test; rm x", Launch::Full), hi)),
                "refuse"
            );
        }
        let mut f = facts(Auto, CallKind::Mcp, hi, false);
        f.tool = "mcp__gh__delete_repo";
        assert!(matches!(decide(&f, &rules), Verdict::Refuse(_)));
        // read-only beats an allow rule for a tool that may write
        f.tool = "mcp__gh__create";
        f.mode = ReadOnly;
        assert!(matches!(decide(&f, &rules), Verdict::Refuse(_)));
        // an ask rule beats the auto mode's default
        assert_eq!(
            short(&d(Auto, cmd("git push origin", Launch::Full), hi)),
            "ask"
        );
        // an unsure line is asked even in auto mode
        assert_eq!(short(&d(Auto, cmd("$X", Launch::Full), hi)), "ask");
        // an allow rule beats the ask mode's default, even on a weak launch path
        let v = d(Ask, cmd("cargo test -q", Launch::Unconfined), hi);
        assert_eq!(
            v,
            Verdict::Run(Some(
                "ran without asking: allowed by your rules `cargo test *`".into()
            ))
        );
        f.mode = Ask;
        assert!(matches!(decide(&f, &rules), Verdict::Run(Some(_))));
    }

    #[test]
    fn reasons_name_the_mode_and_the_confinement() {
        assert_eq!(
            decide(
                &facts(Auto, cmd("ls", Launch::Full), Risk::HighImpact, false),
                &[]
            ),
            Verdict::Run(Some(
                "ran without asking: auto mode, confined, checkpointed".into()
            ))
        );
        assert_eq!(
            decide(&facts(Auto, CallKind::File, Risk::Writes, true), &[]),
            Verdict::Run(Some(
                "ran without asking: auto mode, a write inside the project, checkpointed".into()
            ))
        );
    }

    /// `auto` runs a call unasked only when its changes can be undone: without checkpoints a
    /// confined command and a write inside the project are asked, with the reason.
    #[test]
    fn auto_asks_when_the_project_is_not_checkpointed() {
        for kind in [cmd("ls", Launch::Full), CallKind::File] {
            let mut f = facts(Auto, kind, Risk::Writes, true);
            f.checkpointed = false;
            match decide(&f, &[]) {
                Verdict::Ask(Some(why)) => assert!(why.contains("checkpoints"), "{why}"),
                other => panic!("{kind:?}: {other:?}"),
            }
            // An explicit allow rule is the person's own answer and still runs.
            let allowed = decide(&f, &[ApprovalRule::command("ls", Allow)]);
            if matches!(kind, CallKind::Command { .. }) {
                assert!(matches!(allowed, Verdict::Run(Some(_))), "{allowed:?}");
            }
        }
        // Read-only tools never depend on it.
        let mut f = facts(Auto, CallKind::File, Risk::ReadOnly, true);
        f.checkpointed = false;
        assert_eq!(decide(&f, &[]), Verdict::Run(None));
    }
}
