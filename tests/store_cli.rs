//! The CLI over the store, as real processes: `call` persists, `history` lists and searches,
//! `show --raw` returns the stored bytes exactly, and a `kill -9` of `aibuddy call` mid-call
//! leaves the call `interrupted` with its spooled partial output at the next start.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::aibuddy_output as aibuddy;

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn history_and_show_return_what_call_stored_byte_for_byte() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // Non-UTF-8 bytes and more than 64 KiB (stored as a blob file).
    let cmd = r#"{"command": "printf 'caf\\351 \\377\\n'; seq 1 20000"}"#;
    let called = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["call", "execute", cmd, "--yes", "--json"],
    ));
    assert_eq!(called["status"], "ok");
    let id = called["tool_call_id"].as_str().unwrap().to_string();
    let mut expected = b"caf\xe9 \xff\n".to_vec();
    for i in 1..=20000 {
        expected.extend_from_slice(format!("{i}\n").as_bytes());
    }

    let raw = aibuddy(project.path(), data.path(), &["show", &id, "--raw"]);
    assert!(raw.status.success());
    assert!(
        raw.stdout == expected,
        "show --raw returns the bytes exactly"
    );
    let slice = aibuddy(
        project.path(),
        data.path(),
        &["show", &id, "--raw", "--offset", "4", "--limit", "3"],
    );
    assert_eq!(slice.stdout, expected[4..7].to_vec());

    let failed = aibuddy(
        project.path(),
        data.path(),
        &["call", "read_file", r#"{"path": 7}"#, "--json"],
    );
    assert!(!failed.status.success());

    let rows = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["history", "--json"],
    ));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["tool"], "read_file", "newest first");
    assert_eq!(rows[0]["status"], "error");
    assert_eq!(rows[0]["stage"], "Parameters");
    assert_eq!(rows[1]["tool_call_id"], id.as_str());
    for key in [
        "tool_call_id",
        "run_id",
        "tool",
        "status",
        "stage",
        "started_at",
        "duration_ms",
        "input",
    ] {
        assert!(rows[1].get(key).is_some(), "history rows carry {key}");
    }
    assert_eq!(
        rows[1]["input"]["command"].as_str().unwrap(),
        "printf 'caf\\351 \\377\\n'; seq 1 20000"
    );

    let by_tool = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["history", "--json", "--tool", "execute", "--status", "ok"],
    ));
    assert_eq!(by_tool.as_array().unwrap().len(), 1);
    let found = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["history", "--json", "--search", "seq"],
    ));
    assert_eq!(found[0]["tool_call_id"], id.as_str());
    let bad = aibuddy(
        project.path(),
        data.path(),
        &["history", "--status", "weird"],
    );
    assert_eq!(bad.status.code(), Some(2));

    let record = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["show", &id, "--json"],
    ));
    assert_eq!(record["raw_output"]["kind"], "file");
    assert_eq!(record["raw_output_len"], expected.len());
    assert_eq!(record["confirm_decisions"][0]["decision"], "approved");
    // The large model projection was precompacted before `call` exited; the offload document
    // carries input and raw output, and the record points to it.
    assert_eq!(record["compaction_state"], "compacted");
    let pointer = record["recovery_pointer"].as_str().unwrap();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(data.path().join(pointer)).unwrap()).unwrap();
    assert_eq!(doc["input"]["command"], called["client"]["command"]);
    assert_eq!(doc["raw_output_bytes"], expected.len());
    assert_eq!(
        doc["raw_output_text"],
        String::from_utf8_lossy(&expected).as_ref()
    );
    assert!(
        record["model_projection"]
            .as_str()
            .unwrap()
            .contains("view_tool_call")
    );
    let missing = aibuddy(project.path(), data.path(), &["show", "call_nope"]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn kill_9_of_the_cli_mid_call_leaves_an_interrupted_call_with_partial_output() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for round in 0..3 {
        // A call that finishes: reported finished, so it must survive every later kill.
        let done = json_of(&aibuddy(
            project.path(),
            data.path(),
            &[
                "call",
                "execute",
                r#"{"command": "echo finished"}"#,
                "--yes",
                "--json",
            ],
        ));
        let done_id = done["tool_call_id"].as_str().unwrap().to_string();

        let id = format!("call_kill_{round}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_aibuddy"))
            .arg("--project")
            .arg(project.path())
            .arg("--data-dir")
            .arg(data.path())
            .args([
                "call",
                "execute",
                r#"{"command": "seq 1 100000; sleep 30"}"#,
                "--yes",
                "--json",
                "--id",
                &id,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Mid-call: the command has produced output into the call's spool (the exec spool is
        // buffered 64 KiB, so wait until at least one buffer reached the file).
        let spool = data.path().join("spool").join(format!("{id}.out"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(&spool).map_or(0, |m| m.len()) < 64 * 1024 {
            assert!(Instant::now() < deadline, "the call never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Another process opening the store meanwhile leaves the live call alone.
        let running = json_of(&aibuddy(
            project.path(),
            data.path(),
            &["history", "--json", "--status", "running"],
        ));
        assert_eq!(
            running[0]["tool_call_id"],
            id.as_str(),
            "a live call is not interrupted by another process"
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let interrupted = json_of(&aibuddy(
            project.path(),
            data.path(),
            &["history", "--json", "--status", "interrupted"],
        ));
        let ids: Vec<&str> = interrupted
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["tool_call_id"].as_str())
            .collect();
        assert!(ids.contains(&id.as_str()), "round {round}: {ids:?}");
        let raw = aibuddy(project.path(), data.path(), &["show", &id, "--raw"]);
        let full: Vec<u8> = (1..=100000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        assert!(
            raw.stdout.len() >= 64 * 1024,
            "the spooled partial output is attached: {} bytes, stderr: {}",
            raw.stdout.len(),
            String::from_utf8_lossy(&raw.stderr)
        );
        assert!(
            full.starts_with(&raw.stdout),
            "partial output is a prefix of what the command printed"
        );
        let rec = json_of(&aibuddy(
            project.path(),
            data.path(),
            &["show", &id, "--json"],
        ));
        assert_eq!(rec["raw_output_partial"], true);
        assert_eq!(rec["stage"], "Execution");
        let done_rec = json_of(&aibuddy(
            project.path(),
            data.path(),
            &["show", &done_id, "--json"],
        ));
        assert_eq!(done_rec["status"], "ok");
    }
    let running = json_of(&aibuddy(
        project.path(),
        data.path(),
        &["history", "--json", "--status", "running"],
    ));
    assert_eq!(running.as_array().unwrap().len(), 0);
}
