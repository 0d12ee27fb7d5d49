//! Tool calls from the window through tauri's mock runtime: the full core pipeline on a temporary
//! project, live events over a `tauri::ipc::Channel`, confirmation answered by call id (the digest is
//! the shell's business), and stop.

use crate::registry::registry;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::ShellState;
use aibuddy_desktop::calls::{ChannelSink, run_call};
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, Channel, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow, WebviewWindowBuilder};

struct Fixture {
    app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    project: tempfile::TempDir,
    _data: tempfile::TempDir,
}

fn fixture() -> Fixture {
    fixture_with_settings(None)
}

/// A fixture whose user-level `settings.json` is `settings`.
fn fixture_with_settings(settings: Option<&str>) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    if let Some(s) = settings {
        std::fs::write(data.path().join("settings.json"), s).unwrap();
    }
    std::fs::write(
        project.path().join("notes.txt"),
        "first line\nsecond line\n",
    )
    .unwrap();
    let opts = AppOptions {
        project: project.path().to_path_buf(),
        data_dir: data.path().to_path_buf(),
    };
    let core = tauri::async_runtime::block_on(App::open(opts)).unwrap();
    let app = aibuddy_desktop::wire(mock_builder(), ShellState::new(core))
        .build(aibuddy_desktop::context())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Fixture {
        app,
        window,
        project,
        _data: data,
    }
}

fn invoke(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, request).map(|b| b.deserialize::<Value>().unwrap())
}

/// Starts `call_tool` on another thread (it blocks until the call ends).
fn call_in_background(
    f: &Fixture,
    tool: &str,
    args: Value,
) -> std::thread::JoinHandle<Result<Value, Value>> {
    let window = f.window.clone();
    let body = json!({ "tool": tool, "arguments": args.to_string(), "onEvent": "__CHANNEL__:7" });
    std::thread::spawn(move || invoke(&window, "call_tool", body))
}

