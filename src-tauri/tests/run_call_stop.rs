//! Stopping one call of a run from the window (an `execute` card's own Stop): `cancel_call` with the
//! run's tool call id ends that command's process tree, the model gets the call back as cancelled,
//! and the run goes on to its next step. Real fake provider on 127.0.0.1, real child processes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::{RUN_EVENT, ShellState};
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{Listener, WebviewWindow, WebviewWindowBuilder};

const KIND: ProviderKind = ProviderKind::OpenAiChat;

struct Fixture {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    server: FakeServer,
    _root: std::path::PathBuf,
    events: Arc<Mutex<Vec<Value>>>,
    _dir: tempfile::TempDir,
}

/// A project and a data dir whose user settings name the fake provider (an `openai-chat` entry on a
/// local base URL: no key involved).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(root.join("notes.txt"), "alpha\n").unwrap();
    let server = tauri::async_runtime::block_on(FakeServer::start()).unwrap();
    let settings = json!({"providers": {
        "default": "local",
        "local": {"kind": "openai-chat", "base_url": server.base_url(KIND), "model": "qwen3:8b"}
    }});
    std::fs::write(data.join("settings.json"), settings.to_string()).unwrap();
    let core = tauri::async_runtime::block_on(App::open(AppOptions {
        project: root.clone(),
        data_dir: data,
    }))
    .unwrap();
    let root = core.project_root.clone();
    let app = aibuddy_desktop::wire(mock_builder(), ShellState::new(core))
        .build(aibuddy_desktop::context())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let events: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = events.clone();
    app.listen_any(RUN_EVENT, move |event| {
        seen.lock()
            .unwrap()
            .push(serde_json::from_str(event.payload()).unwrap());
    });
    Fixture {
        _app: app,
        window,
        server,
        _root: root,
        events,
        _dir: dir,
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

impl Fixture {
    fn push(&self, turn: Turn) {
        self.server.push(turn.reply(KIND));
    }

    fn events_of(&self, run_id: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["run_id"] == json!(run_id))
            .map(|e| e["event"].clone())
            .collect()
    }

    /// Waits (bounded generously) for an event of `run_id` with `type`.
    fn wait_event(&self, run_id: &str, kind: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(e) = self
                .events_of(run_id)
                .into_iter()
                .find(|e| e["type"] == json!(kind))
            {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no {kind} event: {:?}",
                self.events_of(run_id)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Approves, through `answer_confirm`, the confirmation the run raises for `tool_call_id`.
    fn approve(&self, run_id: &str, tool_call_id: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let request = loop {
            let found = self.events_of(run_id).into_iter().find(|e| {
                e["type"] == json!("confirm_request")
                    && e["tool_call_id"]
                        .as_str()
                        .is_some_and(|id| id.ends_with(&format!(":{tool_call_id}")))
            });
            if let Some(e) = found {
                break e;
            }
            assert!(
                Instant::now() < deadline,
                "no confirmation for {tool_call_id}: {:?}",
                self.events_of(run_id)
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let call_id = request["request"]["call_id"].as_str().unwrap().to_string();
        let answered = invoke(
            &self.window,
            "answer_confirm",
            json!({ "callId": call_id, "approve": true }),
        )
        .unwrap();
        assert_eq!(answered, json!(true), "{request}");
    }
}

/// Processes whose command line contains `needle` (Linux /proc).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
        {
            out.push(pid);
        }
    }
    out
}

#[test]
fn cancel_call_stops_one_run_call_and_the_run_goes_on() {
    let f = fixture();
    let command = "sleep 40.713";
    f.push(Turn::text("Waiting.").call("call_w1", "execute", json!({ "command": command })));
    f.push(Turn::text("That one was stopped; carrying on."));
    let started = invoke(&f.window, "start_run", json!({ "prompt": "wait" })).unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_string();
    f.approve(&run_id, "call_w1");
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(command).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stopped at once, while the sandbox may still be starting: nothing of the tree may be left
    // (the exec crate's early-stop guarantee, `crates/exec/tests/early_stop.rs`).
    let call = f.wait_event(&run_id, "tool_call");
    let call_id = call["tool_call_id"].as_str().unwrap().to_string();
    assert!(call_id.ends_with(":call_w1"), "{call}");
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": "nope" })).unwrap(),
        json!(false)
    );
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(true)
    );
    let result = f.wait_event(&run_id, "tool_result");
    assert_eq!(result["status"], json!("cancelled"), "{result}");
    assert!(result["duration_ms"].as_u64().is_some(), "{result}");
    // The run was not stopped: the model got the cancelled call and answered.
    let finished = f.wait_event(&run_id, "run_finished");
    assert_eq!(finished["status"], json!("completed"), "{finished}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(command).is_empty() {
        let left: Vec<String> = processes_with(command)
            .iter()
            .map(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                format!(
                    "{p}: {} | {stat}",
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                )
            })
            .collect();
        assert!(
            Instant::now() < deadline,
            "the stopped command is still running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = invoke(&f.window, "show_run", json!({ "runId": run_id })).unwrap();
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(
        messages[2]["result"]["status"],
        json!("cancelled"),
        "{shown}"
    );
    assert_eq!(
        messages[3]["text"],
        json!("That one was stopped; carrying on.")
    );
    // Once ended, the call can no longer be stopped.
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(false)
    );
    f.server.assert_clean();
}
