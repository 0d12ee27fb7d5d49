//! The CLI over the store, as real processes: `call` persists, `history` lists and searches,
//! `show --raw` returns the stored bytes exactly, and a `kill -9` of `aibuddy call` mid-call
//! leaves the call `interrupted` with its spooled partial output at the next start. Checkpoints:
//! rewind of a run, conflicts, a `kill -9` mid-call, and two processes mutating one project.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support;

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

// --- Checkpoints and rewind (issue 23) -------------------------------------------------------

/// Every entry under `root`: kind, permission bits and content (a symlink's target), so two
/// trees compare byte for byte and mode for mode.
fn tree_state(root: &std::path::Path) -> std::collections::BTreeMap<String, (char, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o777;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, ('l', 0, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                stack.push(p);
            } else {
                out.insert(rel, ('f', mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn call_in_run(
    project: &std::path::Path,
    data: &std::path::Path,
    run: &str,
    tool: &str,
    args: &str,
) -> Value {
    let out = aibuddy(
        project,
        data,
        &["call", tool, args, "--yes", "--json", "--run", run],
    );
    let v = json_of(&out);
    assert_eq!(v["status"], "ok", "{tool} {args}: {v}");
    v
}

#[test]
fn rewind_of_a_run_restores_the_tree_byte_for_byte_and_can_itself_be_undone() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "alpha\nbeta\ngamma\n").unwrap();
    std::fs::write(p.join("b.txt"), "to be deleted\n").unwrap();
    std::fs::write(p.join("keep.txt"), "renamed content\n").unwrap();
    std::fs::write(p.join("script.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(p.join("script.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/c.txt"), "c\n").unwrap();
    std::os::unix::fs::symlink("a.txt", p.join("link")).unwrap();
    let before = tree_state(p);

    let run = "run_ckpt_script";
    let create = call_in_run(
        p,
        data.path(),
        run,
        "write_file",
        r#"{"path": "new.txt", "content": "brand new\n"}"#,
    );
    call_in_run(
        p,
        data.path(),
        run,
        "edit_file",
        r#"{"path": "a.txt", "old_string": "beta", "new_string": "BETA"}"#,
    );
    let shell = call_in_run(
        p,
        data.path(),
        run,
        "execute",
        r#"{"command": "rm b.txt && mv keep.txt moved.txt && chmod 755 script.sh && mkdir -p newdir/deep && echo x > newdir/deep/f && ln -sf keep.txt link && printf 'a\\000b' > bin.dat"}"#,
    );
    call_in_run(
        p,
        data.path(),
        run,
        "write_file",
        r#"{"path": "sub/c.txt", "content": "c changed\n"}"#,
    );
    let after = tree_state(p);
    assert_ne!(before, after);

    // What the shell call changed, with the kinds of change named.
    let shell_id = shell["tool_call_id"].as_str().unwrap();
    let changes = json_of(&aibuddy(p, data.path(), &["changes", shell_id, "--json"]));
    let mut kinds: Vec<(String, String)> = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    kinds.sort();
    let expected: Vec<(String, String)> = [
        ("b.txt", "deleted"),
        ("bin.dat", "added"),
        ("link", "symlink_changed"),
        ("moved.txt", "renamed"),
        ("newdir", "added"),
        ("newdir/deep", "added"),
        ("newdir/deep/f", "added"),
        ("script.sh", "mode_changed"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(kinds, expected, "{changes}");
    let bin = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "bin.dat")
        .unwrap();
    assert_eq!(bin["binary"], true);
    let run_changes = json_of(&aibuddy(
        p,
        data.path(),
        &["changes", "--run", run, "--json"],
    ));
    assert_eq!(run_changes["calls"].as_array().unwrap().len(), 4);
    let edit_diff = run_changes["calls"][1]["files"][0]["diff"]
        .as_str()
        .unwrap();
    assert!(edit_diff.contains("-beta\n+BETA\n"), "{edit_diff}");
    // `show --json` carries the change set.
    let shown = json_of(&aibuddy(
        p,
        data.path(),
        &["show", create["tool_call_id"].as_str().unwrap(), "--json"],
    ));
    assert_eq!(shown["changes"]["files"][0]["path"], "new.txt");
    assert_eq!(shown["changes"]["files"][0]["change"], "added");

    // A dry run writes nothing.
    let preview = json_of(&aibuddy(
        p,
        data.path(),
        &["rewind", "--run", run, "--dry-run", "--json"],
    ));
    assert_eq!(preview["dry_run"], true);
    assert_eq!(preview["calls"].as_array().unwrap().len(), 4);
    assert_eq!(
        preview["calls"][0]["call_id"], run_changes["calls"][3]["call_id"],
        "newest first"
    );
    assert_eq!(tree_state(p), after, "a dry run writes nothing");

    let rewound = json_of(&aibuddy(
        p,
        data.path(),
        &["rewind", "--run", run, "--json"],
    ));
    assert_eq!(
        tree_state(p),
        before,
        "rewind --run restores every file and mode: {rewound}"
    );

    // The rewind is a call with its own change set: rewinding it puts the run's work back.
    let rewind_id = rewound["rewind_call_id"].as_str().unwrap();
    json_of(&aibuddy(p, data.path(), &["rewind", rewind_id, "--json"]));
    assert_eq!(tree_state(p), after, "the rewind was undone");
}

#[test]
fn a_file_changed_since_the_call_is_a_conflict_and_changes_between_calls_are_nobodys() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    let run = "run_ckpt_conflict";
    let first = call_in_run(
        p,
        data.path(),
        run,
        "write_file",
        r#"{"path": "x.txt", "content": "from the call\n"}"#,
    );
    let first_id = first["tool_call_id"].as_str().unwrap();
    // The person edits the file and adds one of their own between two calls.
    std::fs::write(p.join("x.txt"), "the person's edit\n").unwrap();
    std::fs::write(p.join("mine.txt"), "the person's file\n").unwrap();
    let second = call_in_run(
        p,
        data.path(),
        run,
        "write_file",
        r#"{"path": "y.txt", "content": "y\n"}"#,
    );
    let second_changes = json_of(&aibuddy(
        p,
        data.path(),
        &[
            "changes",
            second["tool_call_id"].as_str().unwrap(),
            "--json",
        ],
    ));
    let paths: Vec<&str> = second_changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec!["y.txt"],
        "a change between calls is attributed to no call"
    );

    let out = aibuddy(p, data.path(), &["rewind", "--run", run, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a conflict left alone is not a full rewind"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["calls"][1]["conflicts"][0]["path"], "x.txt",
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("x.txt")).unwrap(),
        "the person's edit\n"
    );
    assert!(
        !p.join("y.txt").exists(),
        "the call without conflict was rewound"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("mine.txt")).unwrap(),
        "the person's file\n"
    );

    let forced = json_of(&aibuddy(
        p,
        data.path(),
        &["rewind", first_id, "--force", "--json"],
    ));
    assert_eq!(forced["calls"][0]["actions"][0]["forced"], true);
    assert!(
        !p.join("x.txt").exists(),
        "forced: put back to before the call (absent)"
    );
    assert!(p.join("mine.txt").exists(), "never reverted silently");
}

#[test]
fn kill_9_during_an_execute_call_still_allows_its_rewind() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("victim.txt"), "precious\n").unwrap();
    let before = tree_state(p);
    let id = "call_ckpt_kill";
    let mut child = Command::new(env!("CARGO_BIN_EXE_aibuddy"))
        .arg("--project")
        .arg(p)
        .arg("--data-dir")
        .arg(data.path())
        .args([
            "call",
            "execute",
            r#"{"command": "rm victim.txt; echo made > made.txt; sleep 30"}"#,
            "--yes",
            "--json",
            "--id",
            id,
        ])
        .env_remove("AIBUDDY_DATA_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.join("made.txt").exists() {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let changes = json_of(&aibuddy(p, data.path(), &["changes", id, "--json"]));
    assert_eq!(changes["complete"], false, "{changes}");
    assert_eq!(changes["files"].as_array().unwrap().len(), 2, "{changes}");
    let rewound = json_of(&aibuddy(p, data.path(), &["rewind", id, "--json"]));
    assert_eq!(tree_state(p), before, "{rewound}");

    // The killed call's hold on the project's call lock went with it: the next mutating call
    // runs (a lock left behind would make it wait forever).
    let next = call_in_run(
        p,
        data.path(),
        "run_after_kill",
        "write_file",
        r#"{"path": "next.txt", "content": "next\n"}"#,
    );
    let changes = json_of(&aibuddy(
        p,
        data.path(),
        &["changes", next["tool_call_id"].as_str().unwrap(), "--json"],
    ));
    assert_eq!(changes["complete"], true, "{changes}");
    assert_eq!(changes["files"].as_array().unwrap().len(), 1, "{changes}");
}

#[test]
fn two_cli_processes_mutating_one_project_at_once_each_record_only_their_own_change() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("old.txt"), "old\n").unwrap();
    // The first process writes its file and holds on; the second writes while it holds.
    let slow = Command::new(env!("CARGO_BIN_EXE_aibuddy"))
        .arg("--project")
        .arg(p)
        .arg("--data-dir")
        .arg(data.path())
        .args([
            "call",
            "execute",
            r#"{"command": "echo one > one.txt; sleep 2"}"#,
            "--yes",
            "--json",
            "--id",
            "call_slow",
        ])
        .env_remove("AIBUDDY_DATA_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.join("one.txt").exists() {
        assert!(Instant::now() < deadline, "the first command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let fast = call_in_run(
        p,
        data.path(),
        "run_fast",
        "write_file",
        r#"{"path": "two.txt", "content": "two\n"}"#,
    );
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(json_of(&slow)["status"], "ok");
    for (id, own) in [
        ("call_slow", "one.txt"),
        (fast["tool_call_id"].as_str().unwrap(), "two.txt"),
    ] {
        let changes = json_of(&aibuddy(p, data.path(), &["changes", id, "--json"]));
        let paths: Vec<&str> = changes["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, vec![own], "{id}: {changes}");
    }
}
