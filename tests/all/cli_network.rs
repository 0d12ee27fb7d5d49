//! Issue 22 through the real CLI: `aibuddy call execute` with `exec.network` lists in the user's
//! `settings.json`, against a REAL loopback server on the host. The command reaches the listed
//! loopback "registry" only through the proxy, the host port directly not at all; the refused host
//! is named in the result with how to allow it, and recorded with the call (`aibuddy show --json`).

use crate::support;
use crate::support::registry::registry;

use std::io::{Read, Write};

use serde_json::{Value, json};
use support::aibuddy;

#[test]
fn call_execute_reaches_only_listed_hosts_and_names_the_refused_one() {
    let port = registry();
    let other = registry();
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("settings.json"),
        format!(r#"{{"exec": {{"network": {{"allow": ["localhost:{port}"]}}}}}}"#),
    )
    .unwrap();
    let command = format!(
        "NO_PROXY= no_proxy= curl -sS --max-time 10 http://localhost:{port}/; \
         NO_PROXY= no_proxy= curl -sS --max-time 10 http://localhost:{other}/; \
         bash -c 'echo hi > /dev/tcp/127.0.0.1/{other}' 2>/dev/null && echo direct-connected || echo direct-refused"
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &[
            "call",
            "execute",
            &args,
            "--yes",
            "--json",
            "--id",
            "call-net-1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).expect("one JSON result");
    let model = v["model"].as_str().unwrap_or_default();
    assert_eq!(model.matches("registry-ok").count(), 1, "{model}");
    assert!(model.contains("direct-refused"), "{model}");
    assert!(
        model.contains(&format!(
            "network: refused connection to localhost:{other} (not on exec.network.allow); \
             the person can add it to exec.network.allow in settings.json"
        )),
        "{model}"
    );
    let (code, shown, err) = aibuddy(p.path(), d.path(), &["show", "call-net-1", "--json"]);
    assert_eq!(code, 0, "{shown}\n{err}");
    let rec: Value = serde_json::from_str(&shown).unwrap();
    let text = rec.to_string();
    let net = find_network(&rec).unwrap_or_else(|| panic!("no network report in {text}"));
    let events = net["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["port"] == other && e["allowed"] == false && e["host"] == "localhost"),
        "{net}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["port"] == port && e["allowed"] == true),
        "{net}"
    );
}

/// The stored outcome's `network` object, wherever the record keeps the raw value.
fn find_network(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(m) => {
            if let Some(n) = m.get("network").filter(|n| n.get("events").is_some()) {
                return Some(n);
            }
            m.values().find_map(find_network)
        }
        Value::Array(a) => a.iter().find_map(find_network),
        _ => None,
    }
}

// ------------------------------------------------------------------ the network question at a terminal

/// A pseudo-terminal: (master, slave), both owned.
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: plain libc calls on a descriptor we own; the name buffer is large enough and
    // NUL-terminated by ptsname_r on success.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        let master = OwnedFd::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
            0
        );
        let path = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        (std::fs::File::from(master), slave)
    }
}

type Seen = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

fn collect(mut master: std::fs::File) -> Seen {
    let seen: Seen = Default::default();
    let s2 = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            s2.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    seen
}

fn seen_text(seen: &Seen) -> String {
    String::from_utf8_lossy(&seen.lock().unwrap()).into_owned()
}

