//! The trust dialog's commands through tauri's mock runtime, on a project whose `.aibuddy/mcp.json`
//! names the real memory MCP server: untrusted, the server does not start and the dialog is asked
//! for (env names shown, never values); a stale digest is refused; trusting reopens the project
//! and the server starts; "don't trust" stops it and is not asked again for the same content; a
//! change on disk while open sends `trust-changed`, a rewritten script a trusted server runs
//! included.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{alive, memory_server, open, wait_gone, wait_pid, write_project_server};

struct Setup {
    _tmp: tempfile::TempDir,
    project: std::path::PathBuf,
    data: std::path::PathBuf,
    pid_file: std::path::PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("p"), base.join("data"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let pid_file = base.join("server.pid");
    write_project_server(&project, &pid_file, &base.join("memory.jsonl"));
    Setup {
        _tmp: tmp,
        project,
        data,
        pid_file,
    }
}

fn memory_listing(tools: &Value) -> Vec<Value> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.to_string().contains("memory"))
        .cloned()
        .collect()
}

#[test]
fn an_untrusted_project_ignores_its_mcp_json_until_trusted_at_the_digest_shown() {
    let s = setup();
    let w = open(&s.project, &s.data);

    // Untrusted: the server is not started, and listed absent with the reason.
    let tools = w.invoke("list_tools", json!({})).unwrap();
    assert!(tools.to_string().contains("project not trusted"), "{tools}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !s.pid_file.exists(),
        "an untrusted project's server started"
    );

    let prompt = w.invoke("trust_status", json!({})).unwrap();
    assert_eq!(prompt["ask"], json!(true), "{prompt}");
    assert_eq!(prompt["status"]["state"], json!("untrusted"));
    let server = &prompt["status"]["grants"]["servers"][0];
    assert_eq!(server["name"], json!("memory"));
    assert_eq!(server["command"], json!("sh"));
    let env = server["env"].as_array().unwrap();
    assert!(env.contains(&json!("SECRET_TOKEN")), "{server}");
    assert!(
        !prompt.to_string().contains("do-not-show-this-value"),
        "{prompt}"
    );
    let shown = prompt["status"]["digest"].as_str().unwrap().to_string();

    // A digest the dialog never showed is refused, and so is the shown one once the file changed.
    let stale = w
        .invoke("trust_project", json!({"digest": "0000"}))
        .unwrap_err();
    assert_eq!(stale["stage"], json!("Authorization"), "{stale}");
    let text = std::fs::read_to_string(s.project.join(".aibuddy/mcp.json")).unwrap();
    std::fs::write(
        s.project.join(".aibuddy/mcp.json"),
        text.replace("\"connect\":90", "\"connect\":91"),
    )
    .unwrap();
    let changed = w
        .invoke("trust_project", json!({"digest": shown}))
        .unwrap_err();
    assert!(
        changed["message"]
            .as_str()
            .unwrap()
            .contains("changed since"),
        "{changed}"
    );
    assert!(!s.pid_file.exists());

    // Trusted at the current content: the project reopens and its server starts.
    let now = w.invoke("trust_status", json!({})).unwrap();
    let digest = now["status"]["digest"].clone();
    let trusted = w
        .invoke("trust_project", json!({"digest": digest}))
        .unwrap();
    assert_eq!(trusted["status"]["state"], json!("trusted"), "{trusted}");
    assert_eq!(trusted["applied"], json!("trusted"));
    assert_eq!(trusted["ask"], json!(false));
    let pid = wait_pid(&s.pid_file);
    assert!(alive(pid));
    let tools = w.invoke("list_tools", json!({})).unwrap();
    assert!(
        !tools.to_string().contains("project not trusted"),
        "{tools}"
    );
    assert!(!memory_listing(&tools).is_empty());
    assert!(!w.events("project-changed").is_empty());

    // Don't trust: the record is gone, the project reopens untrusted (server stopped), and the
    // dialog does not ask again for this same content.
    let declined = w
        .invoke("distrust_project", json!({"digest": null}))
        .unwrap();
    assert!(
        wait_gone(pid),
        "the server of a distrusted project still runs"
    );
    assert_eq!(declined["applied"], json!("untrusted"), "{declined}");
    assert_eq!(declined["status"]["state"], json!("untrusted"));
    assert_eq!(declined["ask"], json!(false));
    let status = aibuddy::trust::status(&s.project, &s.data).unwrap();
    assert_eq!(status.state, aibuddy::trust::TrustState::Untrusted);
}

