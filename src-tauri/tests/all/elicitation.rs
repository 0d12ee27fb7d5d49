//! MCP elicitation forms answered from the window, through tauri's mock runtime: a run (fake
//! provider on 127.0.0.1) calls the real `server-everything`'s `trigger-elicitation-request`; the
//! form reaches the window as an `elicitation` run event, and the window's answer, sent with the
//! existing `answer_ask_user {id: elicitation_id, answer}` command, reaches the server as the MCP
//! spec's accept (with the content), decline or cancel: the server's own result text says which.
//! The run's `usage` events (the context meter) reach the window too.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy_desktop::RUN_EVENT;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};
use tauri::Listener;

const KIND: ProviderKind = ProviderKind::OpenAiChat;
const TOOL: &str = "mcp__everything__trigger-elicitation-request";

struct Fixture {
    w: support::Window,
    server: FakeServer,
    events: Arc<Mutex<Vec<Value>>>,
    _dir: tempfile::TempDir,
}

fn everything_bin() -> std::path::PathBuf {
    let memory = support::memory_server();
    let bin = memory.with_file_name("mcp-server-everything");
    assert!(
        bin.exists(),
        "server-everything is not installed beside {memory:?}"
    );
    bin
}

/// A project whose person (user level) runs `server-everything` and names the fake provider.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let server = tauri::async_runtime::block_on(FakeServer::start()).unwrap();
    let settings = json!({"providers": {
        "default": "local",
        "local": {"kind": "openai-chat", "base_url": server.base_url(KIND), "model": "qwen3:8b"}
    }});
    std::fs::write(data.join("settings.json"), settings.to_string()).unwrap();
    let mcp = json!({"mcpServers": {"everything": {
        "command": everything_bin(), "args": ["stdio"], "timeouts": {"connect": 90}
    }}});
    std::fs::write(data.join("mcp.json"), mcp.to_string()).unwrap();
    let w = support::open(&root, &data);
    let events: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = events.clone();
    w.app.listen_any(RUN_EVENT, move |event| {
        seen.lock()
            .unwrap()
            .push(serde_json::from_str(event.payload()).unwrap());
    });
    Fixture {
        w,
        server,
        events,
        _dir: dir,
    }
}

impl Fixture {
    fn events_of(&self, run_id: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["run_id"] == json!(run_id))
            .map(|e| e["event"].clone())
            .collect()
    }

    /// Waits for an event of `run_id` with `type`, among those after the first `skip`.
    fn wait_event(&self, run_id: &str, kind: &str, skip: usize) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(e) = self
                .events_of(run_id)
                .into_iter()
                .skip(skip)
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

    /// Waits until the server is connected and its elicitation tool listed.
    fn wait_tool(&self) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let tools = self.w.invoke("list_tools", json!({})).unwrap();
            if tools
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == json!(TOOL))
            {
                return;
            }
            assert!(Instant::now() < deadline, "{TOOL} never listed: {tools}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One run (or, with `run`, a continuation of it: the fake provider serves one
    /// conversation) that finds and calls the elicitation tool; `answer` answers its form.
    /// Returns the run id, the form's event, the call's result event and the `usage` events.
    fn run_answering(&self, run: Option<&str>, call: &str, answer: Value) -> Answered {
        self.server.push(
            Turn::text("Finding it.")
                .call(
                    &format!("{call}_s"),
                    "tool_search",
                    json!({"query": format!("select:{TOOL}")}),
                )
                .reply(KIND),
        );
        self.server.push(
            Turn::text("Asking.")
                .call(call, TOOL, json!({}))
                .reply(KIND),
        );
        self.server.push(Turn::text("Done.").reply(KIND));
        let (run_id, skip) = match run {
            None => {
                let started = self
                    .w
                    .invoke("start_run", json!({ "prompt": "sign me up" }))
                    .unwrap();
                (started["run_id"].as_str().unwrap().to_string(), 0)
            }
            Some(id) => {
                let skip = self.events_of(id).len();
                self.w
                    .invoke("continue_run", json!({ "runId": id, "prompt": "again" }))
                    .unwrap();
                (id.to_string(), skip)
            }
        };
        // Calling an external MCP tool needs the person's approval first.
        let confirm = self.wait_event(&run_id, "confirm_request", skip);
        let approved = self
            .w
            .invoke(
                "answer_confirm",
                json!({ "callId": confirm["request"]["call_id"], "approve": true }),
            )
            .unwrap();
        assert_eq!(approved, json!(true), "{confirm}");
        let form = self.wait_event(&run_id, "elicitation", skip);
        let id = form["elicitation_id"].as_str().unwrap();
        let accepted = self
            .w
            .invoke("answer_ask_user", json!({ "id": id, "answer": answer }))
            .unwrap();
        assert_eq!(accepted, json!(true), "{form}");
        let finished = self.wait_event(&run_id, "run_finished", skip);
        assert_eq!(finished["status"], json!("completed"), "{finished}");
        let events: Vec<Value> = self.events_of(&run_id).into_iter().skip(skip).collect();
        let result = events
            .iter()
            .find(|e| {
                e["type"] == json!("tool_result")
                    && e["tool_call_id"]
                        .as_str()
                        .is_some_and(|c| c.ends_with(&format!(":{call}")))
            })
            .unwrap_or_else(|| panic!("no result for {call}: {events:?}"))
            .clone();
        let usage = events
            .iter()
            .filter(|e| e["type"] == json!("usage"))
            .cloned()
            .collect();
        Answered {
            run_id,
            form,
            result,
            usage,
        }
    }
}

