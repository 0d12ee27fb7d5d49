//! The `fake-provider` binary as a process: it prints its base URL, serves a scenario file to the
//! real HTTP client, and at the end of stdin exits 0 only when every step was answered and no
//! request broke the protocol.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use aibuddy_provider::{
    ApiKey, BaseUrlFrom, HttpProvider, Message, Presentation, ProviderKind, Route,
};
use common::*;
use serde_json::{Value, json};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("fake-provider-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Running {
    child: Child,
    base_url: String,
    report: std::path::PathBuf,
    _dir: TempDir,
}

fn start(scenario: &Value) -> Running {
    let dir = TempDir::new();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let report = dir.path().join("report.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-provider"))
        .arg(&path)
        .arg("--report")
        .arg(&report)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Running {
        child,
        base_url: line.trim().to_string(),
        report,
        _dir: dir,
    }
}

/// Closes stdin and returns the exit code, stderr and the JSON report.
fn finish(mut r: Running) -> (i32, String, Value) {
    drop(r.child.stdin.take());
    let out = r.child.wait_with_output().unwrap();
    let report = std::fs::read_to_string(&r.report)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    )
}

fn provider_at(base_url: &str, key: &str) -> HttpProvider {
    let route = Route {
        name: "anthropic".into(),
        kind: ProviderKind::Anthropic,
        model: model(ProviderKind::Anthropic).into(),
        base_url: base_url.into(),
        first_party: false,
        base_url_from: BaseUrlFrom::Env,
        presentation: Presentation::Native,
        context_window: 100_000,
        stream: None,
        images: true,
    };
    HttpProvider::new(route, ApiKey::new(key)).unwrap()
}

fn ask(p: &HttpProvider) -> Message {
    let req = request(
        ProviderKind::Anthropic,
        Presentation::Native,
        vec![Message::user_text("list the files")],
    );
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(step(p, &req))
        .1
}

#[test]
fn a_scripted_turn_is_served_and_a_clean_run_exits_zero() {
    let r = start(&json!({"key": KEY, "steps": [
        {"text": "Listing.", "calls": [{"id": "toolu_01", "name": "read_file", "input": {"path": "a.txt"}}]}
    ]}));
    assert!(
        r.base_url.starts_with("http://127.0.0.1:"),
        "{}",
        r.base_url
    );
    let msg = ask(&provider_at(&r.base_url, KEY));
    assert_eq!(msg.text(), "Listing.");
    assert_eq!(msg.tool_calls().count(), 1, "{msg:?}");
    let (code, stderr, report) = finish(r);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["requests"], 1);
    assert_eq!(report["violations"], json!([]));
    assert!(stderr.contains("1 request(s) for 1 step(s)"), "{stderr}");
}

#[test]
fn a_request_with_the_wrong_key_is_a_violation_and_exits_one() {
    let r = start(&json!({"key": KEY, "steps": [{"text": "hi"}]}));
    ask(&provider_at(&r.base_url, "sk-some-other-key-0000000000"));
    let (code, stderr, report) = finish(r);
    assert_eq!(code, 1, "{stderr}");
    let violations = report["violations"].as_array().unwrap();
    assert!(!violations.is_empty(), "{report}");
    assert!(stderr.contains("protocol violation"), "{stderr}");
}

#[test]
fn steps_no_request_reached_fail_the_run() {
    let r = start(&json!({"steps": [{"text": "one"}, {"text": "two"}]}));
    ask(&provider_at(&r.base_url, KEY));
    let (code, stderr, report) = finish(r);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["unanswered"], 1);
}

#[test]
fn a_broken_scenario_is_refused_before_listening() {
    let dir = TempDir::new();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, r#"{"steps": [{}]}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fake-provider"))
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("step 0"));
}