/// Waits until a confirmation is pending and returns its call id.
fn wait_for_confirmation(f: &Fixture) -> String {
    let state = f.app.state::<ShellState>();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(request) = state
            .project()
            .unwrap()
            .calls
            .pending_confirms()
            .into_iter()
            .next()
        {
            return request.call_id;
        }
        assert!(Instant::now() < deadline, "no confirmation was requested");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn call_tool_runs_a_read_through_the_pipeline() {
    let f = fixture();
    let result = invoke(
        &f.window,
        "call_tool",
        json!({ "tool": "read_file", "arguments": r#"{"path":"notes.txt"}"#, "onEvent": "__CHANNEL__:7" }),
    )
    .unwrap();
    assert_eq!(result["status"], json!("ok"), "{result}");
    assert_eq!(result["tool"], json!("read_file"));
    assert!(
        result["model"].as_str().unwrap().contains("second line"),
        "{result}"
    );
    assert!(
        result["tool_call_id"]
            .as_str()
            .unwrap()
            .starts_with("call_")
    );
}

#[test]
fn bad_arguments_fail_at_the_parameters_stage() {
    let f = fixture();
    let result = invoke(
        &f.window,
        "call_tool",
        json!({ "tool": "read_file", "arguments": "{not json", "onEvent": "__CHANNEL__:7" }),
    )
    .unwrap();
    assert_eq!(result["status"], json!("error"), "{result}");
    assert_eq!(result["stage"], json!("Parameters"), "{result}");
    assert_eq!(result["error"]["stage"], json!("Parameters"));
}

#[test]
fn events_stream_over_the_channel_in_order() {
    let f = fixture();
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink_received = received.clone();
    let channel = Channel::new(move |body| {
        sink_received
            .lock()
            .unwrap()
            .push(body.deserialize::<Value>().unwrap());
        Ok(())
    });
    let state = f.app.state::<ShellState>();
    let result = tauri::async_runtime::block_on(run_call(
        &state.project().unwrap(),
        "read_file".into(),
        r#"{"path":"notes.txt"}"#.into(),
        Arc::new(ChannelSink(channel)),
    ));
    let events = received.lock().unwrap().clone();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"tool_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"tool_finished"), "{types:?}");
    assert!(
        events
            .iter()
            .all(|e| e["call_id"] == json!(result.tool_call_id)),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap()["status"], json!("ok"));
}

#[test]
fn a_write_waits_for_confirmation_and_runs_once_approved() {
    let f = fixture();
    let call = call_in_background(
        &f,
        "write_file",
        json!({ "path": "out.txt", "content": "hello" }),
    );
    let call_id = wait_for_confirmation(&f);
    assert!(
        !f.project.path().join("out.txt").exists(),
        "written before approval"
    );

    assert_eq!(
        invoke(
            &f.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": true })
        )
        .unwrap(),
        json!(true)
    );
    let result = call.join().unwrap().unwrap();
    assert_eq!(result["status"], json!("ok"), "{result}");
    assert_eq!(
        std::fs::read_to_string(f.project.path().join("out.txt")).unwrap(),
        "hello"
    );
    // Nothing is pending any more: a second answer finds nothing.
    assert_eq!(
        invoke(
            &f.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": true })
        )
        .unwrap(),
        json!(false)
    );
}

#[test]
fn a_rejected_write_does_nothing() {
    let f = fixture();
    let call = call_in_background(
        &f,
        "write_file",
        json!({ "path": "out.txt", "content": "hello" }),
    );
    let call_id = wait_for_confirmation(&f);
    assert_eq!(
        invoke(
            &f.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": false })
        )
        .unwrap(),
        json!(true)
    );
    let result = call.join().unwrap().unwrap();
    assert_eq!(result["status"], json!("rejected"), "{result}");
    assert_eq!(result["stage"], json!("Authorization"));
    assert!(!f.project.path().join("out.txt").exists());
}

#[test]
fn stopping_a_call_that_waits_for_confirmation_ends_it_without_effect() {
    let f = fixture();
    let call = call_in_background(
        &f,
        "write_file",
        json!({ "path": "out.txt", "content": "hello" }),
    );
    let call_id = wait_for_confirmation(&f);
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(true)
    );
    let result = call.join().unwrap().unwrap();
    assert_ne!(result["status"], json!("ok"), "{result}");
    assert!(!f.project.path().join("out.txt").exists());
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(false)
    );
}

#[test]
fn closing_the_window_stops_running_calls() {
    let f = fixture();
    let call = call_in_background(
        &f,
        "write_file",
        json!({ "path": "out.txt", "content": "hello" }),
    );
    wait_for_confirmation(&f);
    aibuddy_desktop::on_exit(&f.app.state::<ShellState>());
    // on_exit returns only once the call has ended.
    assert!(
        f.app
            .state::<ShellState>()
            .project()
            .unwrap()
            .calls
            .wait_idle(Duration::ZERO)
    );
    let result = call.join().unwrap().unwrap();
    assert_ne!(result["status"], json!("ok"), "{result}");
    assert!(!f.project.path().join("out.txt").exists());
}

#[test]
fn closing_the_window_ends_a_running_command_and_its_process_group() {
    let f = fixture();
    let call = call_in_background(
        &f,
        "execute",
        json!({ "command": "echo started > started.txt; sleep 3097; echo never > late.txt" }),
    );
    let call_id = wait_for_confirmation(&f);
    assert_eq!(
        invoke(
            &f.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": true })
        )
        .unwrap(),
        json!(true)
    );
    // Wait until the command has really started. It runs in its own PID namespace, so it is
    // found on the host by its unique arguments, not by its `$$`.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f.project.path().join("started.txt").exists() || sleepers("3097").is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    aibuddy_desktop::on_exit(&f.app.state::<ShellState>());
    let result = call.join().unwrap().unwrap();
    assert_eq!(result["status"], json!("cancelled"), "{result}");
    let left = sleepers("3097");
    assert!(
        left.is_empty(),
        "the command's processes {left:?} outlived the window"
    );
    assert!(!f.project.path().join("late.txt").exists());
}

/// Host pids of live `sleep <arg>` processes (zombies excluded).
fn sleepers(arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_sleep = args.first().is_some_and(|a| a.ends_with(b"sleep"));
        if is_sleep && args.get(1) == Some(&arg.as_bytes()) {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|st| {
                    st.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            if !zombie {
                found.push(pid);
            }
        }
    }
    found
}

#[test]
fn a_compaction_after_the_call_reaches_the_calls_channel() {
    let f = fixture();
    let body: String = (0..2000)
        .map(|i| format!("line {i:05} of a file long enough for precompaction\n"))
        .collect();
    std::fs::write(f.project.path().join("big.txt"), body).unwrap();
    let received = Arc::new(Mutex::new(Vec::<Value>::new()));
    let sink_received = received.clone();
    let channel = Channel::new(move |body| {
        sink_received
            .lock()
            .unwrap()
            .push(body.deserialize::<Value>().unwrap());
        Ok(())
    });
    let state = f.app.state::<ShellState>();
    let result = tauri::async_runtime::block_on(run_call(
        &state.project().unwrap(),
        "read_file".into(),
        r#"{"path":"big.txt"}"#.into(),
        Arc::new(ChannelSink(channel)),
    ));
    assert_eq!(result.status, aibuddy::events::CallStatus::Ok);
    // Precompaction runs in the background after the result came back: wait (generously) for it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let compacted = loop {
        let found = received
            .lock()
            .unwrap()
            .iter()
            .find(|e| e["type"] == json!("tool_compacted"))
            .cloned();
        if let Some(event) = found {
            break event;
        }
        assert!(Instant::now() < deadline, "no tool_compacted event");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(compacted["call_id"], json!(result.tool_call_id));
    assert_eq!(compacted["strategy"], json!("trim"));
    assert!(compacted["tokens_after"].as_u64() < compacted["tokens_before"].as_u64());
    let events = received.lock().unwrap().clone();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types.last(),
        Some(&"tool_compacted"),
        "after tool_finished: {types:?}"
    );
}

