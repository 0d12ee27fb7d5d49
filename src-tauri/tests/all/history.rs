//! Call history through tauri's mock runtime: a real `call_tool` on a temporary project is recorded
//! in the core's SQLite store, then the History tab's commands read it back (`history_page`: newest
//! first, full-text search, status filter; `call_record` and `raw_output_range`: input, model text
//! and byte ranges of the raw output). The older unscoped `list_history` / `show_call` are gone.

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::ShellState;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
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

fn request(cmd: &str, body: Value) -> InvokeRequest {
    InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    }
}

fn invoke(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    get_ipc_response(window, request(cmd, body)).map(|b| b.deserialize::<Value>().unwrap())
}

fn invoke_bytes(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Vec<u8> {
    match get_ipc_response(window, request(cmd, body)).unwrap() {
        InvokeResponseBody::Raw(bytes) => bytes,
        InvokeResponseBody::Json(json) => panic!("expected raw bytes, got JSON {json}"),
    }
}

fn call(f: &Fixture, tool: &str, arguments: &str) -> Value {
    invoke(
        &f.window,
        "call_tool",
        json!({ "tool": tool, "arguments": arguments, "onEvent": "__CHANNEL__:7" }),
    )
    .unwrap()
}

fn ids(page: &Value) -> Vec<String> {
    page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap().to_string())
        .collect()
}

fn page(f: &Fixture, query: Value) -> Value {
    invoke(&f.window, "history_page", json!({ "query": query })).unwrap()
}

fn id_of(result: &Value) -> String {
    result["tool_call_id"].as_str().unwrap().to_string()
}

#[test]
fn calls_of_the_window_are_paged_newest_first_and_filtered() {
    let f = fixture();
    assert_eq!(ids(&page(&f, json!({}))), Vec::<String>::new());
    let first = call(&f, "read_file", r#"{"path":"notes.txt"}"#);
    let second = call(&f, "read_file", "{not json");
    assert_eq!(first["status"], json!("ok"), "{first}");
    assert_eq!(second["status"], json!("error"), "{second}");

    let rows = page(&f, json!({}));
    assert_eq!(ids(&rows), vec![id_of(&second), id_of(&first)]);
    assert_eq!(rows["rows"][0]["status"], json!("error"));
    assert_eq!(rows["rows"][0]["stage"], json!("Parameters"), "{rows}");
    assert_eq!(rows["rows"][1]["tool"], json!("read_file"));
    assert_eq!(rows["rows"][1]["status"], json!("ok"));
    assert!(rows["rows"][1]["duration_ms"].as_i64().is_some(), "{rows}");
    assert!(
        rows["rows"][1]["started_at"]
            .as_str()
            .unwrap()
            .contains('T')
    );

    let limited = page(&f, json!({ "limit": 1 }));
    assert_eq!(ids(&limited), vec![id_of(&second)]);
    let ok_only = page(&f, json!({ "statuses": ["ok"] }));
    assert_eq!(ids(&ok_only), vec![id_of(&first)]);
}

#[test]
fn the_history_page_searches_the_full_text_index() {
    let f = fixture();
    let notes = call(&f, "read_file", r#"{"path":"notes.txt"}"#);
    call(&f, "read_file", r#"{"path":"long.txt"}"#);
    assert_eq!(
        ids(&page(&f, json!({ "search": "notes" }))),
        vec![id_of(&notes)]
    );
    assert_eq!(
        ids(&page(&f, json!({ "search": "nosuchword" }))),
        Vec::<String>::new()
    );
}

#[test]
fn a_call_record_carries_input_model_text_and_its_raw_output_by_range() {
    let f = fixture();
    let result = call(&f, "read_file", r#"{"path":"long.txt"}"#);
    let id = id_of(&result);

    let detail = invoke(&f.window, "call_record", json!({ "toolCallId": id })).unwrap();
    assert_eq!(detail["item"]["tool"], json!("read_file"));
    assert_eq!(detail["item"]["status"], json!("ok"));
    assert_eq!(detail["input"], json!({ "path": "long.txt" }));
    assert_eq!(detail["model"], result["model"]);
    let total = detail["raw_total_bytes"].as_u64().unwrap();
    assert!(total > 100, "{detail}");

    let head = invoke_bytes(
        &f.window,
        "raw_output_range",
        json!({ "toolCallId": id, "offset": 0, "length": 100 }),
    );
    assert_eq!(head.len(), 100);
    let rest = invoke_bytes(
        &f.window,
        "raw_output_range",
        json!({ "toolCallId": id, "offset": 100, "length": total }),
    );
    assert_eq!(head.len() + rest.len(), total as usize);
    assert!(
        String::from_utf8_lossy(&rest).contains("line number 399"),
        "{}",
        String::from_utf8_lossy(&rest)
    );
}

#[test]
fn a_call_record_of_an_unknown_id_is_a_typed_error() {
    let f = fixture();
    let error = invoke(
        &f.window,
        "call_record",
        json!({ "toolCallId": "call_nope" }),
    )
    .unwrap_err();
    assert_eq!(error["code"], json!("project"), "{error}");
    assert!(error["message"].as_str().unwrap().contains("call_nope"));
}

/// `list_history` and `show_call` listed and showed calls of every project of the data directory;
/// the UI never called them. They are neither registered nor granted any more.
#[test]
fn the_unscoped_history_commands_are_not_commands() {
    let f = fixture();
    call(&f, "read_file", r#"{"path":"notes.txt"}"#);
    for (cmd, body) in [
        ("list_history", json!({})),
        ("show_call", json!({ "toolCallId": "call_nope" })),
    ] {
        let error = invoke(&f.window, cmd, body).unwrap_err();
        assert!(
            error.to_string().contains("not found") || error.to_string().contains(cmd),
            "{cmd}: {error}"
        );
        assert!(
            !aibuddy_desktop::COMMANDS.contains(&cmd),
            "{cmd} is still a command"
        );
    }
}
