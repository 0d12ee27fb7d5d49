//! The filesystem tool group through the real pipeline (App, registry, confirm broker, sandbox)
//! and through the `aibuddy` binary: projections, confirmations with target/scope/consequence,
//! rejection without effect, approvals bound to one call, escapes refused even when approved.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::{ApproveAll, ConfirmBroker, Decision, PendingBroker, RejectAll};
use aibuddy::contract::Stage;
use aibuddy::discovery::Exposure;
use aibuddy::events::{CallStatus, CollectingSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

struct Project {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    data: std::path::PathBuf,
}

fn project() -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside secret\n").unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    let body: String = (1..=3000).map(|i| format!("row {i} TODO\n")).collect();
    std::fs::write(root.join("big.txt"), body).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("out_link")).unwrap();
    Project {
        data: base.join("data"),
        _tmp: tmp,
        root,
        outside,
    }
}

async fn open(p: &Project) -> App {
    App::open(AppOptions {
        project: p.root.clone(),
        data_dir: p.data.clone(),
    })
    .await
    .expect("open app")
}

async fn call(app: &App, broker: Arc<dyn ConfirmBroker>, name: &str, args: Value) -> CallOutcome {
    let runner = app.runner(None, broker);
    let toolset = app.toolset(&BTreeSet::new());
    runner
        .call(
            &toolset,
            CallRequest {
                id: None,
                name: name.into(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            CollectingSink::new(),
        )
        .await
}

fn outside_untouched(p: &Project) {
    let names: Vec<_> = std::fs::read_dir(&p.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert_eq!(
        std::fs::read_to_string(p.outside.join("secret.txt")).unwrap(),
        "outside secret\n"
    );
}

#[tokio::test]
async fn the_six_tools_come_from_one_config_and_are_active() {
    let p = project();
    let app = open(&p).await;
    let tools = app.tools_list();
    for name in ["ls", "read_file", "write_file", "edit_file", "glob", "grep"] {
        let t = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(
            (t.config.as_str(), t.exposure),
            ("filesystem", Exposure::Active),
            "{name}"
        );
    }
}

#[tokio::test]
async fn read_only_tools_run_without_confirmation_and_state_their_bounds() {
    let p = project();
    let app = open(&p).await;
    let reject: Arc<dyn ConfirmBroker> = Arc::new(RejectAll("must not be asked".into()));
    let out = call(
        &app,
        reject.clone(),
        "read_file",
        serde_json::json!({"path": "big.txt", "offset": 2999}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.model);
    assert_eq!(
        out.model,
        "  2999\trow 2999 TODO\n  3000\trow 3000 TODO\n[showing lines 2999-3000 of 3000]\n"
    );
    let out = call(
        &app,
        reject.clone(),
        "read_file",
        serde_json::json!({"path": "big.txt"}),
    )
    .await;
    assert!(
        out.model.ends_with(
            "[showing lines 1-2000 of 3000; 1000 more lines: call read_file with offset=2001]\n"
        ),
        "{}",
        out.model
    );

    let out = call(
        &app,
        reject.clone(),
        "grep",
        serde_json::json!({"pattern": "TODO", "head_limit": 2}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.model);
    assert!(out.model.starts_with("big.txt:1:row 1 TODO\nbig.txt:2:row 2 TODO\n[showing the first 2 matching lines in path order; 2998 more not shown"), "{}", out.model);
    let out = call(
        &app,
        reject.clone(),
        "glob",
        serde_json::json!({"pattern": "*.rs"}),
    )
    .await;
    assert_eq!(out.model, "src/main.rs\n");
    let out = call(&app, reject, "ls", serde_json::json!({})).await;
    assert!(out.model.contains("link  out_link -> "), "{}", out.model);
    assert!(
        out.model.contains("(outside the project: not accessible)"),
        "{}",
        out.model
    );
}

#[tokio::test]
async fn a_rejected_write_has_no_effect_and_keeps_the_decision() {
    let p = project();
    let app = open(&p).await;
    let out = call(
        &app,
        Arc::new(RejectAll("not now".into())),
        "write_file",
        serde_json::json!({"path": "src/main.rs", "content": "fn main() {}\n"}),
    )
    .await;
    assert_eq!(
        (out.status, out.stage),
        (CallStatus::Rejected, Some(Stage::Authorization))
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n"
    );
    let rec = out.confirm.expect("decision kept with the call");
    assert_eq!(rec.request.target, "src/main.rs");
    assert_eq!(
        rec.request.consequence,
        "overwrites src/main.rs: 3 lines -> 1 line (34 B -> 13 B)"
    );
    assert!(
        rec.request
            .scope
            .iter()
            .any(|s| s == "writes only: src/main.rs"),
        "{:?}",
        rec.request.scope
    );
    assert!(rec.request.diff.unwrap().contains("-    println!(\"hi\");"));
}

#[tokio::test]
async fn an_approved_write_and_edit_are_verified() {
    let p = project();
    let app = open(&p).await;
    let out = call(
        &app,
        Arc::new(ApproveAll),
        "write_file",
        serde_json::json!({"path": "new/dir/a.txt", "content": "one\ntwo\n"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.model);
    assert_eq!(
        out.model,
        "Created new/dir/a.txt: 2 lines, 8 B. Verified: read back the whole file (8 bytes), identical to what was written.\n"
    );
    assert_eq!(out.client["verified"]["bytes_compared"], 8);
    assert_eq!(
        out.confirm.unwrap().request.consequence,
        "creates new/dir/a.txt: 2 lines (8 B), creating directories new, new/dir"
    );

    let out = call(
        &app,
        Arc::new(ApproveAll),
        "edit_file",
        serde_json::json!({"path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.model);
    assert!(
        out.model.starts_with(
            "Edited src/main.rs: 1 replacement (3 lines -> 3 lines); changed lines 2. Verified"
        ),
        "{}",
        out.model
    );
    assert!(
        out.client["diff"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"hello\");")
    );
    assert_eq!(
        out.confirm.unwrap().request.consequence,
        "edits src/main.rs: 1 replacement at lines 2 (3 lines -> 3 lines)"
    );
    assert!(
        std::fs::read_to_string(p.root.join("src/main.rs"))
            .unwrap()
            .contains("hello")
    );

    let out = call(
        &app,
        Arc::new(ApproveAll),
        "edit_file",
        serde_json::json!({"path": "src/main.rs", "old_string": "absent", "new_string": "x"}),
    )
    .await;
    assert_eq!(
        (out.stage, out.error.unwrap().code.as_str()),
        (Some(Stage::Parameters), "old_string_not_found")
    );
}

#[tokio::test]
async fn approval_of_call_a_does_not_authorise_call_b() {
    let p = project();
    let app = Arc::new(open(&p).await);
    let broker = PendingBroker::new();
    let spawn = |args: Value| {
        let (app, broker) = (app.clone(), broker.clone());
        tokio::spawn(async move { call(&app, Arc::new(broker), "write_file", args).await })
    };
    let a = spawn(serde_json::json!({"path": "a.txt", "content": "A\n"}));
    broker.wait_pending().await;
    let req_a = broker.pending().pop().unwrap();
    assert!(broker.answer(
        &req_a.call_id,
        Decision::Approved {
            digest: req_a.digest.clone()
        }
    ));
    assert_eq!(a.await.unwrap().status, CallStatus::Ok);

    let b = spawn(serde_json::json!({"path": "a.txt", "content": "B\n"}));
    broker.wait_pending().await;
    let req_b = broker.pending().pop().unwrap();
    assert_ne!(req_a.digest, req_b.digest);
    assert!(broker.answer(
        &req_b.call_id,
        Decision::Approved {
            digest: req_a.digest.clone()
        }
    ));
    let out_b = b.await.unwrap();
    assert_eq!(
        (out_b.status, out_b.stage),
        (CallStatus::Rejected, Some(Stage::Authorization))
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("a.txt")).unwrap(),
        "A\n"
    );
}

#[tokio::test]
async fn the_file_the_person_approved_is_the_file_that_is_written() {
    let p = project();
    let app = Arc::new(open(&p).await);
    let broker = PendingBroker::new();
    let task = {
        let (app, broker) = (app.clone(), broker.clone());
        tokio::spawn(async move {
            call(
                &app,
                Arc::new(broker),
                "edit_file",
                serde_json::json!({"path": "src/main.rs", "old_string": "hi", "new_string": "bye"}),
            )
            .await
        })
    };
    broker.wait_pending().await;
    let req = broker.pending().pop().unwrap();
    // The file changes after the person saw the diff, before the approval arrives.
    std::fs::write(p.root.join("src/main.rs"), "fn main() { hi(); }\n").unwrap();
    assert!(broker.answer(
        &req.call_id,
        Decision::Approved {
            digest: req.digest.clone()
        }
    ));
    let out = task.await.unwrap();
    assert_eq!(out.error.unwrap().code, "changed_during_operation");
    assert_eq!(
        std::fs::read_to_string(p.root.join("src/main.rs")).unwrap(),
        "fn main() { hi(); }\n"
    );
}

#[tokio::test]
async fn approved_escape_attempts_are_still_refused() {
    let p = project();
    let app = open(&p).await;
    let outside_abs = p.outside.join("new.txt").to_string_lossy().into_owned();
    let cases = [
        (
            "write_file",
            serde_json::json!({"path": "../outside/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            serde_json::json!({"path": outside_abs, "content": "x"}),
        ),
        (
            "write_file",
            serde_json::json!({"path": "out_link/new.txt", "content": "x"}),
        ),
        (
            "edit_file",
            serde_json::json!({"path": "out_link/secret.txt", "old_string": "secret", "new_string": "x"}),
        ),
        (
            "read_file",
            serde_json::json!({"path": "out_link/secret.txt"}),
        ),
        (
            "grep",
            serde_json::json!({"pattern": "secret", "path": "out_link"}),
        ),
        (
            "glob",
            serde_json::json!({"pattern": "*", "path": "../outside"}),
        ),
        ("ls", serde_json::json!({"path": "/etc"})),
    ];
    for (tool, args) in cases {
        let out = call(&app, Arc::new(ApproveAll), tool, args.clone()).await;
        assert_eq!(
            (out.status, out.stage),
            (CallStatus::Error, Some(Stage::Authorization)),
            "{tool} {args}: {}",
            out.model
        );
        assert_eq!(
            out.error.as_ref().unwrap().code,
            "path_escape",
            "{tool} {args}"
        );
        assert!(!out.model.contains("outside secret"));
    }
    outside_untouched(&p);
}

fn aibuddy(p: &Project, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_aibuddy"))
        .arg("--project")
        .arg(&p.root)
        .arg("--data-dir")
        .arg(&p.data)
        .args(args)
        .env_remove("AIBUDDY_LOG")
        .output()
        .expect("run aibuddy");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn exists(root: &Path, rel: &str) -> bool {
    root.join(rel).exists()
}

#[test]
fn cli_write_without_a_terminal_or_yes_is_rejected_and_with_yes_applies() {
    let p = project();
    let args = r#"{"path":"cli.txt","content":"from the cli\n"}"#;
    let (code, v) = aibuddy(&p, &["call", "write_file", args, "--json"]);
    assert_eq!((code, v["status"].as_str()), (3, Some("rejected")), "{v}");
    assert!(!exists(&p.root, "cli.txt"));
    let (code, v) = aibuddy(&p, &["call", "write_file", args, "--json", "--yes"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        std::fs::read_to_string(p.root.join("cli.txt")).unwrap(),
        "from the cli\n"
    );
    let (code, v) = aibuddy(
        &p,
        &[
            "call",
            "write_file",
            r#"{"path":"../outside/cli.txt","content":"x"}"#,
            "--json",
            "--yes",
        ],
    );
    assert_eq!(
        (code, v["stage"].as_str()),
        (1, Some("Authorization")),
        "{v}"
    );
    outside_untouched(&p);
}

#[test]
fn cli_unavailable_sandbox_kind_makes_the_tools_absent_with_a_reason() {
    let p = project();
    std::fs::create_dir_all(p.root.join(".aibuddy")).unwrap();
    std::fs::write(
        p.root.join(".aibuddy/settings.json"),
        r#"{"sandbox": {"kind": "e2b"}}"#,
    )
    .unwrap();
    // A project's `sandbox.kind` applies only once the person trusts the project.
    let shown = aibuddy::trust::status(&p.root, &p.data).unwrap();
    aibuddy::trust::grant(&p.root, &p.data, &shown.digest).unwrap();
    let (code, v) = aibuddy(&p, &["tools", "list", "--json"]);
    assert_eq!(code, 0, "{v}");
    let row = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "read_file")
        .expect("read_file listed")
        .clone();
    assert_eq!(row["exposure"], "absent", "{row}");
    assert!(
        row["absent_reason"].as_str().unwrap().contains("e2b"),
        "{row}"
    );
}