/// Waits until `needle` has been shown `count` times in all.
fn wait_for(seen: &Seen, needle: &str, count: usize, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = seen_text(seen);
        if text.matches(needle).count() >= count {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("aibuddy exited ({status}) before showing {needle:?}:\n{text}");
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("never saw {needle:?} in:\n{text}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

const ALLOW_PROMPT: &str = "Allow? [o]nce, [p]roject, [N]o ";

/// `aibuddy call execute` at a terminal: approves the command, answers the network question with
/// `answer`; returns (exit code, the JSON result, the terminal text).
fn call_at_terminal(
    project: &std::path::Path,
    data: &std::path::Path,
    id: &str,
    command: &str,
    answer: &str,
) -> (i32, Value, String) {
    let (master, slave) = pty();
    let mut writer = master.try_clone().unwrap();
    let seen = collect(master);
    let args = serde_json::json!({ "command": command }).to_string();
    let mut child = support::aibuddy_cmd(project, data)
        .args(["call", "execute", &args, "--json", "--id", id])
        .stdin(std::process::Stdio::from(slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(slave))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&seen, "Approve? [y/N] ", 1, &mut child);
    writer.write_all(b"y\n").unwrap();
    wait_for(&seen, ALLOW_PROMPT, 1, &mut child);
    writer.write_all(answer.as_bytes()).unwrap();
    writer.write_all(b"\n").unwrap();
    let out = child.wait_with_output().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", seen_text(&seen)));
    (out.status.code().unwrap_or(-1), v, seen_text(&seen))
}

fn rule_of(data: &std::path::Path, project: &std::path::Path, id: &str, port: u16) -> Value {
    let (code, shown, err) = aibuddy(project, data, &["show", id, "--json"]);
    assert_eq!(code, 0, "{shown}\n{err}");
    let rec: Value = serde_json::from_str(&shown).unwrap();
    let net = find_network(&rec).unwrap_or_else(|| panic!("no network report in {rec}"));
    net["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["port"] == port)
        .cloned()
        .unwrap_or_else(|| panic!("no event for port {port}: {net}"))
}

/// Issue 22: a host on no list is asked about at the terminal, naming host, port and call; "once"
/// connects this call only, "project" records the host at the user level
/// (`<data>/network/<sha256(root)>.json`, nothing in the project) and a later call in the project
/// connects without asking (even with `--yes` and no terminal); "no" refuses and the model is told
/// so. Each decision is recorded on its call.
#[test]
fn a_host_on_no_list_is_asked_about_at_the_terminal() {
    let (once_port, project_port, denied_port) = (registry(), registry(), registry());
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (p, d) = (base.join("proj"), base.join("data"));
    std::fs::create_dir_all(&p).unwrap();
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("settings.json"),
        r#"{"exec": {"network": {"allow": ["crates.io"]}}}"#,
    )
    .unwrap();
    let curl =
        |port: u16| format!("NO_PROXY= no_proxy= curl -sS --max-time 30 http://127.0.0.1:{port}/");

    // Once: connects, recorded on the call, nothing kept for the project.
    let (code, v, terminal) = call_at_terminal(&p, &d, "net-once", &curl(once_port), "o");
    assert_eq!(code, 0, "{v}\n{terminal}");
    assert!(
        v["model"].as_str().unwrap().contains("registry-ok"),
        "{v}\n{terminal}"
    );
    assert!(
        terminal.contains("── network: execute (call net-once) ──")
            && terminal.contains("  host:        127.0.0.1\r\n")
            && terminal.contains(&format!("  port:        {once_port}\r\n")),
        "{terminal}"
    );
    let e = rule_of(&d, &p, "net-once", once_port);
    assert_eq!(
        (&e["allowed"], &e["rule"]),
        (&json!(true), &json!("asked: allowed once"))
    );
    let record = d.join("network").join(format!(
        "{}.json",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
            p.as_os_str().as_encoded_bytes()
        ))
    ));
    assert!(!record.exists(), "once keeps nothing");

    // Project: connects and is recorded at the user level; the project folder stays untouched.
    let (code, v, terminal) = call_at_terminal(&p, &d, "net-project", &curl(project_port), "p");
    assert_eq!(code, 0, "{v}\n{terminal}");
    assert!(v["model"].as_str().unwrap().contains("registry-ok"), "{v}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(
        kept,
        json!({"project": p, "allow": [{"host": "127.0.0.1", "port": project_port}]})
    );
    assert_eq!(
        std::fs::read_dir(&p).unwrap().count(),
        0,
        "nothing in the project"
    );
    let e = rule_of(&d, &p, "net-project", project_port);
    assert_eq!(e["rule"], "asked: allowed for this project");
    // A later call in the project: no question (no terminal, `--yes`), connects.
    let args = json!({ "command": curl(project_port) }).to_string();
    let (code, out, err) = aibuddy(
        &p,
        &d,
        &[
            "call",
            "execute",
            &args,
            "--yes",
            "--json",
            "--id",
            "net-later",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("registry-ok"), "{out}");
    assert_eq!(
        rule_of(&d, &p, "net-later", project_port)["rule"],
        "project: allowed earlier"
    );
    // ... while another unlisted host is still refused without a question.
    let args = json!({ "command": curl(once_port) }).to_string();
    let (_, out, _) = aibuddy(&p, &d, &["call", "execute", &args, "--yes", "--json"]);
    assert!(
        out.contains(&format!(
            "refused connection to 127.0.0.1:{once_port} (not on exec.network.allow)"
        )),
        "{out}"
    );

    // No: refused, and the model is told which host and how to allow it.
    let (_, v, terminal) = call_at_terminal(&p, &d, "net-deny", &curl(denied_port), "");
    let model = v["model"].as_str().unwrap();
    assert!(!model.contains("registry-ok"), "{model}");
    assert!(
        model.contains(&format!(
            "network: refused connection to 127.0.0.1:{denied_port} (refused by the person); \
             the person can add it to exec.network.allow in settings.json"
        )),
        "{model}\n{terminal}"
    );
    let e = rule_of(&d, &p, "net-deny", denied_port);
    assert_eq!(
        (&e["allowed"], &e["rule"]),
        (&json!(false), &json!("asked: denied"))
    );
    // History shows the decision in the readable form too.
    let (_, shown, _) = aibuddy(&p, &d, &["show", "net-deny"]);
    assert!(
        shown.contains(&format!(
            "network: 127.0.0.1:{denied_port} refused [asked: denied] (refused by the person), 1 connection(s)"
        )),
        "{shown}"
    );
}