/// Waits until a network question is open and returns it.
fn wait_for_network_ask(f: &Fixture) -> aibuddy::confirm::NetworkAsk {
    let state = f.app.state::<ShellState>();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(ask) = state
            .project()
            .unwrap()
            .calls
            .pending_network()
            .into_iter()
            .next()
        {
            return ask;
        }
        assert!(Instant::now() < deadline, "no network question was asked");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `execute` of `command` through `run_call` with a channel that keeps the events.
fn execute_with_events(
    f: &Fixture,
    command: &str,
) -> (
    std::thread::JoinHandle<aibuddy_desktop::calls::CallResult>,
    Arc<Mutex<Vec<Value>>>,
) {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink_received = received.clone();
    let channel = Channel::new(move |body| {
        sink_received
            .lock()
            .unwrap()
            .push(body.deserialize::<Value>().unwrap());
        Ok(())
    });
    let project = f.app.state::<ShellState>().project().unwrap();
    let args = json!({ "command": command }).to_string();
    let handle = std::thread::spawn(move || {
        tauri::async_runtime::block_on(run_call(
            &project,
            "execute".into(),
            args,
            Arc::new(ChannelSink(channel)),
        ))
    });
    (handle, received)
}

/// Issue 22, the window's half of the network question: a command's host on no list becomes a
/// `network_ask_requested` event naming host, port and call (revealed for display) and a pending
/// question answered by `answer_network {askId, answer}` (the host is the core's, never the UI's):
/// "project" connects and is kept at the user level, "deny" refuses and the model is told; each
/// question is answered once; a stopped call ends its open question (deny, nothing left pending).
#[test]
fn a_commands_unlisted_host_is_asked_in_the_window_and_answered_by_id() {
    let f = fixture_with_settings(Some(r#"{"exec": {"network": {"allow": ["crates.io"]}}}"#));
    let (allowed, denied, stopped) = (registry(), registry(), registry());
    let curl =
        |port: u16| format!("NO_PROXY= no_proxy= curl -sS --max-time 30 http://127.0.0.1:{port}/");
    let (call, events) = execute_with_events(&f, &format!("{}; {}", curl(allowed), curl(denied)));
    let call_id = wait_for_confirmation(&f);
    assert_eq!(
        invoke(
            &f.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": true })
        )
        .unwrap(),
        json!(true)
    );

    let ask = wait_for_network_ask(&f);
    assert_eq!(
        (
            ask.host.as_str(),
            ask.port,
            ask.call_id.as_str(),
            ask.tool.as_str()
        ),
        ("127.0.0.1", allowed, call_id.as_str(), "execute")
    );
    assert!(
        ask.target.contains(&format!("127.0.0.1:{allowed}")),
        "{ask:?}"
    );
    assert_eq!(
        ask.display.host,
        vec![aibuddy_common::term::DisplaySegment::Text {
            text: "127.0.0.1".into()
        }]
    );
    assert_eq!(
        invoke(
            &f.window,
            "answer_network",
            json!({ "askId": ask.ask_id, "answer": "project" })
        )
        .unwrap(),
        json!(true)
    );
    assert_eq!(
        invoke(
            &f.window,
            "answer_network",
            json!({ "askId": ask.ask_id, "answer": "deny" })
        )
        .unwrap(),
        json!(false),
        "answered once"
    );
    let second = wait_for_network_ask(&f);
    assert_eq!(second.port, denied);
    assert_eq!(
        invoke(
            &f.window,
            "answer_network",
            json!({ "askId": second.ask_id, "answer": "deny" })
        )
        .unwrap(),
        json!(true)
    );
    let result = call.join().unwrap();
    assert_eq!(result.status, aibuddy::events::CallStatus::Ok, "{result:?}");
    assert_eq!(
        result.model.matches("registry-ok").count(),
        1,
        "{}",
        result.model
    );
    assert!(
        result.model.contains(&format!(
            "refused connection to 127.0.0.1:{denied} (refused by the person)"
        )),
        "{}",
        result.model
    );
    let events = events.lock().unwrap().clone();
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "network_ask_requested")
        .collect();
    assert_eq!(asked.len(), 2, "{events:?}");
    assert_eq!(asked[0]["ask"]["host"], "127.0.0.1");
    assert_eq!(asked[0]["ask"]["port"], allowed);
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "network_ask_resolved")
        .map(|e| &e["answer"])
        .collect();
    assert_eq!(answers, [&json!("project"), &json!("deny")]);
    let kept = std::fs::read_dir(f._data.path().join("network"))
        .unwrap()
        .count();
    assert_eq!(kept, 1, "one project record at the user level");

    // A stop while the question is open: the question ends (nothing pending), the call is cancelled.
    let (call, events) = execute_with_events(&f, &curl(stopped));
    let call_id = wait_for_confirmation(&f);
    invoke(
        &f.window,
        "answer_confirm",
        json!({ "callId": call_id, "approve": true }),
    )
    .unwrap();
    let ask = wait_for_network_ask(&f);
    assert_eq!(ask.port, stopped);
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(true)
    );
    let result = call.join().unwrap();
    assert_eq!(
        result.status,
        aibuddy::events::CallStatus::Cancelled,
        "{result:?}"
    );
    let state = f.app.state::<ShellState>();
    assert!(state.project().unwrap().calls.pending_network().is_empty());
    // The question's end is announced by its own task: wait for it briefly.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let done = events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "network_ask_resolved" && e["answer"] == "deny");
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", events.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `write_file` through the window (approved) and returns its call id.
fn approved_write(f: &Fixture, path: &str, content: &str) -> String {
    let call = call_in_background(f, "write_file", json!({ "path": path, "content": content }));
    let call_id = wait_for_confirmation(f);
    invoke(
        &f.window,
        "answer_confirm",
        json!({ "callId": call_id, "approve": true }),
    )
    .unwrap();
    let result = call.join().unwrap().unwrap();
    assert_eq!(result["status"], json!("ok"), "{result}");
    call_id
}

/// Checkpoints through the window: real writes through the shell, their change sets through
/// `call_changes`, a preview that writes nothing and lists the conflict (a file the person changed
/// since the call), a rewind that puts the bytes back and leaves the conflict alone without
/// force, recorded as a call of its own that can itself be undone.
#[test]
fn the_window_lists_a_calls_changes_previews_and_rewinds_them_leaving_conflicts_alone() {
    let f = fixture();
    let root = f.project.path().to_path_buf();
    let original = std::fs::read(root.join("notes.txt")).unwrap();
    let edit = approved_write(&f, "notes.txt", "rewritten\n");
    let create = approved_write(&f, "made.txt", "made by\u{202e} the call\n");

    let changes = invoke(&f.window, "call_changes", json!({ "callId": edit })).unwrap();
    assert_eq!(changes["files"][0]["path"], json!("notes.txt"), "{changes}");
    assert_eq!(changes["files"][0]["change"], json!("modified"));
    let diff = changes["files"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-first line") && diff.contains("+rewritten"),
        "{diff}"
    );
    assert!(changes["not_covered"].as_str().unwrap().contains("ignore"));
    let run_id = changes["run_id"].as_str().unwrap().to_string();
    let run = invoke(&f.window, "run_changes", json!({ "runId": run_id })).unwrap();
    assert_eq!(run.as_array().unwrap().len(), 2, "{run}");
    assert_eq!(run[1]["files"][0]["change"], json!("added"));
    // Content from the project comes revealed too: a bidi override is a code, never obeyed.
    assert_eq!(
        run[1]["files"][0]["diff_shown"][3][1],
        json!({ "kind": "code", "code": "U+202E" }),
        "{}",
        run[1]["files"][0]
    );

    // The person changes the created file after the call: a conflict.
    std::fs::write(root.join("made.txt"), "the person's edit\n").unwrap();
    let target = json!({ "kind": "run", "run_id": run_id, "from": edit });
    let preview = invoke(
        &f.window,
        "rewind_preview",
        json!({ "target": target, "force": false }),
    )
    .unwrap();
    assert_eq!(preview["dry_run"], json!(true));
    assert_eq!(preview["rewind_call_id"], Value::Null);
    assert_eq!(
        preview["calls"][0]["call_id"],
        json!(create),
        "newest first"
    );
    assert_eq!(
        preview["calls"][0]["conflicts"][0]["path"],
        json!("made.txt")
    );
    assert_eq!(
        preview["calls"][1]["actions"][0]["path"],
        json!("notes.txt")
    );
    assert_eq!(preview["unresolved_conflicts"], json!(1));
    assert_eq!(
        std::fs::read(root.join("notes.txt")).unwrap(),
        b"rewritten\n",
        "a preview writes nothing"
    );

    let done = invoke(
        &f.window,
        "rewind",
        json!({ "target": target, "force": false }),
    )
    .unwrap();
    assert_eq!(done["dry_run"], json!(false));
    assert_eq!(done["failures"], json!(0));
    assert_eq!(done["unresolved_conflicts"], json!(1));
    assert_eq!(std::fs::read(root.join("notes.txt")).unwrap(), original);
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "the person's edit\n",
        "a conflict is left alone without force"
    );

    // The rewind is a call with its own change set, and undoing it puts the call's bytes back.
    let rewind_id = done["rewind_call_id"].as_str().unwrap().to_string();
    let own = invoke(&f.window, "call_changes", json!({ "callId": rewind_id })).unwrap();
    assert_eq!(own["tool"], json!("rewind"));
    assert_eq!(own["files"][0]["path"], json!("notes.txt"), "{own}");
    invoke(
        &f.window,
        "rewind",
        json!({ "target": { "kind": "call", "call_id": rewind_id }, "force": false }),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(root.join("notes.txt")).unwrap(),
        b"rewritten\n"
    );

    // Errors carry their code and stage.
    let err = invoke(&f.window, "call_changes", json!({ "callId": "call_nope" })).unwrap_err();
    assert_eq!(err["code"], json!("checkpoint"), "{err}");
    assert_eq!(err["stage"], json!("Parameters"), "{err}");
}
