//! The shell's commands through tauri's mock runtime: real core app on a temporary project and data
//! directory, the app's real generated context (so the capability in `capabilities/` is enforced),
//! and IPC requests as the webview would send them. No display needed.

use std::path::Path;

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::{COMMANDS, ShellState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

struct Fixture {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    core: App,
    project: tempfile::TempDir,
    data: tempfile::TempDir,
}

fn open_core(project: &Path, data: &Path) -> App {
    let opts = AppOptions {
        project: project.to_path_buf(),
        data_dir: data.to_path_buf(),
    };
    tauri::async_runtime::block_on(App::open(opts)).unwrap()
}

fn fixture_with(settings: Option<&str>) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    if let Some(text) = settings {
        std::fs::create_dir_all(project.path().join(".aibuddy")).unwrap();
        std::fs::write(project.path().join(".aibuddy/settings.json"), text).unwrap();
    }
    let state = ShellState::new(open_core(project.path(), data.path()));
    let app = aibuddy_desktop::wire(mock_builder(), state)
        .build(aibuddy_desktop::context())
        .unwrap();
    // Windows from the config are created when the event loop starts; the mock app needs its own.
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    // A second core app on the same folders is the reference for what the commands must return.
    let core = open_core(project.path(), data.path());
    Fixture {
        _app: app,
        window,
        core,
        project,
        data,
    }
}

fn invoke_on(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        // Linux's custom-protocol origin; `http://tauri.localhost` is Windows'.
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, request).map(|b| b.deserialize::<Value>().unwrap())
}

#[test]
fn list_tools_returns_the_core_listing() {
    let f = fixture_with(None);
    let listed = invoke_on(&f.window, "list_tools", json!({})).unwrap();
    assert_eq!(listed, serde_json::to_value(f.core.tools_list()).unwrap());
    assert!(
        listed.as_array().is_some_and(|tools| !tools.is_empty()),
        "no tools listed: {listed}"
    );
}

#[test]
fn list_tools_follows_project_settings() {
    let f = fixture_with(Some(r#"{ "tools": { "enabled": ["filesystem"] } }"#));
    let listed = invoke_on(&f.window, "list_tools", json!({})).unwrap();
    assert_eq!(listed, serde_json::to_value(f.core.tools_list()).unwrap());
    let configs: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["config"].as_str())
        .collect();
    assert!(
        configs.iter().all(|c| *c == "filesystem"),
        "configs: {configs:?}"
    );
}

#[test]
fn project_info_reports_the_startup_project_and_settings_problems() {
    let f = fixture_with(Some(
        "{\n  \"tools\": { \"enabled\": [\"filesystem\"] },\n  \"tolls\": 1\n}\n",
    ));
    let info = invoke_on(&f.window, "project_info", json!({})).unwrap();
    let root = std::fs::canonicalize(f.project.path()).unwrap();
    assert_eq!(info["root"], json!(root.display().to_string()));
    assert_eq!(info["data_dir"], json!(f.data.path().display().to_string()));
    // Only what the header shows (the unread `event_version` is gone).
    let mut keys: Vec<&str> = info
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["data_dir", "root", "settings_files", "settings_problems"]
    );
    assert_eq!(
        info["settings_problems"],
        serde_json::to_value(&f.core.settings.problems).unwrap()
    );
    let problems = info["settings_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["field"], json!("tolls"));
}

#[test]
fn the_ui_cannot_choose_the_project() {
    // Extra arguments are ignored: no command takes a path, so the root stays the startup one.
    let f = fixture_with(None);
    let info = invoke_on(
        &f.window,
        "project_info",
        json!({ "root": "/", "project": "/etc" }),
    )
    .unwrap();
    let root = std::fs::canonicalize(f.project.path()).unwrap();
    assert_eq!(info["root"], json!(root.display().to_string()));
}

#[test]
fn commands_outside_the_capability_are_refused() {
    let f = fixture_with(None);
    // Core plugins are not granted to the window beyond listening to the app's events: it cannot
    // emit events, control windows or resolve paths.
    for cmd in [
        "plugin:event|emit",
        "plugin:event|emit_to",
        "plugin:window|close",
        "plugin:path|resolve_directory",
        "plugin:app|version",
    ] {
        let error = invoke_on(&f.window, cmd, json!({})).unwrap_err();
        assert!(
            error.as_str().is_some_and(|e| e.contains("not allowed")),
            "{cmd}: {error}"
        );
    }
    let error = invoke_on(&f.window, "no_such_command", json!({})).unwrap_err();
    assert!(
        error
            .as_str()
            .is_some_and(|e| e.contains("not found") || e.contains("not allowed")),
        "{error}"
    );
}

#[test]
fn every_registered_command_is_granted_and_answers() {
    let f = fixture_with(None);
    for cmd in COMMANDS {
        // `pick_project` opens the native folder dialog and waits for the person (no answer here);
        // the capability test below checks it is granted.
        if *cmd == "pick_project" {
            continue;
        }
        // With no arguments, commands that need some reject with a deserialization error: that is
        // still an answer from the command, not a refusal by the ACL or an unknown name.
        if let Err(error) = invoke_on(&f.window, cmd, json!({})) {
            let text = error.to_string();
            assert!(
                !text.contains("not allowed") && !text.contains("not found"),
                "{cmd}: {text}"
            );
        }
    }
}

#[test]
fn the_capability_grants_exactly_the_registered_commands() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/main-window.json");
    let capability: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    granted.sort();
    let mut expected: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .collect();
    // The run view listens to `run-event` (and stops listening); nothing else of the core plugins.
    expected.extend([
        "core:event:allow-listen".into(),
        "core:event:allow-unlisten".into(),
    ]);
    expected.sort();
    assert_eq!(granted, expected);
    assert_eq!(capability["windows"], json!(["main"]));
}

#[test]
fn the_config_sets_a_strict_csp() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tauri.conf.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let csp = &config["app"]["security"]["csp"];
    assert_eq!(csp["default-src"], json!("'self'"));
    assert_eq!(csp["script-src"], json!("'self'"));
    assert_eq!(csp["object-src"], json!("'none'"));
    assert_eq!(config["app"]["withGlobalTauri"], json!(false));
}
