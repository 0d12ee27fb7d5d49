//! Project files a project hook runs (`crate::hooks`). A trusted project's hook runs outside the
//! sandbox with the person's authority, while a confined command may write anywhere in the
//! project: so, like a server's command line ([`super::pins`]), every word of a hook's command
//! that names a path inside the project is pinned (kind and SHA-256 in the trust digest). A
//! rewritten `./check.sh` makes the project untrusted again, and its hooks stop running until the
//! person trusts it again.
//!
//! The command is a shell line: it is split into words (quotes and backslashes honoured) at
//! blanks and at the operators `;`, `&`, `|`, `(`, `)`, `<`, `>`; the first word of each simple
//! command is the command (looked up like a server's), the others its arguments (option words
//! without `=` are not paths and are left out). A `cd DIR` moves where later words are looked up;
//! the `-c` line of `sh`/`bash`/`dash`/`zsh`/`ksh` is pinned the same way (nested up to 4 deep).
//! A line with a variable or a substitution (`$`, a backtick) gets the pin `(dynamic)`
//! ([`DYNAMIC`]), shown with the grant: what it names is not pinned. What a pinned program reads
//! in turn (a `Makefile` for `make`, `package.json` for `npm run`, a linter's config) is not
//! pinned either, as for servers.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::pins::{self, Pin};
use crate::settings::HooksSettings;

/// One project hook and the project files its command names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HookGrant {
    /// `pre_tool_call`, ...
    pub event: String,
    /// Its position in that event's list (0-based).
    pub index: usize,
    pub command: String,
    pub pins: Vec<Pin>,
}

impl HookGrant {
    /// How the hook is named in the digest.
    pub fn label(&self) -> String {
        format!("hook {}[{}]", self.event, self.index)
    }
}

/// The simple commands of a shell line, each as its words (pure).
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            ';' | '&' | '|' | '(' | ')' | '\n' => {
                end_word(&mut words, &mut word, &mut in_word);
                if !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            // A redirection's target is a word of the command (a file it reads or writes).
            '<' | '>' => end_word(&mut words, &mut word, &mut in_word),
            c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        out.push(words);
    }
    out
}

/// Shells whose `-c` argument is a command line of its own (pinned like the hook's).
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// How deep `sh -c "sh -c ..."` is followed.
const MAX_NESTING: usize = 4;

/// The pin that says a command line names something this split cannot follow.
pub const DYNAMIC: &str =
    "names something through a variable or a substitution: what that is, is not pinned";

/// The pins of one hook command run in `project_root`.
pub fn hook_pins(project_root: &Path, command: &str) -> Vec<Pin> {
    let mut out: Vec<Pin> = Vec::new();
    collect(project_root, project_root, command, 0, &mut out);
    out
}

fn collect(project_root: &Path, cwd: &Path, command: &str, depth: usize, out: &mut Vec<Pin>) {
    let push = |p: Pin, out: &mut Vec<Pin>| {
        if !out.iter().any(|o| o.path == p.path) {
            out.push(p);
        }
    };
    if command.contains('$') || command.contains('`') {
        push(
            Pin {
                path: "(dynamic)".to_string(),
                state: DYNAMIC.to_string(),
                at: Default::default(),
            },
            out,
        );
    }
    // A `cd` moves where the words after it are looked up (`cd tools && ./lint.sh`).
    let mut cwd = cwd.to_path_buf();
    for words in simple_commands(command) {
        // Leading `VAR=value` assignments are not the command.
        let mut rest = words
            .into_iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-') && !w.contains('/'));
        let Some(cmd) = rest.next() else {
            continue;
        };
        let mut all: Vec<String> = rest.collect();
        let base = cmd.rsplit('/').next().unwrap_or(&cmd).to_string();
        if SHELLS.contains(&base.as_str())
            && let Some(i) = all.iter().position(|a| a == "-c")
            && i + 1 < all.len()
        {
            // The `-c` line is a command line, not a path.
            let inner = all.remove(i + 1);
            if depth < MAX_NESTING {
                collect(project_root, &cwd, &inner, depth + 1, out);
            }
        }
        // Words with a variable or substitution are the `(dynamic)` pin's, not paths as written.
        let literal = |w: &String| !w.contains('$') && !w.contains('`');
        let args: Vec<String> = all
            .iter()
            .filter(|a| (!a.starts_with('-') || a.contains('=')) && literal(a))
            .cloned()
            .collect();
        if !literal(&cmd) {
            continue;
        }
        for p in pins::pins(project_root, &cwd, &cmd, &args, &BTreeMap::new()) {
            push(p, out);
        }
        if matches!(base.as_str(), "cd" | "pushd")
            && let Some(dir) = args.first()
        {
            cwd = crate::settings::normalize_lexically(&cwd.join(dir));
        }
    }
}

/// Every project hook with its pins.
pub fn grants(project_root: &Path, hooks: &HooksSettings) -> Vec<HookGrant> {
    let mut out = Vec::new();
    for event in crate::settings::HOOK_EVENTS {
        for (index, h) in hooks.of(event).iter().enumerate() {
            out.push(HookGrant {
                event: event.to_string(),
                index,
                command: h.command.clone(),
                pins: hook_pins(project_root, &h.command),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_line_splits_into_simple_commands() {
        assert_eq!(
            simple_commands("./a.sh --x && python3 'b c.py' >out.log; FOO=1 ./d \"e\\\"f\""),
            vec![
                vec!["./a.sh", "--x"],
                vec!["python3", "b c.py", "out.log"],
                vec!["FOO=1", "./d", "e\"f"],
            ]
        );
        assert!(simple_commands("  ").is_empty());
    }

    #[test]
    fn a_hook_script_in_the_project_is_pinned_by_content() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(root.join("check.sh"), "exit 0").unwrap();
        let pins = hook_pins(&root, "sh check.sh --strict | tee /tmp/x");
        let names: Vec<&str> = pins.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(names, vec!["check.sh"]);
        assert!(pins[0].state.starts_with("file sha256:"));
        let before = pins[0].state.clone();
        std::fs::write(root.join("check.sh"), "exit 2").unwrap();
        assert_ne!(hook_pins(&root, "sh check.sh")[0].state, before);
        // `cd` and `sh -c` are followed; a variable is said to be unpinned.
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/lint.sh"), "exit 0").unwrap();
        let names =
            |c: &str| -> Vec<String> { hook_pins(&root, c).into_iter().map(|p| p.path).collect() };
        assert_eq!(
            names("cd tools && ./lint.sh"),
            vec!["tools", "tools/lint.sh"]
        );
        assert_eq!(
            names("bash -c 'cd tools; sh lint.sh'"),
            vec!["tools", "tools/lint.sh"]
        );
        assert_eq!(names("sh $SCRIPT"), vec!["(dynamic)"]);
        // A script not there yet is pinned as absent: creating it is a change.
        let p = hook_pins(&root, "./later.sh");
        assert_eq!(
            (p[0].path.as_str(), p[0].state.as_str()),
            ("later.sh", "absent")
        );
    }
}
