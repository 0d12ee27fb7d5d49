//! Shared by `runs.rs` and `run_call_stop.rs`: a window on the mock runtime whose project's user
//! settings name the protocol-checking fake provider on 127.0.0.1, IPC invocation, the `run-event`s
//! collected, waiting for one, approving a run's confirmation by call id, and finding processes by
//! command line.

#![allow(dead_code)]

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

pub const KIND: ProviderKind = ProviderKind::OpenAiChat;

pub struct Fixture {
    pub app: tauri::App<MockRuntime>,
    pub window: WebviewWindow<MockRuntime>,
    pub server: FakeServer,
    pub root: std::path::PathBuf,
    pub events: Arc<Mutex<Vec<Value>>>,
    _dir: tempfile::TempDir,
}

/// A project and a data dir whose user settings name the fake provider (an `openai-chat` entry on a
/// local base URL: no key involved).
pub fn fixture() -> Fixture {
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
        app,
        window,
        server,
        root,
        events,
        _dir: dir,
    }
}

pub fn invoke(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
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
    pub fn push(&self, turn: Turn) {
        self.server.push(turn.reply(KIND));
    }

    pub fn events_of(&self, run_id: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["run_id"] == json!(run_id))
            .map(|e| e["event"].clone())
            .collect()
    }

    /// Waits (bounded generously) for an event of `run_id` with `type`.
    pub fn wait_event(&self, run_id: &str, kind: &str) -> Value {
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
    pub fn approve(&self, run_id: &str, tool_call_id: &str) {
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
pub fn processes_with(needle: &str) -> Vec<u32> {
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
