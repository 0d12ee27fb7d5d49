//! Deferred tools reachable from the very first request (issue 25): `aibuddy run` opens without
//! waiting for MCP servers, and while the 7 real servers (`make test` installs them) are still
//! starting, the first request already offers `tool_search`; the search waits for the servers,
//! finds `get_current_time`, the model calls it and answers. On the three routes and both
//! presentations: Anthropic Messages and OpenAI Responses native (`tool_reference`,
//! `tool_search_output`), Chat Completions activeTools (activations). The servers are made slow to
//! start by a wrapper that sleeps, then execs the real server; the fake provider checks the
//! protocol of every request (a referenced tool must be in the request's tools).

use crate::support;

use support::cli_run::{self, CliRun};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{RecordedRequest, Turn};
use serde_json::{Value, json};

/// How long each server's wrapper sleeps before it execs the real server.
const SLOW_START_SECS: u32 = 5;

fn installed() -> PathBuf {
    crate::support::mcp_tools_dir()
}

/// A wrapper script that sleeps, then execs `command` with its arguments.
fn slow(dir: &Path, name: &str, command: &Path) -> PathBuf {
    let wrapper = dir.join(format!("slow-{name}.sh"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nsleep {SLOW_START_SECS}\nexec '{}' \"$@\"\n",
            command.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// The 7 real servers of `discovery_real_servers` (77 tools: every one deferred once connected),
/// each started through a slow wrapper.
fn slow_real_servers(t: &Path, tmp: &Path) -> Value {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(&repo)
            .status()
            .unwrap()
            .success()
    );
    let node = |b: &str| slow(tmp, b, &t.join("node/node_modules/.bin").join(b));
    let venv = |b: &str| slow(tmp, b, &t.join("venv/bin").join(b));
    let mut config = json!({"mcpServers": {
        "everything": {"command": node("mcp-server-everything"), "args": ["stdio"]},
        "filesystem": {"command": node("mcp-server-filesystem"), "args": [tmp]},
        "memory": {"command": node("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": tmp.join("memory.jsonl")}},
        "github": {"command": node("mcp-server-github")},
        "time": {"command": venv("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": venv("mcp-server-git"), "args": ["--repository", repo]},
        "fetch": {"command": venv("mcp-server-fetch")}
    }});
    for server in config["mcpServers"].as_object_mut().unwrap().values_mut() {
        server["timeouts"] = json!({"connect": 120});
    }
    config
}

struct Fx {
    run: CliRun,
}

impl std::ops::Deref for Fx {
    type Target = CliRun;
    fn deref(&self) -> &CliRun {
        &self.run
    }
}

async fn fx(kind: ProviderKind) -> Fx {
    let t = installed();
    let run = CliRun::start(kind).await;
    let providers = cli_run::with_native_search(cli_run::providers(kind, &run.server));
    // The search may wait long on a loaded machine: 7 servers import at once.
    run.user_settings(json!({"providers": providers, "tool_search": {"connect_wait_ms": 120_000}}));
    std::fs::write(
        run.data.join("mcp.json"),
        slow_real_servers(&t, &run.base).to_string(),
    )
    .unwrap();
    Fx { run }
}

/// The tool names of a request's `tools` array, with whether each is deferred (`tool_search` in
/// its Responses form is named `tool_search`).
fn tools_of(req: &RecordedRequest) -> Vec<(String, bool)> {
    req.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let name = t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .or_else(|| (t["type"] == "tool_search").then_some("tool_search"))
                .unwrap_or_default()
                .to_string();
            (name, t["defer_loading"] == true)
        })
        .collect()
}

impl Fx {
    async fn go(&self) -> (i32, Vec<Value>, String) {
        let mut cmd = self.command(&["run", "--json", "--yes", "What time is it?"]);
        cmd.env_remove("AIBUDDY_MCP_CONNECT_WAIT_MS");
        let (code, out, err) = cli_run::output_of(cmd).await;
        (code, cli_run::events_of(&out, &err), err)
    }
}

fn result_of<'a>(events: &'a [Value], call: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "tool_result"
                && e["tool_call_id"]
                    .as_str()
                    .is_some_and(|id| id.ends_with(&format!(":{call}")))
        })
        .unwrap_or_else(|| panic!("no result for {call}: {events:?}"))
}

async fn search_call_answer_from_the_first_request(kind: ProviderKind) {
    let f = fx(kind).await;
    let search = json!({"query": "get the current time in a timezone", "limit": 3});
    f.server.push(
        if kind == ProviderKind::OpenAiResponses {
            Turn::default().search_call("call_s1", search)
        } else {
            Turn::text("Searching.").call("call_s1", "tool_search", search)
        }
        .reply(kind),
    );
    f.server.push(
        Turn::text("Asking the clock.")
            .call(
                "call_t1",
                "mcp__time__get_current_time",
                json!({"timezone": "UTC"}),
            )
            .reply(kind),
    );
    f.server.push(Turn::text("It is time.").reply(kind));
    let (code, events, stderr) = f.go().await;
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    let last = events.last().expect("events");
    assert_eq!(last["type"], "run_finished", "{events:?}");
    assert_eq!(last["status"], "completed", "{events:?}");

    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 3, "{events:?}");
    // The first request went out while every server was still starting: no MCP tool in it, but
    // `tool_search`, never deferred.
    let first = tools_of(&reqs[0]);
    assert!(
        first.iter().all(|(n, _)| !n.starts_with("mcp__")),
        "{first:?}"
    );
    assert!(
        first.iter().any(|(n, d)| n == "tool_search" && !d),
        "{first:?}"
    );
    assert!(
        reqs[0].body.to_string().contains("tool_search waits")
            || reqs[0].body.to_string().contains("still connecting"),
        "the system prompt says why tool_search is offered: {}",
        reqs[0].body
    );

    // The search waited for the servers, then found and activated the time tool.
    let found = result_of(&events, "call_s1");
    assert_eq!(found["status"], "ok", "{found}");
    let model = found["model"].as_str().unwrap_or_default();
    assert!(model.contains("mcp__time__get_current_time"), "{model}");
    assert!(!model.contains("not available"), "{model}");

    // The second request carries it: deferred and referenced on the native routes, in full on
    // activeTools.
    let second = tools_of(&reqs[1]);
    let body = reqs[1].body.to_string();
    match kind {
        ProviderKind::OpenAiChat => assert!(
            second
                .iter()
                .any(|(n, d)| n == "mcp__time__get_current_time" && !d),
            "{second:?}"
        ),
        ProviderKind::Anthropic => {
            assert!(
                second
                    .iter()
                    .any(|(n, d)| n == "mcp__time__get_current_time" && *d),
                "{second:?}"
            );
            assert!(body.contains("\"tool_reference\""), "{body}");
        }
        ProviderKind::OpenAiResponses => {
            assert!(
                second
                    .iter()
                    .any(|(n, d)| n == "mcp__time__get_current_time" && *d),
                "{second:?}"
            );
            assert!(body.contains("\"tool_search_output\""), "{body}");
        }
    }

    // The real server answered the call, and the answer came.
    let time = result_of(&events, "call_t1");
    assert_eq!(time["status"], "ok", "{time}");
    assert!(
        time["model"].as_str().unwrap_or_default().contains("UTC"),
        "{time}"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(text.ends_with("It is time."), "{text}");
    f.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_request_search_anthropic_native() {
    search_call_answer_from_the_first_request(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_request_search_responses_native() {
    search_call_answer_from_the_first_request(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_request_search_chat_active_tools() {
    search_call_answer_from_the_first_request(ProviderKind::OpenAiChat).await;
}
