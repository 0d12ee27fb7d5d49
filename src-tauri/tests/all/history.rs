//! Call history through tauri's mock runtime: a real `call_tool` on a temporary project is recorded
//! in the core's SQLite store, then `list_history` and `show_call` read it back the way the history
//! panel does (newest first, full-text search, status filter, bounded raw output slices).

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::ShellState;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

struct Fixture {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    _project: tempfile::TempDir,
    _data: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let body: String = (0..400).map(|i| format!("line number {i}\n")).collect();
    std::fs::write(
        project.path().join("notes.txt"),
        "first line\nsecond line\n",
    )
    .unwrap();
    std::fs::write(project.path().join("long.txt"), body).unwrap();
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
        _app: app,
        window,
        _project: project,
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

fn call(f: &Fixture, tool: &str, arguments: &str) -> Value {
    invoke(
        &f.window,
        "call_tool",
        json!({ "tool": tool, "arguments": arguments, "onEvent": "__CHANNEL__:7" }),
    )
    .unwrap()
}

fn ids(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_history_returns_recorded_calls_newest_first() {
    let f = fixture();
    assert_eq!(
        invoke(&f.window, "list_history", json!({})).unwrap(),
        json!([])
    );
    let first = call(&f, "read_file", r#"{"path":"notes.txt"}"#);
    let second = call(&f, "read_file", "{not json");
    assert_eq!(first["status"], json!("ok"), "{first}");
    assert_eq!(second["status"], json!("error"), "{second}");

    let rows = invoke(&f.window, "list_history", json!({})).unwrap();
    assert_eq!(
        ids(&rows),
        vec![
            second["tool_call_id"].as_str().unwrap().to_string(),
            first["tool_call_id"].as_str().unwrap().to_string()
        ]
    );
    assert_eq!(rows[0]["status"], json!("error"));
    assert_eq!(rows[0]["stage"], json!("Parameters"), "{rows}");
    assert_eq!(rows[1]["tool"], json!("read_file"));
    assert_eq!(rows[1]["status"], json!("ok"));
    assert!(rows[1]["duration_ms"].as_i64().is_some(), "{rows}");
    assert!(rows[1]["started_at"].as_str().unwrap().contains('T'));

    let limited = invoke(&f.window, "list_history", json!({ "limit": 1 })).unwrap();
    assert_eq!(
        ids(&limited),
        vec![second["tool_call_id"].as_str().unwrap().to_string()]
    );
    let ok_only = invoke(&f.window, "list_history", json!({ "status": "ok" })).unwrap();
    assert_eq!(
        ids(&ok_only),
        vec![first["tool_call_id"].as_str().unwrap().to_string()]
    );
}

#[test]
fn list_history_searches_the_full_text_index() {
    let f = fixture();
    let notes = call(&f, "read_file", r#"{"path":"notes.txt"}"#);
    call(&f, "read_file", r#"{"path":"long.txt"}"#);
    let found = invoke(&f.window, "list_history", json!({ "search": "notes" })).unwrap();
    assert_eq!(
        ids(&found),
        vec![notes["tool_call_id"].as_str().unwrap().to_string()]
    );
    let none = invoke(&f.window, "list_history", json!({ "search": "nosuchword" })).unwrap();
    assert_eq!(none, json!([]));
}

#[test]
fn an_unknown_status_is_a_typed_error() {
    let f = fixture();
    let error = invoke(&f.window, "list_history", json!({ "status": "bogus" })).unwrap_err();
    assert_eq!(error["code"], json!("project"), "{error}");
    assert!(error["message"].as_str().unwrap().contains("bogus"));
}

#[test]
fn show_call_returns_input_model_text_and_a_bounded_raw_slice() {
    let f = fixture();
    let result = call(&f, "read_file", r#"{"path":"long.txt"}"#);
    let id = result["tool_call_id"].as_str().unwrap();

    let detail = invoke(
        &f.window,
        "show_call",
        json!({ "toolCallId": id, "limit": 100 }),
    )
    .unwrap();
    assert_eq!(detail["entry"]["tool"], json!("read_file"));
    assert_eq!(detail["entry"]["status"], json!("ok"));
    assert_eq!(detail["input"], json!({ "path": "long.txt" }));
    assert_eq!(detail["model"], result["model"]);
    let total = detail["raw_total_bytes"].as_u64().unwrap();
    assert!(total > 100, "{detail}");
    assert!(detail["raw_text"].as_str().unwrap().len() <= 100);
    assert_eq!(detail["raw_offset"], json!(0));
    let next = detail["raw_next_offset"].as_u64().unwrap();

    let rest = invoke(
        &f.window,
        "show_call",
        json!({ "toolCallId": id, "offset": next, "limit": 1_000_000 }),
    )
    .unwrap();
    assert_eq!(rest["raw_offset"], json!(next));
    assert!(
        rest["raw_text"]
            .as_str()
            .unwrap()
            .contains("line number 399"),
        "{rest}"
    );
}

#[test]
fn show_call_of_an_unknown_id_is_a_typed_error() {
    let f = fixture();
    let error = invoke(&f.window, "show_call", json!({ "toolCallId": "call_nope" })).unwrap_err();
    assert_eq!(error["code"], json!("project"), "{error}");
    assert!(error["message"].as_str().unwrap().contains("call_nope"));
}
