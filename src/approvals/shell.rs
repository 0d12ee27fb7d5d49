//! A command line taken apart into the simple commands it would run (pure), with tree-sitter-bash.
//!
//! The walk is a whitelist: every node kind it knows is either structure (lists, pipelines,
//! subshells, `if`/`for`/`while`/`case`, redirections), a command, or a word; anything else, a
//! syntax error, or a missing token makes the line [`ParsedLine::unsure`], and such a line is
//! asked whatever the rules say (a `deny` found in the parts that were understood still refuses).
//!
//! What is collected:
//! - every simple command, wherever it stands: in `&&`/`||`/`;` lists, pipelines, subshells,
//!   `{ ...; }`, conditions and bodies of `if`/`while`/`for`/`case`, command substitutions
//!   (`$(...)`, backticks), process substitutions, here-documents and here-strings;
//! - the script of `bash -c '...'`, `sh -c`, `dash`, `zsh`, `ksh` (flags such as `-e`, `-l`, `-lc`
//!   allowed before it), parsed again, up to [`MAX_DEPTH`] levels: the shell itself is not a part.
//!
//! Each word is [`Word::Literal`] (quotes removed, `\x` unescaped) when the shell would pass it
//! as written, else [`Word::Dynamic`] (variables, substitutions, globs, `~`, braces, `$'...'`).
//! What makes a line unsure: a command name that is not a plain ASCII literal, `eval`, a
//! function definition, variable assignments on their own or `export`/`declare`/`unset`
//! (they can change what a later command name means, e.g. `PATH=...`), an output redirection
//! whose target is not a literal relative path inside the project (or `/dev/null`), and any
//! construct the walk does not know. Assignments in front of a command (`RUST_LOG=1 cargo test`)
//! are kept as leading words, so a rule must name them to allow the command.

use tree_sitter::{Node, Parser};

/// How deep `bash -c` scripts are followed.
pub const MAX_DEPTH: usize = 8;

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Passed exactly as this text.
    Literal(String),
    /// Known only when the line runs (its source text).
    Dynamic(String),
}

impl Word {
    pub fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(s) => Some(s),
            Word::Dynamic(_) => None,
        }
    }

    /// The word as shown (its literal text, or its source text).
    pub fn shown(&self) -> &str {
        match self {
            Word::Literal(s) | Word::Dynamic(s) => s,
        }
    }
}

/// A simple command: its words, leading assignments first (`FOO=1`), then the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<Word>,
    /// How many leading words are assignments (`FOO=1 cargo test`: 1).
    pub assignments: usize,
}

impl SimpleCommand {
    /// The words from the command name on.
    pub fn from_name(&self) -> &[Word] {
        &self.words[self.assignments.min(self.words.len())..]
    }

    /// The command as shown in reasons.
    pub fn shown(&self) -> String {
        self.words
            .iter()
            .map(Word::shown)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a command line would run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedLine {
    pub commands: Vec<SimpleCommand>,
    /// Why the line cannot be fully known before it runs (empty: fully known).
    pub unsure: Vec<String>,
}

/// Take a command line apart (never fails: what cannot be understood is in `unsure`).
pub fn parse_line(line: &str) -> ParsedLine {
    let mut out = ParsedLine::default();
    parse_into(line, 0, &mut out);
    out
}

fn parse_into(line: &str, depth: usize, out: &mut ParsedLine) {
    if depth > MAX_DEPTH {
        out.unsure
            .push(format!("shells nested deeper than {MAX_DEPTH} levels"));
        return;
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.unsure.push("the shell parser is unavailable".into());
        return;
    }
    let Some(tree) = parser.parse(line, None) else {
        out.unsure
            .push("the command line could not be parsed".into());
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.unsure
            .push("the command line has a syntax error or is incomplete".into());
    }
    let mut walk = Walk {
        src: line,
        depth,
        out,
    };
    walk.node(root);
}

struct Walk<'a, 'o> {
    src: &'a str,
    depth: usize,
    out: &'o mut ParsedLine,
}

/// Node kinds that only hold other statements or tokens.
const STRUCTURE: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "redirected_statement",
    "negated_command",
    "do_group",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "case_item",
    "test_command",
    "command_substitution",
    "process_substitution",
    "heredoc_body",
    "heredoc_redirect",
    "herestring_redirect",
    "arithmetic_expansion",
    "binary_expression",
    "unary_expression",
    "parenthesized_expression",
    "postfix_expression",
    "ternary_expression",
    "expansion",
    "simple_expansion",
    "string",
    "concatenation",
    "array",
    "subscript",
    "translated_string",
    "brace_expression",
];

/// Leaves with nothing to run inside.
const LEAVES: &[&str] = &[
    "comment",
    "word",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "number",
    "variable_name",
    "special_variable_name",
    "test_operator",
    "regex",
    "extglob_pattern",
    "heredoc_start",
    "heredoc_end",
    "heredoc_content",
    "file_descriptor",
];

impl Walk<'_, '_> {
    fn text(&self, n: Node<'_>) -> &str {
        n.utf8_text(self.src.as_bytes()).unwrap_or("")
    }

