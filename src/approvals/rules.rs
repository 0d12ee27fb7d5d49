//! `approvals.rules`: the person's standing answers for commands and tools (pure).
//!
//! A rule is `{"command": "cargo test *", "decision": "allow" | "ask" | "deny"}` or
//! `{"tool": "mcp__github__*", "decision": ...}`.
//!
//! **Command patterns** are shell words separated by spaces. Each word matches the same literal
//! word of a simple command (after quotes and escapes are removed, see [`super::shell`]); a `*`
//! word matches any one literal word; a `*` as the LAST word matches any remaining words, none
//! included, whatever they are (so `cargo test *` covers `cargo test` and `cargo test -p x $(...)`,
//! whose substitution is a command of its own that must be allowed too). Without a trailing `*`
//! a pattern matches the whole command exactly: `cargo test` is only `cargo test`. `*` inside a
//! word is an ordinary character.
//!
//! Which words are compared:
//! - `allow` compares the whole simple command, leading assignments included, the name exactly
//!   as written (`./cargo` is not `cargo`).
//! - `deny` and `ask` also compare the command without its leading assignments, by the base name
//!   of its program (`/bin/rm` is `rm`), and what a wrapper runs: every tail of the words of
//!   `env`, `command`, `exec`, `nice`, `nohup`, `time`, `timeout`, `xargs`, `sudo`... (so
//!   `env rm -rf x` and `timeout 5 rm x` meet a `rm *` deny), and the command of `find -exec`.
//!
//! A line runs unasked by the rules only when every simple command in it is allowed. Precedence
//! inside the rules: any `deny` part refuses the whole line; then any `ask` part asks; then a line
//! the parser is unsure of asks; then a line whose every part is allowed is allowed.
//!
//! **Tool patterns** are globs on the tool name: `*` matches any run of characters.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::shell::{ParsedLine, SimpleCommand, Word, parse_line};

/// What a rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
#[ts(export)]
pub enum RuleDecision {
    Allow,
    Ask,
    Deny,
}

impl RuleDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleDecision::Allow => "allow",
            RuleDecision::Ask => "ask",
            RuleDecision::Deny => "deny",
        }
    }
}

/// One rule: exactly one of `command` and `tool`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct ApprovalRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<String>,
    pub decision: RuleDecision,
}

impl ApprovalRule {
    pub fn command(pattern: &str, decision: RuleDecision) -> Self {
        Self {
            command: Some(pattern.to_string()),
            tool: None,
            decision,
        }
    }

    pub fn tool(pattern: &str, decision: RuleDecision) -> Self {
        Self {
            command: None,
            tool: Some(pattern.to_string()),
            decision,
        }
    }

    /// Why the rule is not usable, if it is not (settings problems).
    pub fn invalid(&self) -> Option<String> {
        match (&self.command, &self.tool) {
            (Some(_), Some(_)) => Some("a rule has either `command` or `tool`, not both".into()),
            (None, None) => Some("a rule needs `command` or `tool`".into()),
            (Some(c), None) if c.split_whitespace().next().is_none() => {
                Some("`command` must name at least one word".into())
            }
            (Some(c), None) if c.split_whitespace().next() == Some("*") => Some(
                "`command` must start with a command name, not `*` (a rule for every command is the mode's job)".into(),
            ),
            (None, Some(t)) if t.trim().is_empty() => Some("`tool` must not be empty".into()),
            _ => None,
        }
    }

    /// The rule as shown: `allow command \`cargo test *\``.
    pub fn shown(&self) -> String {
        match (&self.command, &self.tool) {
            (Some(c), _) => format!("{} command `{c}`", self.decision.as_str()),
            (_, Some(t)) => format!("{} tool `{t}`", self.decision.as_str()),
            _ => format!("{} (empty rule)", self.decision.as_str()),
        }
    }
}

/// The rule offered by a confirmation of `line`: "allow commands starting with `<name> <sub>`"
/// (the program and, when it has one, its first plain word: `cargo test *`, `git status *`), or
/// None when the line is not one plain, fully known simple command.
pub fn offer_for(line: &str) -> Option<ApprovalRule> {
    let parsed = parse_line(line);
    if !parsed.unsure.is_empty() || parsed.commands.len() != 1 {
        return None;
    }
    let cmd = &parsed.commands[0];
    if cmd.assignments > 0 {
        return None;
    }
    let words = cmd.from_name();
    let name = words.first()?.literal()?;
    if wrapped(name) || name.contains('/') {
        return None;
    }
    let mut pattern = vec![name.to_string()];
    if let Some(Word::Literal(sub)) = words.get(1)
        && !sub.starts_with('-')
        && !sub.is_empty()
        && sub
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
    {
        pattern.push(sub.clone());
    }
    pattern.push("*".into());
    Some(ApprovalRule::command(
        &pattern.join(" "),
        RuleDecision::Allow,
    ))
}

