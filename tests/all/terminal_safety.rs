//! Terminal safety through the real CLI (issue 9, "Why" 5): no untrusted string (a command, a file
//! name, tool output, an error message, a log line) reaches a terminal with its control characters
//! live. A terminal is a real pseudo-terminal made by util-linux `script`; pipes get the same
//! escaped text, except `show --raw`, which stays byte for byte to a pipe.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{aibuddy, aibuddy_output};

/// The spoofed command of "Why" 5: it hides `echo EVIL > x` behind a line that reads `target: ls -la`.
const SPOOF: &str = "echo EVIL > x #\u{1b}[2K\r  target: ls -la";
/// How messages (a rejection, a log line) show it.
const SPOOF_SHOWN: &str = "echo EVIL > x #\\e[2K\\r  target: ls -la";
/// How the confirmation prompt shows it (`aibuddy_common::term::reveal`, as the window does).
const SPOOF_PROMPT: &str = "echo EVIL > x #<ESC>[2K<CR>  target: ls -la";

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `aibuddy --project P --data-dir D ARGS` on a pseudo-terminal (stdin, stdout and stderr),
/// typing `input`. Returns everything the terminal received.
fn on_a_terminal(project: &Path, data: &Path, args: &[&str], input: &str) -> Vec<u8> {
    let mut words = vec![
        env!("CARGO_BIN_EXE_aibuddy").to_string(),
        "--project".into(),
        project.display().to_string(),
        "--data-dir".into(),
        data.display().to_string(),
    ];
    words.extend(args.iter().map(|a| a.to_string()));
    let line = words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env_remove("AIBUDDY_LOG")
        .env_remove("AIBUDDY_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs (it makes the pseudo-terminal)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// No escape, no bare carriage return (a pty turns `\n` into `\r\n`; those are fine), no C1 or
/// bidi control: nothing that could redraw what the person reads.
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let allowed = c == '\n' || c == '\t' || (c == '\r' && chars.get(i + 1) == Some(&'\n'));
        assert!(
            allowed || !aibuddy_common::term::is_unsafe(c),
            "{what}: raw {c:?} at char {i} reached the terminal:\n{text}"
        );
    }
}

fn strip_pty_cr(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n")
}

/// "Why" 5 at a real terminal prompt: the hidden command is visible, declining runs nothing.
#[test]
fn a_spoofed_target_is_shown_with_its_escapes_at_the_terminal_prompt() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let args = serde_json::json!({ "command": SPOOF }).to_string();
    let screen = on_a_terminal(p.path(), d.path(), &["call", "execute", &args], "n\n");
    assert_terminal_safe("confirmation prompt", &screen);
    let text = strip_pty_cr(&screen);
    assert!(
        text.contains(&format!("  target:      {SPOOF_PROMPT}\n")),
        "{text}"
    );
    // `[y/N/a]` when the prompt also offers a rule for commands like this one.
    assert!(text.contains("Approve? [y/N"), "{text}");
    assert!(!p.path().join("x").exists(), "the hidden command ran");
}

/// Issue 22 at a real terminal prompt: a second command after a newline, zero-width and TAG
/// characters and a full-width `＃` (which a shell does not read as a comment) are all visible, and
/// the model's description is labelled as the model's, apart from the app's consequence.
#[test]
fn a_hidden_second_command_and_invisible_characters_are_visible_at_the_terminal_prompt() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(p.path().join("src")).unwrap();
    let command =
        "echo cleaning\nrm -rf src\u{200B} \u{E0001}\u{E0069}\u{E007F}echo hi ＃; touch x";
    let args =
        serde_json::json!({ "command": command, "description": "prints \u{2060}a greeting" })
            .to_string();
    let screen = on_a_terminal(p.path(), d.path(), &["call", "execute", &args], "n\n");
    let all = strip_pty_cr(&screen);
    // The prompt, up to the question (the rejection message after it is `term::line` text).
    let text = &all[..all.find("Approve? [y/N]").expect("the prompt was shown")];
    for hidden in [
        '\u{200B}',
        '\u{2060}',
        '\u{E0001}',
        '\u{E0069}',
        '\u{E007F}',
    ] {
        assert!(
            !text.contains(hidden),
            "raw {hidden:?} reached the terminal:\n{text}"
        );
    }
    assert!(
        text.contains(
            "  target:      echo cleaning⏎\n               rm -rf src<U+200B> <U+E0001><U+E0069><U+E007F>echo hi ＃; touch x\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  note:        the target contains non-ASCII characters: ＃ U+FF03\n"),
        "{text}"
    );
    assert!(
        text.contains("  model says:  \"prints <U+2060>a greeting\" (the model's own description, not checked)\n"),
        "{text}"
    );
    assert!(
        !text.contains("consequence: runs a shell command: prints"),
        "{text}"
    );
    assert!(
        p.path().join("src").exists() && !p.path().join("x").exists(),
        "the command ran"
    );
}