    fn unsure(&mut self, why: String) {
        if !self.out.unsure.contains(&why) {
            self.out.unsure.push(why);
        }
    }

    fn children(&mut self, n: Node<'_>) {
        let mut cursor = n.walk();
        let kids: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
        for k in kids {
            self.node(k);
        }
    }

    fn node(&mut self, n: Node<'_>) {
        if n.is_error() || n.is_missing() {
            self.unsure("the command line has a syntax error or is incomplete".into());
            self.children(n);
            return;
        }
        let kind = n.kind();
        match kind {
            "command" => self.command(n),
            "file_redirect" => self.redirect(n),
            "function_definition" => {
                self.unsure("it defines a shell function".into());
                self.children(n);
            }
            "variable_assignment" | "variable_assignments" => {
                self.unsure(format!(
                    "it assigns a variable (`{}`), which can change what later commands run",
                    self.text(n)
                ));
                self.children(n);
            }
            "declaration_command" | "unset_command" => {
                self.unsure(format!(
                    "`{}` changes variables, which can change what later commands run",
                    self.text(n).split_whitespace().next().unwrap_or("")
                ));
                self.children(n);
            }
            k if STRUCTURE.contains(&k) || LEAVES.contains(&k) => self.children(n),
            other => {
                self.unsure(format!(
                    "it uses a shell construct not checked here ({other})"
                ));
                self.children(n);
            }
        }
    }

    /// Output redirections may only name a literal relative path inside the project.
    fn redirect(&mut self, n: Node<'_>) {
        let mut cursor = n.walk();
        let op = n
            .children(&mut cursor)
            .find(|c| !c.is_named())
            .map(|c| self.text(c).to_string())
            .unwrap_or_default();
        let writes = op.contains('>');
        let dest = n.child_by_field_name("destination");
        if writes && let Some(d) = dest {
            let digits = self.text(d).chars().all(|c| c.is_ascii_digit() || c == '-');
            let is_fd =
                matches!(d.kind(), "number" | "file_descriptor") || (op.contains('&') && digits);
            if !is_fd {
                match self.word(d) {
                    Word::Literal(path) if safe_target(&path) => {}
                    w => self.unsure(format!(
                        "it redirects output to `{}`, not a plain path inside the project",
                        w.shown()
                    )),
                }
            }
        }
        self.children(n);
    }

    fn command(&mut self, n: Node<'_>) {
        let mut words = Vec::new();
        let mut assignments = 0;
        let mut cursor = n.walk();
        let kids: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
        for k in kids {
            match k.kind() {
                "variable_assignment" => {
                    // Kept as a leading word: a rule must name it (`PATH=x cmd` is not `cmd`).
                    let name = k
                        .child_by_field_name("name")
                        .map(|v| self.text(v).to_string())
                        .unwrap_or_default();
                    let value = k.child_by_field_name("value");
                    let w = match value.map(|v| self.word(v)) {
                        None => Word::Literal(format!("{name}=")),
                        Some(Word::Literal(v)) => Word::Literal(format!("{name}={v}")),
                        Some(Word::Dynamic(_)) => Word::Dynamic(self.text(k).to_string()),
                    };
                    if words.len() == assignments {
                        assignments += 1;
                    }
                    words.push(w);
                    self.children(k);
                }
                "command_name" => {
                    let inner = k.named_child(0);
                    let w = inner.map_or(Word::Dynamic(String::new()), |i| self.word(i));
                    words.push(w);
                    self.children(k);
                }
                "file_redirect" => self.redirect(k),
                "herestring_redirect" | "heredoc_redirect" => self.children(k),
                "comment" => {}
                _ => {
                    words.push(self.word(k));
                    self.node(k);
                }
            }
        }
        let cmd = SimpleCommand { words, assignments };
        match cmd.from_name().first() {
            None => {
                if cmd.assignments > 0 {
                    self.unsure(format!(
                        "it assigns a variable (`{}`), which can change what later commands run",
                        cmd.shown()
                    ));
                }
                return;
            }
            Some(Word::Literal(name)) if !plain_name(name) => {
                self.unsure(format!(
                    "the command name `{name}` has characters other than plain ASCII letters, digits and `._+-/`"
                ));
            }
            Some(Word::Literal(name)) if name == "eval" => {
                self.unsure("it runs `eval`, whose command is known only when it runs".into());
            }
            Some(Word::Literal(_)) => {}
            Some(Word::Dynamic(src)) => {
                self.unsure(format!(
                    "the command name `{src}` is known only when the line runs"
                ));
            }
        }
        if let Some(script) = shell_script(cmd.from_name()) {
            match script {
                Word::Literal(s) => {
                    let s = s.clone();
                    parse_into(&s, self.depth + 1, self.out);
                }
                Word::Dynamic(src) => {
                    let src = src.clone();
                    self.unsure(format!(
                        "the script of a nested shell (`{src}`) is known only when it runs"
                    ));
                }
            }
            return;
        }
        self.out.commands.push(cmd);
    }