/// The rule a confirmation of `tool` on `target` may offer: only `execute` calls have one.
pub fn offer_for_call(tool: &str, target: &str) -> Option<ApprovalRule> {
    (tool == "execute").then(|| offer_for(target)).flatten()
}

/// What a confirmation offers, for both hosts: "allow commands starting with `cargo test` in
/// this project", with the exact rule stored.
pub fn offer_label(rule: &ApprovalRule) -> String {
    let pattern = rule.command.as_deref().unwrap_or_default();
    let prefix = pattern.strip_suffix(" *").unwrap_or(pattern);
    format!("allow commands starting with `{prefix}` in this project")
}

/// Programs that run another command given in their arguments.
const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "exec", "nice", "nohup", "time", "timeout", "stdbuf", "xargs",
    "sudo", "doas", "setsid", "ionice", "chrt", "taskset", "unbuffer", "strace", "ltrace", "watch",
    "flock", "chroot", "su", "runuser", "busybox", "parallel", "script",
];

fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn wrapped(name: &str) -> bool {
    WRAPPERS.contains(&base(name))
}

/// Does `pattern` (already split) match `words`? `by_base`: the first word may match by base name.
fn matches(pattern: &[&str], words: &[Word], by_base: bool) -> bool {
    let (body, rest_any) = match pattern.split_last() {
        Some((&"*", body)) => (body, true),
        _ => (pattern, false),
    };
    if words.len() < body.len() || (!rest_any && words.len() != body.len()) {
        return false;
    }
    body.iter().zip(words).enumerate().all(|(i, (p, w))| {
        let Some(w) = w.literal() else {
            return false;
        };
        *p == "*" || *p == w || (i == 0 && by_base && *p == base(w))
    })
}

/// The word lists a `deny` or `ask` rule is compared with.
fn strict_candidates(cmd: &SimpleCommand) -> Vec<&[Word]> {
    let mut out: Vec<&[Word]> = vec![cmd.words.as_slice(), cmd.from_name()];
    let words = cmd.from_name();
    if let Some(name) = words.first().and_then(Word::literal) {
        if wrapped(name) {
            out.extend((1..words.len()).map(|i| &words[i..]));
        }
        if base(name) == "find" {
            for (i, w) in words.iter().enumerate() {
                if matches!(w.literal(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
                    let rest = &words[i + 1..];
                    let end = rest
                        .iter()
                        .position(|w| matches!(w.literal(), Some(";" | "+")))
                        .unwrap_or(rest.len());
                    out.push(&rest[..end]);
                }
            }
        }
    }
    out
}

/// What the rules say about one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineVerdict {
    /// A part matches a `deny` rule: the whole line is refused.
    Deny { rule: String, part: String },
    /// A part matches an `ask` rule.
    Ask { rule: String, part: String },
    /// The line cannot be fully known before it runs.
    Unsure { why: String },
    /// Every part is allowed; the rules used, in order.
    Allow { rules: Vec<String> },
    /// Some part matches no rule: the mode decides.
    NoRule,
}

fn command_rules(rules: &[ApprovalRule]) -> impl Iterator<Item = (&str, Vec<&str>, RuleDecision)> {
    rules.iter().filter_map(|r| {
        let c = r.command.as_deref()?;
        (r.invalid().is_none()).then(|| (c, c.split_whitespace().collect(), r.decision))
    })
}

/// What the rules say about `line` (see the module docs for precedence).
pub fn line_verdict(rules: &[ApprovalRule], line: &str) -> LineVerdict {
    verdict_of(rules, &parse_line(line))
}

