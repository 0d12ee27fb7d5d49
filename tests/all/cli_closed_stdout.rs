//! A closed stdout ends no CLI command with a panic: `aibuddy tools list --json | head` printed a
//! backtrace on the closed pipe (issue 22). The output is dropped quietly, nothing reaches stderr,
//! and the command keeps its own exit code (0 for these).

use crate::support;

use std::io::Read;
use std::process::Stdio;

use support::aibuddy_cmd;

/// Runs `args` with stdout a pipe whose read end is closed before the command writes anything
/// (the reader is gone: every write gets EPIPE). Returns (exit code, stderr).
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut child = aibuddy_cmd(p.path(), d.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn aibuddy");
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    (status.code(), err)
}

#[test]
fn listings_end_quietly_when_the_reader_is_gone() {
    for args in [
        &["tools", "list", "--json"][..],
        &["tools", "list"],
        &["tools", "check"],
        &["tools", "check", "--json"],
        &["tools", "instructions"],
        &["history", "--json"],
        &["runs"],
    ] {
        let (code, err) = with_stdout_closed(args);
        assert_eq!(code, Some(0), "{args:?}: stderr {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

#[test]
fn a_pipe_into_head_gets_its_bytes_and_no_backtrace() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#""$0" --project "$1" --data-dir "$2" tools list --json | head -c 10"#)
        .arg(env!("CARGO_BIN_EXE_aibuddy"))
        .arg(p.path())
        .arg(d.path())
        .env_remove("AIBUDDY_LOG")
        .env_remove("AIBUDDY_DATA_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.stdout.len(), 10);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(out.status.success());
}