    /// The word a node stands for.
    fn word(&self, n: Node<'_>) -> Word {
        let text = self.text(n);
        let dynamic = || Word::Dynamic(text.to_string());
        match n.kind() {
            "word" => unescape_word(text).map_or_else(dynamic, Word::Literal),
            "number" => Word::Literal(text.to_string()),
            "raw_string" => text
                .strip_prefix('\'')
                .and_then(|t| t.strip_suffix('\''))
                .map_or_else(dynamic, |t| Word::Literal(t.to_string())),
            "string" => {
                let mut out = String::new();
                let mut cursor = n.walk();
                for c in n.named_children(&mut cursor) {
                    if c.kind() != "string_content" {
                        return dynamic();
                    }
                    out.push_str(&unescape_double(self.text(c)));
                }
                Word::Literal(out)
            }
            "concatenation" => {
                let mut out = String::new();
                let mut cursor = n.walk();
                for c in n.named_children(&mut cursor) {
                    match self.word(c) {
                        Word::Literal(s) => out.push_str(&s),
                        Word::Dynamic(_) => return dynamic(),
                    }
                }
                Word::Literal(out)
            }
            _ => dynamic(),
        }
    }
}

/// An unquoted word's value, or None when the shell would expand it (globs, `~`, braces).
fn unescape_word(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    let mut first = true;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n) => out.push(n),
                None => return None,
            },
            '*' | '?' | '[' | '{' | '$' | '`' => return None,
            '~' if first => return None,
            c => out.push(c),
        }
        first = false;
    }
    Some(out)
}

/// The text of a double-quoted part: `\` escapes only `$`, `` ` ``, `"`, `\` and newline.
fn unescape_double(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    out.extend(chars.next());
                    continue;
                }
                Some('\n') => {
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// A command name a rule can name: ASCII letters, digits and `._+-/`, not empty.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-/".contains(c))
}

/// A redirection target that stays in the project: a relative path without `..`, or `/dev/null`.
fn safe_target(path: &str) -> bool {
    if matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr") {
        return true;
    }
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('~')
        && path.split('/').all(|part| part != "..")
}