#[test]
fn a_change_on_disk_while_open_asks_again() {
    let s = setup();
    let w = open(&s.project, &s.data);
    let first = w.invoke("trust_status", json!({})).unwrap();
    // The person declines; the dialog stays closed for this content.
    w.invoke(
        "distrust_project",
        json!({"digest": first["status"]["digest"]}),
    )
    .unwrap();
    assert_eq!(
        w.invoke("trust_status", json!({})).unwrap()["ask"],
        json!(false)
    );
    // A tool or a command widens the project's settings: the watcher re-prompts.
    std::fs::write(
        s.project.join(".aibuddy/settings.json"),
        r#"{"confirm": {"auto_approve_writes": true}}"#,
    )
    .unwrap();
    // Events may arrive for intermediate content (the file created, then written): wait for the
    // one that shows the new field.
    let deadline = Instant::now() + Duration::from_secs(30);
    let event = loop {
        let found = w.events("trust-changed").into_iter().find(|e| {
            e["status"]["grants"]["settings"]
                .as_array()
                .is_some_and(|fields| {
                    fields
                        .iter()
                        .any(|f| f["field"] == json!("confirm.auto_approve_writes"))
                })
        });
        if let Some(e) = found {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "no trust-changed event naming confirm.auto_approve_writes: {:?}",
            w.events("trust-changed")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(event["ask"], json!(true), "{event}");
    assert_ne!(event["status"]["digest"], first["status"]["digest"]);
    assert_eq!(
        event["status"]["grants"]["servers"][0]["name"],
        json!("memory")
    );
}

/// Waits for a `trust-changed` event matching `pred`.
fn wait_trust_event(w: &support::Window, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(e) = w.events("trust-changed").into_iter().find(|e| pred(e)) {
            return e;
        }
        assert!(
            Instant::now() < deadline,
            "no trust-changed event {what}: {:?}",
            w.events("trust-changed")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A trusted server runs `sh bin/start.sh`, a file in the project (pinned: its content is in the
/// trust digest). A command rewrites it while the project is open: the window is told at once
/// (the project is changed since trusted, the dialog asks), not only at the next open. A file the
/// command line names that appears later (in a folder created later) is seen too.
#[test]
fn a_rewritten_pinned_script_asks_again_while_open() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("p"), base.join("data"));
    std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(project.join("bin")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let pid_file = base.join("server.pid");
    std::fs::write(
        project.join("bin/start.sh"),
        format!(
            "echo $$ > '{}'; exec '{}'\n",
            pid_file.display(),
            memory_server().display()
        ),
    )
    .unwrap();
    let config = json!({"mcpServers": {"memory": {
        "command": "sh",
        "args": ["bin/start.sh", "--config=conf/memory.json"],
        "env": {"MEMORY_FILE_PATH": base.join("memory.jsonl")},
        "timeouts": {"connect": 90}
    }}});
    std::fs::write(project.join(".aibuddy/mcp.json"), config.to_string()).unwrap();

    let w = open(&project, &data);
    let first = w.invoke("trust_status", json!({})).unwrap();
    let pins = first["status"]["grants"]["servers"][0]["pins"].to_string();
    assert!(pins.contains("bin/start.sh"), "{pins}");
    let trusted = w
        .invoke(
            "trust_project",
            json!({"digest": first["status"]["digest"]}),
        )
        .unwrap();
    assert_eq!(trusted["status"]["state"], json!("trusted"), "{trusted}");
    let pid = wait_pid(&pid_file);
    assert!(alive(pid));
    // The window asks for the status of the reopened project, which starts its watch.
    let open_now = w.invoke("trust_status", json!({})).unwrap();
    assert_eq!(open_now["ask"], json!(false), "{open_now}");
    let trusted_digest = open_now["status"]["digest"].clone();
    std::thread::sleep(Duration::from_millis(300));

    // A confined command may write anywhere in the project: it rewrites the script.
    std::fs::write(project.join("bin/start.sh"), "echo rewritten; exit 0\n").unwrap();
    let event = wait_trust_event(&w, "for the rewritten script", |e| {
        e["status"]["state"] == json!("changed_since_trusted")
    });
    assert_eq!(event["ask"], json!(true), "{event}");
    assert_ne!(event["status"]["digest"], trusted_digest);

    // A pinned path in a folder that did not exist: created later, it is seen too.
    let before = event["status"]["digest"].clone();
    std::fs::create_dir(project.join("conf")).unwrap();
    std::fs::write(project.join("conf/memory.json"), "{}").unwrap();
    let later = wait_trust_event(&w, "for the new conf/memory.json", |e| {
        e["status"]["digest"] != before && e["status"]["digest"] != trusted_digest
    });
    assert_eq!(later["ask"], json!(true), "{later}");
    let pins = &later["status"]["grants"]["servers"][0]["pins"];
    let conf = pins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == json!("conf/memory.json"))
        .unwrap_or_else(|| panic!("{pins}"));
    assert!(
        conf["state"].as_str().unwrap().starts_with("file sha256:"),
        "{conf}"
    );
    // The server was started by the test's window; it is not the watch's to stop.
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
    drop(w);
}
