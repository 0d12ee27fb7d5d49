//! The real `aibuddy` binary under Ctrl-C: SIGINT during a streamed `execute` call ends the
//! command's whole process tree, exits 130, prints a `cancelled` result and stores the call
//! (with the output so far) as `cancelled`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support;

use support::aibuddy_cmd as aibuddy;

/// Kills the child if the test fails before it exits on its own.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Live `sleep 1000` processes whose working directory is `project`.
fn sleeps_in(project: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.len() < 2 || !args[0].ends_with(b"sleep") || args[1] != b"1000" {
            continue;
        }
        let cwd: Option<PathBuf> = std::fs::read_link(entry.path().join("cwd")).ok();
        if cwd.as_deref() == Some(project) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn sigint_during_a_streamed_execute_cancels_the_tree_and_stores_the_call() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(p.path()).unwrap();

    let child = aibuddy(&project, d.path())
        .args([
            "call",
            "execute",
            r#"{"command":"echo started; sleep 1000 & while :; do sleep 0.05; done"}"#,
            "--yes",
            "--json",
            "--stream",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let pid = child.0.id().to_string();

    // Read both pipes in threads: stderr line by line (the streamed output), stdout whole.
    let stderr = child.0.stderr.take().unwrap();
    let (line_tx, line_rx) = mpsc::channel::<String>();
    let stderr_reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            all.push_str(&line);
            all.push('\n');
            let _ = line_tx.send(line);
        }
        all
    });
    let mut stdout = child.0.stdout.take().unwrap();
    let stdout_reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });

    // Wait until the command is really running.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match line_rx.recv_timeout(left) {
            Ok(line) if line.contains("started") => break,
            Ok(_) => {}
            Err(e) => panic!("no 'started' on stderr within 20 s: {e}"),
        }
    }
    // Let the background `sleep 1000` start too.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !sleeps_in(&project).is_empty(),
        "the command's `sleep 1000` is not running"
    );

    let sent = Instant::now();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());

    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "aibuddy still running 5 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    let out = stdout_reader.join().unwrap();
    let err = stderr_reader.join().unwrap();
    eprintln!("exited {took:?} after SIGINT");
    assert_eq!(status.code(), Some(130), "stdout: {out}\nstderr: {err}");

    let v: Value = serde_json::from_str(&out).expect("stdout is one JSON value");
    assert_eq!(v["status"], "cancelled", "{v}");
    let id = v["tool_call_id"].as_str().unwrap().to_string();

    // The whole process tree is gone, including the backgrounded sleep.
    let left = sleeps_in(&project);
    for pid in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(left.is_empty(), "`sleep 1000` survived: pids {left:?}");

    // Stored as cancelled, with the output produced before the cancel.
    let history = aibuddy(&project, d.path())
        .args(["history", "--json"])
        .output()
        .unwrap();
    assert!(history.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&history.stdout).expect("json array");
    let row = rows
        .iter()
        .find(|r| r["tool_call_id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not in history: {rows:?}"));
    assert_eq!(row["status"], "cancelled", "{row}");
    assert_eq!(row["tool"], "execute");

    let show = aibuddy(&project, d.path())
        .args(["show", &id, "--raw"])
        .output()
        .unwrap();
    assert!(show.status.success());
    let raw = String::from_utf8_lossy(&show.stdout);
    assert!(raw.contains("started"), "raw output: {raw}");
}
