//! The history browser through tauri's mock runtime against a real SQLite store: keyset paging over
//! 10,000 calls via `history_page`, filters and full-text search, `history_facets`, `call_record`,
//! and a large binary raw output recovered byte-exact by `raw_output_range` and saved whole; and
//! the history scoped to the open project (two projects, one data dir, switched from the window).

use crate::support;

use std::collections::HashSet;

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::ShellState;
use aibuddy_store::{
    CallFinish, CallStart, CallStatus, RawFormat, Store, open_connection, rusqlite::params,
};
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

const CALLS: i64 = 10_000;
const BASE_MS: i64 = 1_700_000_000_000;

struct Fixture {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    raw: Vec<u8>,
    _project: tempfile::TempDir,
    data: tempfile::TempDir,
}

/// 300 KiB that is not UTF-8 (every byte value, repeated), so it is stored as a blob file.
fn binary_output() -> Vec<u8> {
    (0..300 * 1024).map(|i: u32| (i * 7 % 256) as u8).collect()
}

/// A data dir holding `CALLS` seeded calls plus one real call (through the store's own writer)
/// with a large binary raw output, then the app opened on it.
fn fixture() -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let raw = binary_output();
    {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let store = Store::open(data.path()).unwrap();
        rt.block_on(async {
            store
                .begin_call(CallStart {
                    tool_call_id: "big_call".into(),
                    run_id: "run_big".into(),
                    project_root: None,
                    tool: "execute".into(),
                    config: "execute".into(),
                    input: r#"{"command":"cat big.bin"}"#.into(),
                    started_at_ms: Some(BASE_MS + CALLS + 10),
                })
                .await
                .unwrap();
            store
                .finish_call(CallFinish {
                    tool_call_id: "big_call".into(),
                    status: CallStatus::Ok,
                    stage: None,
                    error_code: None,
                    error_message: None,
                    raw_output: raw.clone(),
                    raw_output_file: None,
                    raw_format: RawFormat::Bytes,
                    output_json: None,
                    model_projection: Some("exit 0 (output cut)".into()),
                    client_projection: Some(json!({"exit_code": 0, "cut": true})),
                    display_text: Some("cat big.bin".into()),
                    finished_at_ms: None,
                })
                .await
                .unwrap();
        });
        drop(store);
        let mut conn = open_connection(data.path()).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute(
            "INSERT INTO runs (run_id, title, started_at) VALUES ('run_a', 'a', 1), ('run_b', 'b', 2)",
            [],
        )
        .unwrap();
        {
            let mut ins = tx
                .prepare(
                    "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, stage, \
                     started_at, input, model_projection) VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .unwrap();
            for i in 0..CALLS {
                let (status, stage) = if i % 9 == 0 {
                    ("interrupted", None)
                } else if i % 5 == 0 {
                    ("error", Some("Execution"))
                } else {
                    ("ok", None)
                };
                ins.execute(params![
                    format!("h{i:05}"),
                    if i % 2 == 0 { "run_a" } else { "run_b" },
                    if i % 3 == 0 { "execute" } else { "read" },
                    status,
                    stage,
                    BASE_MS + i,
                    format!("{{\"path\":\"src/file{i}.rs\"}}"),
                    if i == 1234 {
                        "needle-in-model-text"
                    } else {
                        "fine"
                    },
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let core = tauri::async_runtime::block_on(App::open(AppOptions {
        project: project.path().to_path_buf(),
        data_dir: data.path().to_path_buf(),
    }))
    .unwrap();
    let app = aibuddy_desktop::wire(mock_builder(), ShellState::new(core))
        .build(aibuddy_desktop::context())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Fixture {
        _app: app,
        window,
        raw,
        _project: project,
        data,
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

fn ids(page: &Value) -> Vec<String> {
    page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap().to_string())
        .collect()
}

/// Every page of `query`, following `next` to the end.
fn walk(f: &Fixture, mut query: Value) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let page = invoke(&f.window, "history_page", json!({ "query": query })).unwrap();
        out.extend(ids(&page));
        match page["next"].as_str() {
            Some(next) => query["cursor"] = json!(next),
            None => return out,
        }
    }
}

#[test]
fn keyset_paging_reaches_the_oldest_of_10000_calls_and_filters_narrow() {
    let f = fixture();
    let all = walk(&f, json!({ "limit": 1000 }));
    assert_eq!(all.len(), CALLS as usize + 1);
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), all.len());
    assert_eq!(all[0], "big_call", "newest first");
    assert_eq!(all[1], "h09999");
    assert_eq!(all.last().unwrap(), "h00000");

    let first = invoke(
        &f.window,
        "history_page",
        json!({ "query": { "limit": 3 } }),
    )
    .unwrap();
    let row = &first["rows"][1];
    assert_eq!(row["tool"], json!("execute"), "{row}");
    assert_eq!(row["target"], json!("src/file9999.rs"));
    assert_eq!(row["status"], json!("interrupted"));

    // Status (interrupted included), stage, tool, run and time range combine.
    let got = walk(
        &f,
        json!({
            "statuses": ["error"], "stages": ["Execution"], "tools": ["read"], "run_id": "run_b",
            "since_ms": BASE_MS + 100, "until_ms": BASE_MS + 200, "limit": 2
        }),
    );
    let want: Vec<String> = (100..200)
        .rev()
        .filter(|i| i % 9 != 0 && i % 5 == 0 && i % 3 != 0 && i % 2 == 1)
        .map(|i| format!("h{i:05}"))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    let interrupted = walk(&f, json!({ "statuses": ["interrupted"], "limit": 1000 }));
    assert_eq!(interrupted.len(), (0..CALLS).filter(|i| i % 9 == 0).count());

    // Full text reaches the model's text and the input.
    let hit = walk(&f, json!({ "search": "needle" }));
    assert_eq!(hit, vec!["h01234".to_string()]);
    let hit = walk(&f, json!({ "search": "file4321" }));
    assert_eq!(hit, vec!["h04321".to_string()]);

    // Bad arguments are typed errors, not empty pages.
    let err = invoke(
        &f.window,
        "history_page",
        json!({ "query": { "cursor": "zz" } }),
    )
    .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");
    let err = invoke(
        &f.window,
        "history_page",
        json!({ "query": { "statuses": ["bogus"] } }),
    )
    .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");
    // A misspelt field is refused rather than silently ignored.
    assert!(
        invoke(
            &f.window,
            "history_page",
            json!({ "query": { "sinceMS": 1 } })
        )
        .is_err()
    );

    let facets = invoke(&f.window, "history_facets", json!({})).unwrap();
    assert_eq!(facets["tools"], json!(["execute", "read"]));
    assert_eq!(facets["runs"][0], json!("run_big"));
    assert!(
        facets["statuses"]
            .as_array()
            .unwrap()
            .contains(&json!("interrupted"))
    );
}

#[test]
fn raw_output_ranges_are_byte_exact_and_a_save_writes_it_whole() {
    let f = fixture();
    let rec = invoke(
        &f.window,
        "call_record",
        json!({ "toolCallId": "big_call" }),
    )
    .unwrap();
    assert_eq!(rec["raw_total_bytes"], json!(f.raw.len()), "{rec}");
    assert_eq!(rec["raw_format"], json!("bytes"));
    assert_eq!(rec["model"], json!("exit 0 (output cut)"));
    assert_eq!(rec["client"]["exit_code"], json!(0));
    assert_eq!(rec["item"]["compaction_state"], json!("none"));

    // Paged in odd-sized ranges that split bytes anywhere: the concatenation is the output.
    let mut got = Vec::new();
    let mut offset = 0u64;
    while offset < f.raw.len() as u64 {
        let part = invoke_bytes(
            &f.window,
            "raw_output_range",
            json!({ "toolCallId": "big_call", "offset": offset, "length": 77_777 }),
        );
        assert!(!part.is_empty());
        offset += part.len() as u64;
        got.extend(part);
    }
    assert!(got == f.raw, "ranges differ from the stored output");
    // Past the end: nothing. A range is capped at 1 MiB.
    let past = invoke_bytes(
        &f.window,
        "raw_output_range",
        json!({ "toolCallId": "big_call", "offset": offset + 5, "length": 10 }),
    );
    assert!(past.is_empty());
    let err = invoke(
        &f.window,
        "raw_output_range",
        json!({ "toolCallId": "nope", "offset": 0, "length": 10 }),
    )
    .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");

    // Saving copies it whole (the dialog is the person's; the copy is tested directly).
    let dest = f.data.path().join("saved.out");
    let store = Store::open(f.data.path()).unwrap();
    let written = tauri::async_runtime::block_on(aibuddy_desktop::raw_output::save_to(
        &store, "big_call", &dest,
    ))
    .unwrap();
    assert_eq!(written, f.raw.len() as u64);
    assert!(std::fs::read(&dest).unwrap() == f.raw);
}

/// The store is shared by every project opened with the data dir: the browser shows the open
/// project's calls only, a call of another project is "no such call", and a switch re-scopes.
#[test]
fn the_history_follows_the_open_project() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (a, b, data) = (base.join("a"), base.join("b"), base.join("data"));
    for d in [&a, &b, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(a.join("only-in-a.txt"), "alpha\n").unwrap();
    std::fs::write(b.join("only-in-b.txt"), "beta\n").unwrap();
    let read = |w: &support::Window, path: &str| -> String {
        let args = json!({ "path": path }).to_string();
        let done = w
            .invoke(
                "call_tool",
                json!({"tool": "read_file", "arguments": args, "onEvent": "__CHANNEL__:7"}),
            )
            .unwrap();
        assert_eq!(done["status"], json!("ok"), "{done}");
        done["tool_call_id"].as_str().unwrap().to_string()
    };
    let page = |w: &support::Window| -> Vec<String> {
        ids(&w
            .invoke("history_page", json!({ "query": { "limit": 50 } }))
            .unwrap())
    };

    let w = support::open(&a, &data);
    let in_a = read(&w, "only-in-a.txt");
    assert_eq!(page(&w), vec![in_a.clone()]);

    support::seed_recent(&data, &[&b]);
    w.invoke("open_recent", json!({"path": b.display().to_string()}))
        .unwrap();
    assert!(page(&w).is_empty(), "B sees none of A's calls");
    let facets = w.invoke("history_facets", json!({})).unwrap();
    assert_eq!(facets["tools"], json!([]), "{facets}");
    let err = w
        .invoke("call_record", json!({ "toolCallId": in_a }))
        .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");

    let in_b = read(&w, "only-in-b.txt");
    assert_eq!(page(&w), vec![in_b.clone()]);
    let rec = w
        .invoke("call_record", json!({ "toolCallId": in_b }))
        .unwrap();
    assert_eq!(rec["item"]["tool"], json!("read_file"));

    support::seed_recent(&data, &[&a]);
    w.invoke("open_recent", json!({"path": a.display().to_string()}))
        .unwrap();
    assert_eq!(page(&w), vec![in_a]);
    let facets = w.invoke("history_facets", json!({})).unwrap();
    assert_eq!(facets["tools"], json!(["read_file"]), "{facets}");
}

/// The History tab stays current by probing `history_head`: calls stored after the page's `head`
/// (by this window, or by another process writing the same data dir, here a second store on it as
/// `aibuddy call` opens one) are counted within the filters and the open project, never another
/// project's; a watched running call comes back finished, with its duration.
#[test]
fn the_head_probe_counts_calls_stored_meanwhile_and_follows_running_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (a, b, data) = (base.join("a"), base.join("b"), base.join("data"));
    for d in [&a, &b, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(a.join("notes.txt"), "alpha\n").unwrap();
    let w = support::open(&a, &data);
    let read = || -> String {
        let done = w
            .invoke(
                "call_tool",
                json!({"tool": "read_file", "arguments": json!({"path": "notes.txt"}).to_string(), "onEvent": "__CHANNEL__:7"}),
            )
            .unwrap();
        assert_eq!(done["status"], json!("ok"), "{done}");
        done["tool_call_id"].as_str().unwrap().to_string()
    };
    let probe = |query: Value, since: &Value, watch: &[&str]| -> Value {
        w.invoke(
            "history_head",
            json!({ "query": query, "since": since, "watch": watch }),
        )
        .unwrap()
    };
    let first = read();
    let page = w
        .invoke("history_page", json!({ "query": { "limit": 50 } }))
        .unwrap();
    assert_eq!(ids(&page), vec![first.clone()]);
    let head = page["head"].clone();
    assert!(head.is_string(), "{page}");
    assert_eq!(probe(json!({}), &head, &[])["newer"], json!(0));

    // A call made from this window while the tab is open.
    let second = read();
    assert_eq!(probe(json!({}), &head, &[])["newer"], json!(1));

    // Another writer of the same data dir: a running call in A, one in B.
    let other = Store::open(&data).unwrap();
    let start = |id: &str, root: &std::path::Path| CallStart {
        tool_call_id: id.into(),
        run_id: format!("cli_{id}"),
        project_root: Some(root.display().to_string()),
        tool: "execute".into(),
        config: "execute".into(),
        input: r#"{"command":"cargo test"}"#.into(),
        started_at_ms: None,
    };
    tauri::async_runtime::block_on(async {
        other.begin_call(start("cli_a", &a)).await.unwrap();
        other.begin_call(start("cli_b", &b)).await.unwrap();
    });
    let h = probe(json!({}), &head, &["cli_a", "cli_b", "nope"]);
    assert_eq!(h["newer"], json!(2), "A's two new calls, not B's: {h}");
    assert_eq!(h["rows"].as_array().unwrap().len(), 1, "{h}");
    assert_eq!(h["rows"][0]["tool_call_id"], json!("cli_a"));
    assert_eq!(h["rows"][0]["status"], json!("running"));
    assert_eq!(h["rows"][0]["duration_ms"], json!(null));
    assert_eq!(h["rows"][0]["target"], json!("cargo test"));
    // Filters apply: only one of them is `read_file`, and a search narrows too.
    assert_eq!(
        probe(json!({ "tools": ["read_file"] }), &head, &[])["newer"],
        json!(1)
    );
    assert_eq!(
        probe(json!({ "search": "cargo" }), &head, &[])["newer"],
        json!(1)
    );

    // It finishes: the watched row says so, with its duration.
    tauri::async_runtime::block_on(async {
        other
            .finish_call(CallFinish {
                tool_call_id: "cli_a".into(),
                status: CallStatus::Error,
                stage: Some(aibuddy::contract::Stage::Execution),
                error_code: Some("exit_status".into()),
                error_message: Some("exit status 101".into()),
                raw_output: b"test failed\n".to_vec(),
                raw_output_file: None,
                raw_format: RawFormat::Text,
                output_json: None,
                model_projection: Some("exit 101".into()),
                client_projection: None,
                display_text: None,
                finished_at_ms: None,
            })
            .await
            .unwrap();
    });
    let h = probe(json!({}), &head, &["cli_a"]);
    assert_eq!(h["rows"][0]["status"], json!("error"), "{h}");
    assert_eq!(h["rows"][0]["stage"], json!("Execution"));
    assert!(h["rows"][0]["duration_ms"].is_number(), "{h}");

    // The list takes the new first page: nothing newer than its head; without a head every
    // matching call counts.
    let page = w
        .invoke("history_page", json!({ "query": { "limit": 50 } }))
        .unwrap();
    assert_eq!(ids(&page), vec!["cli_a".to_string(), second, first]);
    assert_eq!(probe(json!({}), &page["head"], &[])["newer"], json!(0));
    assert_eq!(probe(json!({}), &Value::Null, &[])["newer"], json!(3));
    // Bad arguments are typed errors.
    let err = w
        .invoke("history_head", json!({ "since": "zz" }))
        .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");
    let err = w
        .invoke(
            "history_head",
            json!({ "query": { "statuses": ["bogus"] } }),
        )
        .unwrap_err();
    assert_eq!(err["code"], json!("project"), "{err}");
}

/// A card's images come from the store by call id: `read_file` of a PNG through the window
/// stores the bounded image in the call's client projection, and `call_images` hands it back as
/// a `data:` URL of the image type; a text read has none, and an unknown call is refused.
#[test]
fn call_images_gives_a_read_image_as_a_data_url() {
    use base64::Engine;
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    image::RgbImage::from_pixel(3, 2, image::Rgb([1, 2, 3]))
        .save(project.join("dot.png"))
        .unwrap();
    std::fs::write(project.join("a.txt"), "alpha\n").unwrap();
    let w = support::open(&project, &data);
    let read = |path: &str| -> String {
        let args = json!({ "path": path }).to_string();
        let done = w
            .invoke(
                "call_tool",
                json!({"tool": "read_file", "arguments": args, "onEvent": "__CHANNEL__:7"}),
            )
            .unwrap();
        assert_eq!(done["status"], json!("ok"), "{done}");
        done["tool_call_id"].as_str().unwrap().to_string()
    };
    let png = read("dot.png");
    let images = w
        .invoke("call_images", json!({ "toolCallId": png }))
        .unwrap();
    let bytes = std::fs::read(project.join("dot.png")).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    assert_eq!(
        images,
        json!([{"media_type": "image/png", "width": 3, "height": 2,
            "data_url": format!("data:image/png;base64,{b64}")}])
    );
    let text = read("a.txt");
    assert_eq!(
        w.invoke("call_images", json!({ "toolCallId": text }))
            .unwrap(),
        json!([])
    );
    assert!(
        w.invoke("call_images", json!({ "toolCallId": "nope" }))
            .is_err()
    );
}

/// Where a stored command ran reaches the window by one rule (the core's `call_sandbox` over the
/// stored client projection's `confinement_detail`): a reopened run's result (`show_run`) and the
/// History row (`history_page`) and detail (`call_record`) of a command that ran in a container
/// name it; a local command's and another tool's (an MCP tool claiming a container in its own
/// projection) name none.
#[test]
fn a_container_command_is_named_in_a_reopened_run_and_marked_in_history() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let container = json!({"kind": "container", "engine": "unix:///run/podman/podman.sock",
        "image": "debian:12", "container": "0123456789ab", "network_isolated": true});
    let local = json!({"kind": "namespaces", "landlock_abi": 7, "network_isolated": true});
    let client = |detail: &Value| json!({"exit_code": 0, "confinement_detail": detail});
    let calls = [
        ("c_box", "execute", client(&container)),
        ("c_local", "execute", client(&local)),
        ("c_mcp", "mcp__evil__run", client(&container)),
    ];
    let run_id = support::stored_run(&project, &data, "in a container", &calls);
    let w = support::open(&project, &data);
    let want =
        json!("container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock");
    let by_id = |rows: &Value, key: &str| -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let r = if key.is_empty() { r } else { &r[key] };
                (
                    r["tool_call_id"].as_str().unwrap().to_string(),
                    r["sandbox"].clone(),
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    };
    let expected = vec![
        ("c_box".to_string(), want.clone()),
        ("c_local".to_string(), Value::Null),
        ("c_mcp".to_string(), Value::Null),
    ];
    let page = w.invoke("history_page", json!({})).unwrap();
    assert_eq!(by_id(&page["rows"], ""), expected, "{page}");
    let shown = w.invoke("show_run", json!({ "runId": run_id })).unwrap();
    let results: Vec<Value> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    assert_eq!(by_id(&Value::from(results), "result"), expected, "{shown}");
    let rec = w
        .invoke("call_record", json!({ "toolCallId": "c_box" }))
        .unwrap();
    assert_eq!((&rec["sandbox"], &rec["item"]["sandbox"]), (&want, &want));
}