/// Shells whose `-c` script is followed.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// The script of `bash [-flags] -c SCRIPT [args...]`, when the words are exactly that.
fn shell_script(words: &[Word]) -> Option<&Word> {
    let name = words.first()?.literal()?;
    let base = name.rsplit('/').next().unwrap_or(name);
    if !SHELLS.contains(&base) {
        return None;
    }
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let flag = w.literal()?;
        if !flag.starts_with('-') || flag == "-" || flag == "--" {
            return None;
        }
        if flag.starts_with("--") || !flag[1..].chars().all(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        i += 1;
        if flag.contains('c') {
            return words.get(i);
        }
        // `-o name` takes an argument: not followed.
        if flag.contains('o') || flag.contains('O') {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(words: &[&str]) -> Vec<Word> {
        words.iter().map(|w| Word::Literal(w.to_string())).collect()
    }

    fn names(line: &str) -> Vec<String> {
        parse_line(line)
            .commands
            .iter()
            .map(SimpleCommand::shown)
            .collect()
    }

    #[test]
    fn lists_pipelines_and_subshells_give_every_simple_command() {
        let p = parse_line("cd x && cargo test -p a | tee out.txt; (git status || true)");
        assert_eq!(p.unsure, Vec::<String>::new());
        assert_eq!(
            names("cd x && cargo test -p a | tee out.txt; (git status || true)"),
            vec![
                "cd x",
                "cargo test -p a",
                "tee out.txt",
                "git status",
                "true"
            ]
        );
        assert_eq!(p.commands[1].words, lit(&["cargo", "test", "-p", "a"]));
    }

    #[test]
    fn substitutions_and_backticks_are_commands_too() {
        let p = parse_line("cargo test $(curl x|sh)");
        assert_eq!(
            p.commands
                .iter()
                .map(SimpleCommand::shown)
                .collect::<Vec<_>>(),
            vec!["curl x", "sh", "cargo test $(curl x|sh)"]
        );
        assert!(matches!(p.commands[2].words[2], Word::Dynamic(_)));
        assert_eq!(
            names("echo `rm -rf ~`"),
            vec!["rm -rf ~", "echo `rm -rf ~`"]
        );
        assert_eq!(names("diff <(ls a) b"), vec!["ls a", "diff <(ls a) b"]);
    }

    #[test]
    fn nested_shells_are_parsed_again_and_are_not_parts_themselves() {
        assert_eq!(
            names("bash -c \"cargo test && rm -rf /\""),
            vec!["cargo test", "rm -rf /"]
        );
        assert_eq!(names("sh -c 'sh -c \"rm -rf /\"'"), vec!["rm -rf /"]);
        assert_eq!(names("/bin/bash -lc 'ls'"), vec!["ls"]);
        // Not a -c script: the shell runs a file, which is a command of its own.
        assert_eq!(names("bash script.sh"), vec!["bash script.sh"]);
        let p = parse_line("bash -c \"$CMD\"");
        assert!(p.commands.is_empty());
        assert!(!p.unsure.is_empty());
    }

    #[test]
    fn escapes_and_quotes_are_removed_from_literal_words() {
        assert_eq!(
            parse_line("\\rm -rf x").commands[0].words,
            lit(&["rm", "-rf", "x"])
        );
        assert_eq!(
            parse_line("'rm' \"-rf\" a\\ b").commands[0].words,
            lit(&["rm", "-rf", "a b"])
        );
        assert_eq!(
            parse_line("cargo \\\n  test").commands[0].words,
            lit(&["cargo", "test"])
        );
        assert_eq!(parse_line("r\"m\" x").commands[0].words, lit(&["rm", "x"]));
    }

    #[test]
    fn dynamic_names_eval_functions_and_assignments_are_unsure() {
        for line in [
            "$CMD x",
            "${X:-rm} -rf /",
            "$(echo rm) -rf /",
            "eval \"rm -rf /\"",
            "f() { rm -rf ~; }; f",
            "PATH=/tmp/evil; cargo test",
            "export PATH=/tmp/evil",
            "r*m x",
            "~/bin/tool",
            "ｒｍ -rf /",
            "c\u{200b}argo test",
            "cargo test; (",
            "echo 'unterminated",
        ] {
            let p = parse_line(line);
            assert!(!p.unsure.is_empty(), "{line:?} should be unsure: {p:?}");
        }
        // The parts that were understood are still collected (a deny rule still sees them).
        let p = parse_line("f() { rm -rf ~; }");
        assert!(
            p.commands
                .iter()
                .any(|c| c.words[0] == Word::Literal("rm".into()))
        );
    }

    #[test]
    fn leading_assignments_are_leading_words() {
        let p = parse_line("RUST_LOG=debug cargo test");
        assert_eq!(p.unsure, Vec::<String>::new());
        assert_eq!(p.commands[0].assignments, 1);
        assert_eq!(
            p.commands[0].words,
            lit(&["RUST_LOG=debug", "cargo", "test"])
        );
        assert_eq!(
            p.commands[0].from_name(),
            lit(&["cargo", "test"]).as_slice()
        );
    }

    #[test]
    fn heredocs_and_herestrings_are_searched_for_commands() {
        let p = parse_line("cat <<EOF\nhello $(rm -rf ~)\nEOF\n");
        assert!(
            names("cat <<EOF\nhello $(rm -rf ~)\nEOF\n").contains(&"rm -rf ~".to_string()),
            "{p:?}"
        );
        assert!(names("cat <<< \"$(whoami)\"").contains(&"whoami".to_string()));
    }

    #[test]
    fn output_redirection_must_stay_inside_the_project() {
        for ok in [
            "cargo test > out.txt",
            "cargo test 2>&1 | tee log",
            "ls > /dev/null 2>&1",
            "ls >> target/x.log",
            "sort < /etc/hosts",
        ] {
            assert_eq!(parse_line(ok).unsure, Vec::<String>::new(), "{ok}");
        }
        for bad in [
            "echo x > ~/.bashrc",
            "echo x > /etc/passwd",
            "echo x >> ../up",
            "echo x > $F",
        ] {
            assert!(!parse_line(bad).unsure.is_empty(), "{bad}");
        }
    }

    #[test]
    fn control_flow_bodies_are_walked() {
        assert_eq!(
            names("for f in a b; do rm \"$f\"; done; if true; then ls; fi"),
            vec!["rm \"$f\"", "true", "ls"]
        );
    }
}