/// Without a terminal the call is rejected, and the rejection names the target escaped.
#[test]
fn without_a_terminal_the_spoofed_call_is_rejected_and_reported_escaped() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let args = serde_json::json!({ "command": SPOOF }).to_string();
    let out = aibuddy_output(p.path(), d.path(), &["call", "execute", &args]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_terminal_safe("stdout", &out.stdout);
    assert_terminal_safe("stderr", &out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(SPOOF_SHOWN), "{stdout}");
    assert!(stdout.contains("no terminal to ask"), "{stdout}");
    assert!(!p.path().join("x").exists());

    // --json is escaped by serde and gives the exact text back.
    let out = aibuddy_output(p.path(), d.path(), &["call", "execute", &args, "--json"]);
    assert_terminal_safe("json", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "rejected");
    assert!(v["model"].as_str().unwrap().contains(SPOOF), "{v}");
}

/// A file whose name carries escapes: listed by `ls`, then read back by `history` and `show`.
#[test]
fn a_file_named_with_escapes_is_listed_and_shown_escaped() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let name = "evil\u{1b}]0;owned\u{7}\u{1b}[2K\r\u{202e}txt.sh";
    std::fs::write(p.path().join(name), "x").unwrap();
    let shown = "evil\\e]0;owned\\x07\\e[2K\\r\\u{202e}txt.sh";

    let out = aibuddy_output(
        p.path(),
        d.path(),
        &["call", "ls", "{}", "--id", "call_ls1"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_terminal_safe("call ls", &out.stdout);
    assert_terminal_safe("call ls stderr", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(shown),
        "{out:?}"
    );

    let args = serde_json::json!({ "path": name }).to_string();
    let out = aibuddy_output(
        p.path(),
        d.path(),
        &["call", "read_file", &args, "--id", "call_rd1"],
    );
    assert_terminal_safe("call read_file", &out.stdout);

    let out = aibuddy_output(p.path(), d.path(), &["history"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_terminal_safe("history", &out.stdout);
    let history = String::from_utf8_lossy(&out.stdout);
    assert!(
        history.contains("call_ls1") && history.contains("call_rd1"),
        "{history}"
    );
    assert!(
        history.contains("evil\\u001b"),
        "input JSON, escaped: {history}"
    );

    for id in ["call_ls1", "call_rd1"] {
        let out = aibuddy_output(p.path(), d.path(), &["show", id]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_terminal_safe("show", &out.stdout);
    }
    let out = aibuddy_output(p.path(), d.path(), &["show", "call_ls1"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(shown),
        "{out:?}"
    );
    let screen = on_a_terminal(p.path(), d.path(), &["history"], "");
    assert_terminal_safe("history at a terminal", &screen);
}

/// A file name holding newlines cannot forge rows of a listing: `ls`, `glob` and `grep` show it
/// on one line with the newline escaped, so the fake `file  passwords.txt` row never appears.
#[test]
fn a_file_name_with_newlines_cannot_forge_listing_rows() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let name = "notes.txt\n  file  passwords.txt  12 B\n[all files shown]";
    std::fs::write(p.path().join(name), "TODO\n").unwrap();
    let forged = |out: &str| {
        out.lines()
            .any(|l| l.starts_with("  file  passwords.txt") || l == "[all files shown]")
    };
    for (tool, args) in [
        ("ls", "{}"),
        ("glob", r#"{"pattern": "*"}"#),
        ("grep", r#"{"pattern": "TODO"}"#),
        (
            "grep",
            r#"{"pattern": "TODO", "output_mode": "files_with_matches"}"#,
        ),
    ] {
        let (code, out, err) = aibuddy(p.path(), d.path(), &["call", tool, args]);
        assert_eq!(code, 0, "{tool} {args}: {err}");
        assert!(
            out.contains("notes.txt\\n  file  passwords.txt  12 B\\n[all files shown]"),
            "{tool} {args}: the name is shown escaped on one line:\n{out}"
        );
        assert!(!forged(&out), "{tool} {args}: a forged row:\n{out}");
    }
}

/// `show --raw`: byte for byte to a pipe (as the README promises), escaped to a terminal. Live
/// output (`--stream`) and the printed result are escaped too.
#[test]
fn raw_output_is_exact_to_a_pipe_and_escaped_to_a_terminal() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let args = serde_json::json!({ "command": r"printf 'a\033[2Jb\r\302\233c\n'" }).to_string();
    let out = aibuddy_output(
        p.path(),
        d.path(),
        &[
            "call",
            "execute",
            &args,
            "--yes",
            "--stream",
            "--id",
            "call_raw1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_terminal_safe("call stdout", &out.stdout);
    assert_terminal_safe("live output on stderr", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a\\e[2Jb\\r\\x9bc"),
        "{out:?}"
    );

    let out = aibuddy_output(p.path(), d.path(), &["show", "call_raw1", "--raw"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout, b"a\x1b[2Jb\r\xc2\x9bc\n",
        "byte for byte to a pipe"
    );
    let out = aibuddy_output(
        p.path(),
        d.path(),
        &[
            "show",
            "call_raw1",
            "--raw",
            "--offset",
            "1",
            "--limit",
            "4",
        ],
    );
    assert_eq!(out.stdout, b"\x1b[2J");

    let screen = on_a_terminal(p.path(), d.path(), &["show", "call_raw1", "--raw"], "");
    assert_terminal_safe("show --raw at a terminal", &screen);
    assert_eq!(strip_pty_cr(&screen), "a\\e[2Jb\\r\\x9bc\n");

    let out = aibuddy_output(p.path(), d.path(), &["show", "call_raw1"]);
    assert_terminal_safe("show", &out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("a\\e[2Jb"),
        "{out:?}"
    );
}

/// An error message quoting untrusted text (a path the model gave) is printed escaped.
#[test]
fn an_error_message_with_escapes_is_printed_escaped() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let args = serde_json::json!({ "path": "nope\u{1b}[2K\r\u{9b}1;1H.txt" }).to_string();
    let out = aibuddy_output(p.path(), d.path(), &["call", "read_file", &args]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_terminal_safe("stdout", &out.stdout);
    assert_terminal_safe("stderr", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nope\\e[2K\\r\\x9b1;1H.txt"),
        "{out:?}"
    );
    let (code, _, err) = aibuddy(p.path(), d.path(), &["show", "no\u{1b}[2Jsuch"]);
    assert_eq!(code, 1);
    assert!(err.contains("no\\e[2Jsuch"), "{err}");
    assert_terminal_safe("show error", err.as_bytes());
}

/// Log lines and warnings quoting a project file name (a malformed skill in a folder named with
/// escapes) reach stderr escaped; `tools check` prints the problem escaped.
#[test]
fn warnings_and_log_lines_with_escapes_are_escaped() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let dir = p
        .path()
        .join(".aibuddy/skills/bad\u{1b}]0;owned\u{7}\r\u{1b}[31mskill");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), "no frontmatter\u{1b}[2J\n").unwrap();
    let shown = "bad\\e]0;owned\\x07\\r\\e[31mskill";

    let out = aibuddy_output(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_terminal_safe("tools list stdout", &out.stdout);
    assert_terminal_safe("tools list stderr (warnings and logs)", &out.stderr);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(shown), "{err}");
    // tracing-subscriber escapes ESC and BEL in messages itself (as `\x1b`), but not `\r`: the
    // carriage return is escaped by our writer.
    assert!(
        err.lines()
            .any(|l| l.contains("WARN") && l.contains("bad\\x1b]0;owned\\x07\\r\\x1b[31mskill")),
        "the tracing line is there, escaped: {err}"
    );

    let out = aibuddy_output(p.path(), d.path(), &["tools", "check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_terminal_safe("tools check", &out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(shown),
        "{out:?}"
    );

    let screen = on_a_terminal(p.path(), d.path(), &["tools", "list"], "");
    assert_terminal_safe("tools list at a terminal", &screen);
}
