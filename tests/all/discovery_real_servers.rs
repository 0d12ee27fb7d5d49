//! The capability plane with the real MCP servers installed by scripts/install-mcp-servers.sh
//! (server-everything, -filesystem, -memory, -github; mcp-server-time, -git, -fetch): 78 tools, so
//! the aggregate gate defers every MCP tool; `tool_search` finds and activates the right one and
//! the call reaches the real server. The servers are configured in the user-level `mcp.json` (the
//! person's own file, which needs no project trust). A missing install fails the test (`make test`
//! installs the servers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::discovery::Exposure;
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::CallRequest;
use aibuddy::registry::Source;
use aibuddy_mcp::ServerState;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn installed() -> PathBuf {
    crate::support::mcp_tools_dir()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_servers_are_deferred_and_found_by_tool_search() {
    let t = installed();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(&repo)
            .status()
            .unwrap()
            .success()
    );
    let node = |b: &str| t.join("node/node_modules/.bin").join(b);
    let venv = |b: &str| t.join("venv/bin").join(b);
    let config = json!({"mcpServers": {
        "everything": {"command": node("mcp-server-everything"), "args": ["stdio"]},
        "filesystem": {"command": node("mcp-server-filesystem"), "args": [tmp.path()]},
        "memory": {"command": node("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": tmp.path().join("memory.jsonl")}},
        "github": {"command": node("mcp-server-github")},
        "time": {"command": venv("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": venv("mcp-server-git"), "args": ["--repository", repo]},
        "fetch": {"command": venv("mcp-server-fetch")}
    }});
    // Python servers import slowly on a loaded 2-core machine: generous connect timeouts.
    let mut config = config;
    for server in config["mcpServers"].as_object_mut().unwrap().values_mut() {
        server["timeouts"] = json!({"connect": 120});
    }
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("mcp.json"), config.to_string()).unwrap();

    let app = App::open(AppOptions {
        project: root,
        data_dir: data,
    })
    .await
    .unwrap();
    let mcp = app.capabilities.mcp.clone().expect("servers configured");
    // All connected, and server-everything's post-initialize list_changed has landed.
    let ready = mcp
        .wait_for(Duration::from_secs(240), |s| {
            s.len() == 7
                && s.iter().all(|x| x.state == ServerState::Connected)
                && s.iter()
                    .any(|x| x.server == "everything" && x.tools_refreshed >= 1)
        })
        .await;
    assert!(ready, "servers did not connect: {:?}", mcp.status());
    app.capabilities.refresh();

    let rows = app.tools_list();
    let mcp_rows: Vec<_> = rows
        .iter()
        .filter(|r| matches!(r.source, Source::Mcp(_)))
        .collect();
    assert_eq!(mcp_rows.len(), 78, "the 7 servers expose 78 tools");
    assert!(
        mcp_rows.iter().all(|r| r.exposure == Exposure::Deferred),
        "78 > 30: every MCP tool is deferred"
    );
    assert!(
        rows.iter()
            .any(|r| r.name == "tool_search" && r.exposure == Exposure::Active)
    );
    let toolset = app.toolset(&Default::default());
    assert!(toolset.defer.all_mcp, "{:?}", toolset.defer);

    let runner = app.runner(Some("run_real".into()), Arc::new(ApproveAll));
    let call = |name: &str, args: serde_json::Value| CallRequest {
        id: None,
        name: name.to_string(),
        arguments: args.to_string(),
    };
    let out = runner
        .call(
            &app.run_toolset("run_real"),
            call(
                "tool_search",
                json!({"query": "current time in a timezone", "limit": 3}),
            ),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(
        out.model.contains("1. mcp__time__get_current_time"),
        "{}",
        out.model
    );
    let out = runner
        .call(
            &app.run_toolset("run_real"),
            call(
                "mcp__time__get_current_time",
                json!({"timezone": "Asia/Tokyo"}),
            ),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("Asia/Tokyo"), "{}", out.model);
}