struct Answered {
    run_id: String,
    form: Value,
    result: Value,
    usage: Vec<Value>,
}

#[test]
fn the_windows_answers_reach_the_mcp_server_as_accept_decline_and_cancel() {
    let f = fixture();
    f.wait_tool();

    // Accept: the content the form sent is what the server received.
    let content =
        json!({"name": "Ada Lovelace", "check": true, "email": "ada@example.org", "integer": 7});
    let a = f.run_answering(None, "call_e1", json!({"kind": "form", "content": content}));
    assert_eq!(a.form["server"], json!("everything"), "{}", a.form);
    assert_eq!(a.form["schema"]["type"], json!("object"), "{}", a.form);
    assert!(
        a.form["schema"]["properties"]["name"].is_object(),
        "{}",
        a.form
    );
    assert_eq!(a.result["status"], json!("ok"), "{}", a.result);
    let model = a.result["model"].as_str().unwrap();
    for said in [
        "User provided the requested information",
        "Name: Ada Lovelace",
        "Agreed to terms: true",
        "Email: ada@example.org",
        "Favorite Integer: 7",
        "accept",
    ] {
        assert!(model.contains(said), "{said:?} not in {model}");
    }
    // The context meter's events reach the window: one per step; qwen3:8b is not in the window
    // table and no setting names its window.
    assert_eq!(a.usage.len(), 3, "{:?}", a.usage);
    assert_eq!(a.usage[0]["context_tokens"], json!(30), "{:?}", a.usage);
    assert_eq!(a.usage[0]["window_known"], json!(false), "{:?}", a.usage);
    assert_eq!(a.usage[0]["window_tokens"], json!(32_768), "{:?}", a.usage);

    // Decline and cancel, as the spec defines them (the same run continued). A continued run
    // first reports its last step's usage, before anything streams.
    let d = f.run_answering(Some(&a.run_id), "call_e2", json!({"kind": "declined"}));
    let text = d.result["model"].as_str().unwrap();
    assert!(text.contains("User declined"), "{text}");
    assert_eq!(d.usage.len(), 4, "{:?}", d.usage);
    let c = f.run_answering(Some(&a.run_id), "call_e3", json!({"kind": "cancelled"}));
    let text = c.result["model"].as_str().unwrap();
    assert!(text.contains("User cancelled"), "{text}");
    f.server.assert_clean();
}
