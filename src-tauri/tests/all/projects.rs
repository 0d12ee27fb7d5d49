//! Switching project from the window through tauri's mock runtime: the recent list (persisted,
//! missing folders flagged, only listed directories opened), a switch refused while a call is in
//! progress, and after a switch every command answering for the new project while the old
//! project's MCP server process is gone.

use crate::support;

use std::time::Duration;

use aibuddy::plane::PlaneOptions;
use aibuddy_desktop::{ShellState, recent};
use serde_json::{Value, json};
use support::{alive, open, seed_recent, wait_gone, wait_pid, write_project_server};
use tauri::Manager;

fn canonical(p: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(p).unwrap()
}

#[test]
fn a_switch_rescopes_everything_and_the_old_servers_are_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let base = canonical(tmp.path());
    let (a, b, data) = (base.join("a"), base.join("b"), base.join("data"));
    for d in [&a, &b, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(a.join("only-in-a.txt"), "alpha\n").unwrap();
    std::fs::write(b.join("only-in-b.txt"), "beta\n").unwrap();
    let pid_file = base.join("server.pid");
    write_project_server(&a, &pid_file, &base.join("memory.jsonl"));
    // The person trusted project A (as `aibuddy trust` records it): its server starts.
    let shown = aibuddy::trust::status(&a, &data).unwrap();
    aibuddy::trust::grant(&a, &data, &shown.digest).unwrap();

    let w = open(&a, &data);
    let pid = wait_pid(&pid_file);
    assert!(alive(pid));
    let tools = w.invoke("list_tools", json!({})).unwrap();
    assert!(
        tools.to_string().contains("memory"),
        "project A lists its MCP server's tools: {tools}"
    );
    let read = w
        .invoke(
            "call_tool",
            json!({"tool": "read_file", "arguments": r#"{"path":"only-in-a.txt"}"#, "onEvent": "__CHANNEL__:7"}),
        )
        .unwrap();
    assert_eq!(read["status"], json!("ok"), "{read}");
    let history_a = w.invoke("history_page", json!({})).unwrap();
    assert_eq!(
        history_a["rows"].as_array().unwrap().len(),
        1,
        "{history_a}"
    );

    seed_recent(&data, &[&b]);
    let info = w
        .invoke("open_recent", json!({"path": b.display().to_string()}))
        .unwrap();
    assert_eq!(info["root"], json!(b.display().to_string()));

    // The old project's server process was shut down before the new project opened.
    assert!(
        wait_gone(pid),
        "the old project's MCP server {pid} is still running"
    );
    assert_eq!(
        w.invoke("project_info", json!({})).unwrap()["root"],
        json!(b.display().to_string())
    );
    let tools = w.invoke("list_tools", json!({})).unwrap();
    assert!(!tools.to_string().contains("memory"), "{tools}");
    // The store is the data directory's (shared with the CLI), the History tab the open project's:
    // the call made in A is not B's.
    let history = w.invoke("history_page", json!({})).unwrap();
    assert_eq!(history["rows"], json!([]), "{history}");
    // The sandbox is B's: A's file is not reachable by a relative path any more.
    let read = w
        .invoke(
            "call_tool",
            json!({"tool": "read_file", "arguments": r#"{"path":"only-in-b.txt"}"#, "onEvent": "__CHANNEL__:7"}),
        )
        .unwrap();
    assert_eq!(read["status"], json!("ok"), "{read}");
    let missing = w
        .invoke(
            "call_tool",
            json!({"tool": "read_file", "arguments": r#"{"path":"only-in-a.txt"}"#, "onEvent": "__CHANNEL__:7"}),
        )
        .unwrap();
    assert_eq!(missing["status"], json!("error"), "{missing}");

    // The window was told, and B is now the most recent project.
    let changed = w.events("project-changed");
    assert_eq!(
        changed.last().unwrap()["root"],
        json!(b.display().to_string())
    );
    let listed = w.invoke("list_recent", json!({})).unwrap();
    assert_eq!(listed[0]["path"], json!(b.display().to_string()));
    assert_eq!(listed[0]["current"], json!(true));
    assert_eq!(listed[0]["missing"], json!(false));

    // Back to A: its trusted server starts again (a new process).
    std::fs::remove_file(&pid_file).unwrap();
    seed_recent(&data, &[&a]);
    w.invoke("open_recent", json!({"path": a.display().to_string()}))
        .unwrap();
    let again = wait_pid(&pid_file);
    assert_ne!(again, pid);
    assert!(alive(again));
    aibuddy_desktop::on_exit(&w.app.state::<ShellState>());
}

#[test]
fn a_switch_is_refused_while_a_call_is_in_progress() {
    let tmp = tempfile::tempdir().unwrap();
    let base = canonical(tmp.path());
    let (a, b, data) = (base.join("a"), base.join("b"), base.join("data"));
    for d in [&a, &b, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    let w = open(&a, &data);
    seed_recent(&data, &[&b]);
    // A write waits for the person's confirmation: the call is in progress.
    let window = w.window.clone();
    let call = std::thread::spawn(move || {
        support::invoke(
            &window,
            "call_tool",
            json!({"tool": "write_file", "arguments": r#"{"path":"out.txt","content":"x"}"#, "onEvent": "__CHANNEL__:7"}),
        )
    });
    let state = w.app.state::<ShellState>();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let call_id = loop {
        if let Some(r) = state.project().unwrap().calls.pending_confirms().pop() {
            break r.call_id;
        }
        assert!(std::time::Instant::now() < deadline, "no confirmation");
        std::thread::sleep(Duration::from_millis(20));
    };
    let refused = w
        .invoke("open_recent", json!({"path": b.display().to_string()}))
        .unwrap_err();
    assert_eq!(refused["code"], json!("busy"), "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("stop it first"),
        "{refused}"
    );
    assert_eq!(
        w.invoke("project_info", json!({})).unwrap()["root"],
        json!(a.display().to_string())
    );
    // Once the call is answered and done, the switch goes through.
    assert_eq!(
        w.invoke(
            "answer_confirm",
            json!({"callId": call_id, "approve": false})
        )
        .unwrap(),
        json!(true)
    );
    let result = call.join().unwrap().unwrap();
    assert_eq!(result["status"], json!("rejected"), "{result}");
    assert!(!a.join("out.txt").exists());
    let info = w
        .invoke("open_recent", json!({"path": b.display().to_string()}))
        .unwrap();
    assert_eq!(info["root"], json!(b.display().to_string()));
}

#[test]
fn the_recent_list_is_persisted_flags_missing_folders_and_opens_only_listed_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let base = canonical(tmp.path());
    let (a, gone, file, data) = (
        base.join("a"),
        base.join("gone"),
        base.join("plain.txt"),
        base.join("data"),
    );
    for d in [&a, &gone, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(&file, "not a folder").unwrap();
    seed_recent(&data, &[&gone, &file]);
    std::fs::remove_dir(&gone).unwrap();

    // The window starts with no project (the welcome view); opening from the list records it.
    let w = support::window(ShellState::empty(data.clone(), PlaneOptions::default()));
    let none = w.invoke("project_info", json!({})).unwrap_err();
    assert_eq!(none["code"], json!("project"), "{none}");
    seed_recent(&data, &[&a]);
    w.invoke("open_recent", json!({"path": a.display().to_string()}))
        .unwrap();

    let listed = w.invoke("list_recent", json!({})).unwrap();
    let row = |p: &std::path::Path| -> Value {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == json!(p.display().to_string()))
            .cloned()
            .unwrap_or_else(|| panic!("{} not listed: {listed}", p.display()))
    };
    assert_eq!(listed[0]["path"], json!(a.display().to_string()));
    assert_eq!(row(&a)["missing"], json!(false));
    assert_eq!(row(&gone)["missing"], json!(true));
    assert_eq!(row(&file)["missing"], json!(true));

    let not_dir = w
        .invoke("open_recent", json!({"path": file.display().to_string()}))
        .unwrap_err();
    assert!(
        not_dir["message"]
            .as_str()
            .unwrap()
            .contains("not a directory"),
        "{not_dir}"
    );
    let unlisted = w
        .invoke("open_recent", json!({"path": base.display().to_string()}))
        .unwrap_err();
    assert!(
        unlisted["message"]
            .as_str()
            .unwrap()
            .contains("not in the recent"),
        "{unlisted}"
    );
    // A refused open leaves the open project as it was.
    assert_eq!(
        w.invoke("project_info", json!({})).unwrap()["root"],
        json!(a.display().to_string())
    );

    assert_eq!(
        w.invoke("forget_recent", json!({"path": gone.display().to_string()}))
            .unwrap(),
        json!(true)
    );
    let stored = recent::load(&data);
    assert!(
        stored
            .projects
            .iter()
            .all(|e| e.path != gone.display().to_string())
    );
    assert!(
        stored
            .projects
            .iter()
            .any(|e| e.path == a.display().to_string())
    );
}

#[test]
fn the_provider_picker_lists_entries_without_keys_and_remembers_the_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let base = canonical(tmp.path());
    let (a, data) = (base.join("a"), base.join("data"));
    for d in [&a, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    let settings = json!({"providers": {
        "default": "local",
        "local": {"kind": "openai-chat", "base_url": "http://user:pw@127.0.0.1:9/v1", "model": "qwen3:8b"},
        "other": {"kind": "openai-chat", "base_url": "http://127.0.0.1:10/v1", "model": "small"}
    }});
    std::fs::write(data.join("settings.json"), settings.to_string()).unwrap();
    let w = open(&a, &data);
    let list = w.invoke("list_providers", json!({})).unwrap();
    assert_eq!(list["default"], json!("local"));
    assert_eq!(list["chosen"], json!(null));
    let local = &list["providers"][0];
    assert_eq!(local["name"], json!("local"));
    assert_eq!(local["host"], json!("127.0.0.1:9"));
    assert_eq!(local["model"], json!("qwen3:8b"));
    assert!(!list.to_string().contains("pw@"), "{list}");
    w.invoke(
        "choose_provider",
        json!({"provider": "other", "model": "bigger"}),
    )
    .unwrap();
    let list = w.invoke("list_providers", json!({})).unwrap();
    assert_eq!(list["chosen"], json!("other"));
    assert_eq!(list["chosen_model"], json!("bigger"));
}
