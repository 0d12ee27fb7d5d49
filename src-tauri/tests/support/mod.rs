//! Shared by `projects.rs` and `trust.rs`: a window on the mock runtime, IPC invocation, events
//! collected by name, and a project MCP server (the real `mcp-server-memory`) that writes its
//! process id, so a test can see the process start and go away.

#![allow(dead_code)]

mod stored;
pub use stored::stored_run;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::plane::PlaneOptions;
use aibuddy_desktop::ShellState;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{Listener, WebviewWindow, WebviewWindowBuilder};

pub struct Window {
    pub app: tauri::App<MockRuntime>,
    pub window: WebviewWindow<MockRuntime>,
    pub events: Arc<Mutex<Vec<(String, Value)>>>,
}

/// Plane options with a generous MCP connect wait (node starts slowly on a loaded machine).
pub fn plane() -> PlaneOptions {
    PlaneOptions {
        mcp_connect_wait: Duration::from_secs(90),
        watch_skills: false,
        ..PlaneOptions::default()
    }
}

/// Opens `project` (with `data`) and a window on it.
pub fn open(project: &Path, data: &Path) -> Window {
    let core = tauri::async_runtime::block_on(App::open_with(
        AppOptions {
            project: project.to_path_buf(),
            data_dir: data.to_path_buf(),
        },
        plane(),
    ))
    .unwrap();
    window(ShellState::new(core).with_plane(plane()))
}

pub fn window(state: ShellState) -> Window {
    let app = aibuddy_desktop::wire(mock_builder(), state)
        .build(aibuddy_desktop::context())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let events: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    for name in ["project-changed", "trust-changed"] {
        let seen = events.clone();
        app.listen_any(name, move |event| {
            let payload = serde_json::from_str(event.payload()).unwrap_or(Value::Null);
            seen.lock().unwrap().push((name.to_string(), payload));
        });
    }
    Window {
        app,
        window,
        events,
    }
}

impl Window {
    pub fn invoke(&self, cmd: &str, body: Value) -> Result<Value, Value> {
        invoke(&self.window, cmd, body)
    }

    pub fn events(&self, name: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
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

/// The real memory MCP server (installed by scripts/install-mcp-servers.sh).
pub fn memory_server() -> PathBuf {
    let dir = std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/mcp"));
    let bin = dir.join("node/node_modules/.bin/mcp-server-memory");
    assert!(
        bin.exists(),
        "the real MCP servers are not installed at {}: run `bash scripts/install-mcp-servers.sh`",
        dir.display()
    );
    bin
}

/// Writes a project `.aibuddy/mcp.json` whose server `memory` records its pid in `pid_file`
/// (the shell `exec`s the server, so the pid is the server's).
pub fn write_project_server(project: &Path, pid_file: &Path, memory_file: &Path) {
    std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
    let script = format!(
        "echo $$ > '{}'; exec '{}'",
        pid_file.display(),
        memory_server().display()
    );
    let config = json!({"mcpServers": {"memory": {
        "command": "sh",
        "args": ["-c", script],
        "env": {"MEMORY_FILE_PATH": memory_file, "SECRET_TOKEN": "do-not-show-this-value"},
        "timeouts": {"connect": 90}
    }}});
    std::fs::write(project.join(".aibuddy/mcp.json"), config.to_string()).unwrap();
}

/// Waits (generously) for the pid file and returns the pid.
pub fn wait_pid(pid_file: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the MCP server never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is running (a zombie waiting to be reaped counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits (bounded) until `pid` is gone; false if it is still running.
pub fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Puts `paths` in the recent-projects list of `data` (the first one most recent).
pub fn seed_recent(data: &Path, paths: &[&Path]) {
    use aibuddy_desktop::recent;
    let mut file = recent::load(data);
    for (i, p) in paths.iter().rev().enumerate() {
        file = recent::touch(file, &p.display().to_string(), i as u64 + 1);
    }
    recent::save(data, &file).unwrap();
}