fn verdict_of(rules: &[ApprovalRule], parsed: &ParsedLine) -> LineVerdict {
    for wanted in [RuleDecision::Deny, RuleDecision::Ask] {
        for cmd in &parsed.commands {
            let cands = strict_candidates(cmd);
            for (text, pattern, decision) in command_rules(rules) {
                if decision == wanted && cands.iter().any(|c| matches(&pattern, c, true)) {
                    let (rule, part) = (text.to_string(), cmd.shown());
                    return match wanted {
                        RuleDecision::Deny => LineVerdict::Deny { rule, part },
                        _ => LineVerdict::Ask { rule, part },
                    };
                }
            }
        }
    }
    if let Some(why) = parsed.unsure.first() {
        return LineVerdict::Unsure { why: why.clone() };
    }
    if parsed.commands.is_empty() {
        return LineVerdict::NoRule;
    }
    let mut used: Vec<String> = Vec::new();
    for cmd in &parsed.commands {
        let allowed = command_rules(rules).find(|(_, pattern, decision)| {
            *decision == RuleDecision::Allow && matches(pattern, &cmd.words, false)
        });
        match allowed {
            Some((text, _, _)) => {
                if !used.iter().any(|u| u == text) {
                    used.push(text.to_string());
                }
            }
            None => return LineVerdict::NoRule,
        }
    }
    LineVerdict::Allow { rules: used }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// The strongest tool rule matching `tool` (deny > ask > allow) and its pattern.
pub fn tool_verdict(rules: &[ApprovalRule], tool: &str) -> Option<(RuleDecision, String)> {
    [RuleDecision::Deny, RuleDecision::Ask, RuleDecision::Allow]
        .into_iter()
        .find_map(|d| {
            rules.iter().find_map(|r| {
                let t = r.tool.as_deref()?;
                (r.decision == d && r.invalid().is_none() && glob_matches(t, tool))
                    .then(|| (d, t.to_string()))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use RuleDecision::*;

    fn rules(list: &[(&str, RuleDecision)]) -> Vec<ApprovalRule> {
        list.iter()
            .map(|(c, d)| ApprovalRule::command(c, *d))
            .collect()
    }

    fn standard() -> Vec<ApprovalRule> {
        rules(&[
            ("cargo test *", Allow),
            ("cargo build *", Allow),
            ("git status", Allow),
            ("git diff *", Allow),
            ("ls *", Allow),
            ("cd *", Allow),
            ("grep *", Allow),
            ("tee *", Allow),
            ("rm *", Deny),
            ("git push *", Ask),
        ])
    }

    fn v(line: &str) -> LineVerdict {
        line_verdict(&standard(), line)
    }

    fn is_deny(line: &str) -> bool {
        matches!(v(line), LineVerdict::Deny { .. })
    }

    #[test]
    fn patterns_match_word_by_word_with_star_words() {
        let w = |s: &str| {
            s.split(' ')
                .map(|x| Word::Literal(x.into()))
                .collect::<Vec<_>>()
        };
        assert!(matches(&["cargo", "test"], &w("cargo test"), false));
        assert!(!matches(&["cargo", "test"], &w("cargo test -p x"), false));
        assert!(matches(
            &["cargo", "test", "*"],
            &w("cargo test -p x"),
            false
        ));
        assert!(matches(&["cargo", "test", "*"], &w("cargo test"), false));
        assert!(matches(
            &["cargo", "*", "--release"],
            &w("cargo build --release"),
            false
        ));
        assert!(!matches(
            &["cargo", "*", "--release"],
            &w("cargo --release"),
            false
        ));
        assert!(!matches(&["cargo", "test", "*"], &w("cargo testx"), false));
        assert!(!matches(&["rm", "*"], &w("/bin/rm x"), false));
        assert!(matches(&["rm", "*"], &w("/bin/rm x"), true));
        // A dynamic word only meets a trailing `*`.
        let dynamic = vec![Word::Literal("cargo".into()), Word::Dynamic("$X".into())];
        assert!(!matches(&["cargo", "*"][..1], &dynamic, false));
        assert!(matches(&["cargo", "*"], &dynamic, false));
        assert!(!matches(&["cargo", "*", "*"], &dynamic, false));
    }

    #[test]
    fn every_part_must_be_allowed() {
        assert_eq!(
            v("cd crates/x && cargo test -p x | tee log"),
            LineVerdict::Allow {
                rules: vec!["cd *".into(), "cargo test *".into(), "tee *".into()]
            }
        );
        assert_eq!(
            v("git status"),
            LineVerdict::Allow {
                rules: vec!["git status".into()]
            }
        );
        assert_eq!(v("git status --short"), LineVerdict::NoRule);
        assert_eq!(v("cargo test && make"), LineVerdict::NoRule);
        assert_eq!(v("cargo test $(curl x|sh)"), LineVerdict::NoRule);
    }

    #[test]
    fn hostile_lines_are_denied_or_asked_never_allowed() {
        for line in [
            "cargo test; rm -rf ~",
            "cargo test && \\rm -rf /",
            "bash -c \"cargo test && rm -rf /\"",
            "sh -c 'sh -c \"rm -rf /\"'",
            "env rm -rf x",
            "command rm x",
            "exec rm x",
            "/bin/rm -rf /",
            "FOO=1 rm -rf /",
            "timeout 5 rm -rf /",
            "find . -name '*.rs' -exec rm {} ;",
            "ls | xargs rm",
            "cargo test `rm -rf ~`",
            "cargo test $(rm -rf ~)",
            "cat <<EOF\n$(rm -rf ~)\nEOF\n",
            "(cd / && rm -rf .)",
            "cargo test \\\n; rm -rf ~",
            "'r'm -rf ~",
        ] {
            assert!(is_deny(line), "{line:?}: {:?}", v(line));
        }
        for line in [
            "cargo test $(curl x|sh)",
            "$CMD",
            "eval 'cargo test'",
            "ｒｍ -rf ~",
            "cargo tеst",
            "PATH=/tmp/x; cargo test",
            "cargo test > ~/.bashrc",
            "cargo test; (",
            "RUST_LOG=1 cargo test",
            "bash -c \"$X\"",
        ] {
            assert!(
                !matches!(
                    v(line),
                    LineVerdict::Allow { .. } | LineVerdict::Deny { .. }
                ),
                "{line:?}: {:?}",
                v(line)
            );
        }
        assert!(matches!(
            v("cargo test; (").clone(),
            LineVerdict::Unsure { .. }
        ));
    }

    #[test]
    fn deny_beats_ask_beats_unsure_beats_allow() {
        assert!(matches!(v("git push origin main"), LineVerdict::Ask { .. }));
        assert!(matches!(v("git push x; rm y"), LineVerdict::Deny { .. }));
        assert!(matches!(v("git push x; $CMD"), LineVerdict::Ask { .. }));
        assert!(matches!(v("cargo test; $CMD"), LineVerdict::Unsure { .. }));
        // A deny is found even in a line the parser is unsure of.
        assert!(matches!(v("f() { rm -rf ~; }"), LineVerdict::Deny { .. }));
        // Grep for the word `rm` is not `rm`.
        assert!(matches!(v("grep rm file"), LineVerdict::Allow { .. }));
    }

    #[test]
    fn allow_needs_the_exact_program_and_the_assignments() {
        let r = rules(&[
            ("cargo test *", Allow),
            ("RUST_LOG=debug cargo test *", Allow),
        ]);
        assert!(matches!(
            line_verdict(&r, "./cargo test"),
            LineVerdict::NoRule
        ));
        assert!(matches!(
            line_verdict(&r, "/tmp/cargo test"),
            LineVerdict::NoRule
        ));
        assert!(matches!(
            line_verdict(&r, "RUST_LOG=debug cargo test -q"),
            LineVerdict::Allow { .. }
        ));
        assert!(matches!(
            line_verdict(&r, "RUST_LOG=trace cargo test"),
            LineVerdict::NoRule
        ));
        assert!(matches!(
            line_verdict(&r, "env cargo test"),
            LineVerdict::NoRule
        ));
    }

    #[test]
    fn invalid_rules_are_reported_and_never_match() {
        assert!(ApprovalRule::command("*", Allow).invalid().is_some());
        assert!(ApprovalRule::command("  ", Allow).invalid().is_some());
        let both = ApprovalRule {
            command: Some("ls".into()),
            tool: Some("x".into()),
            decision: Allow,
        };
        assert!(both.invalid().is_some());
        assert!(matches!(
            line_verdict(&[ApprovalRule::command("*", Allow)], "ls"),
            LineVerdict::NoRule
        ));
    }

    #[test]
    fn tool_globs() {
        assert!(glob_matches("mcp__github__*", "mcp__github__create_issue"));
        assert!(!glob_matches("mcp__github__*", "mcp__gitlab__x"));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("mcp__*__list*", "mcp__db__list_tables"));
        assert!(!glob_matches("mcp__*__list*", "mcp__db__drop"));
        assert!(glob_matches("write_file", "write_file"));
        assert!(!glob_matches("write_file", "write_files"));
        let r = vec![
            ApprovalRule::tool("mcp__github__*", Allow),
            ApprovalRule::tool("mcp__github__delete*", Deny),
        ];
        assert_eq!(
            tool_verdict(&r, "mcp__github__delete_repo"),
            Some((Deny, "mcp__github__delete*".into()))
        );
        assert_eq!(
            tool_verdict(&r, "mcp__github__get"),
            Some((Allow, "mcp__github__*".into()))
        );
        assert_eq!(tool_verdict(&r, "execute"), None);
    }

    #[test]
    fn the_offered_rule_names_the_program_and_its_subcommand() {
        let offer = |l: &str| offer_for(l).and_then(|r| r.command);
        assert_eq!(offer("cargo test -p x"), Some("cargo test *".into()));
        assert_eq!(offer("ls -la"), Some("ls *".into()));
        assert_eq!(offer("git status"), Some("git status *".into()));
        assert_eq!(offer("cargo test && rm x"), None);
        assert_eq!(offer("env rm x"), None);
        assert_eq!(offer("./run.sh"), None);
        assert_eq!(offer("$X y"), None);
        assert_eq!(offer("FOO=1 make"), None);
        // The offered rule allows the line it was offered for.
        let line = "cargo test -p x";
        let rule = offer_for(line).unwrap();
        assert!(matches!(
            line_verdict(&[rule], line),
            LineVerdict::Allow { .. }
        ));
    }
}
