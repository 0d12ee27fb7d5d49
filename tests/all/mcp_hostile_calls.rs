//! A hostile MCP server through the whole pipeline, with the real SQLite store: a server that
//! exits mid-call gives an Execution-stage error and the call is recorded with that stage; a
//! megabyte JSON-RPC error message and a megabyte description reach neither the model nor the
//! `tool_search` index whole. The server is the stdlib fixture of aibuddy-mcp's tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::contract::Stage;
use aibuddy::discovery::{Exposure, ToolListing};
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/mcp/tests/fixtures/misbehaving_server.py")
}

/// A project whose person's own `mcp.json` runs the fixture as `fx` with `fx_args`.
fn project(fx_args: &[&str]) -> (tempfile::TempDir, AppOptions) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let mut args = vec![fixture_server().to_string_lossy().into_owned()];
    args.extend(fx_args.iter().map(|s| s.to_string()));
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {"fx": {"command": "python3", "args": args}}}).to_string(),
    )
    .unwrap();
    let opts = AppOptions {
        project: root,
        data_dir: data,
    };
    (dir, opts)
}

async fn call(app: &App, name: &str, args: serde_json::Value) -> CallOutcome {
    let runner = app.runner(Some("run".to_string()), Arc::new(ApproveAll));
    runner
        .call(
            &app.run_toolset("run"),
            CallRequest {
                id: None,
                name: name.to_string(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

async fn wait_listed(app: &App, name: &str) -> ToolListing {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(row) = app.tools_list().into_iter().find(|r| r.name == name)
            && row.exposure != Exposure::Absent
        {
            return row;
        }
        assert!(Instant::now() < deadline, "{name} never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_exiting_mid_call_is_an_execution_error_and_the_call_is_recorded() {
    let (_dir, opts) = project(&[]);
    let app = App::open(opts).await.unwrap();
    assert_eq!(
        wait_listed(&app, "mcp__fx__crash").await.exposure,
        Exposure::Active
    );
    let out = call(&app, "mcp__fx__crash", json!({})).await;
    assert_eq!(out.status, CallStatus::Error, "{out:?}");
    assert_eq!(out.stage, Some(Stage::Execution), "{out:?}");
    assert!(out.model.contains("connection lost"), "{}", out.model);
    let store = &app
        .persistence
        .as_ref()
        .expect("the app stores calls")
        .store;
    let row = store
        .get_call(&out.tool_call_id)
        .await
        .unwrap()
        .expect("the failed call is recorded");
    assert_eq!(
        row.stage,
        Some(aibuddy::contract::Stage::Execution),
        "{row:?}"
    );
    assert!(row.finished_at.is_some(), "{row:?}");
    assert_eq!(row.model_projection.as_deref(), Some(out.model.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn megabyte_server_text_reaches_neither_the_model_nor_the_index_whole() {
    let (_dir, opts) = project(&["--hostile-tools"]);
    let app = App::open(opts).await.unwrap();
    // More than 10 tools: deferred behind tool_search.
    let verbose = wait_listed(&app, "mcp__fx__verbose").await;
    assert_eq!(verbose.exposure, Exposure::Deferred);
    let found = call(
        &app,
        "tool_search",
        json!({"query": "select:mcp__fx__verbose,mcp__fx__big_error"}),
    )
    .await;
    assert_eq!(found.status, CallStatus::Ok, "{found:?}");
    assert!(found.model.len() < 20_000, "{}", found.model.len());
    let out = call(&app, "mcp__fx__big_error", json!({})).await;
    assert_eq!(out.stage, Some(Stage::Execution), "{out:?}");
    assert!(
        out.model.contains("message cut at 4096"),
        "{}",
        &out.model[..200]
    );
    assert!(out.model.len() < 10_000, "{}", out.model.len());
}
