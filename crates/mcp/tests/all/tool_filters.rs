//! Per-tool allow/deny lists and `${VAR}` expansion on a real stdio server (the fixture): a
//! left-out tool is absent from the catalog, cannot be called, and is reported with its reason;
//! a server configured through an `mcp.json` with variables gets the expanded values.

use crate::common;

use std::time::Duration;

use aibuddy_mcp::config::tool_filter::{DENIED, NOT_ALLOWED};
use aibuddy_mcp::config::{ConfigScope, ToolFilter, Vars, parse_config_text_with};
use aibuddy_mcp::{McpStage, ServerState};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(30);

#[tokio::test]
async fn denied_and_unlisted_tools_are_left_out_with_their_reason() {
    let mut cfg = fixture("fx", &[]);
    cfg.tools = ToolFilter {
        allow: Some(vec!["e*".into(), "add".into()]),
        deny: vec!["elicit".into()],
    };
    let manager = start(vec![cfg, fixture("open", &[])]);
    wait_connected(&manager, "fx", UP).await;
    wait_connected(&manager, "open", UP).await;
    let names: Vec<String> = manager
        .catalog()
        .into_iter()
        .filter(|e| e.server == "fx")
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec!["add", "echo"]);
    let status = status_of(&manager, "fx");
    assert_eq!(status.tool_count, 2);
    let reason = |tool: &str| {
        status
            .filtered_tools
            .iter()
            .find(|f| f.tool == tool)
            .map(|f| f.reason.clone())
    };
    assert_eq!(reason("elicit").as_deref(), Some(DENIED));
    assert_eq!(reason("crash").as_deref(), Some(NOT_ALLOWED));
    assert_eq!(reason("echo"), None);
    assert!(
        status.rejected_tools.iter().all(|r| r.tool != "crash"),
        "a filtered tool is not a rejected one"
    );
    let open = status_of(&manager, "open");
    assert!(open.filtered_tools.is_empty());
    assert!(open.tool_count > 2, "the other server keeps every tool");

    let err = manager
        .call("mcp__fx__crash", json!({}), CancellationToken::new(), None)
        .await
        .unwrap_err();
    assert_eq!(err.stage(), McpStage::Discovery, "{err}");
    let ok = manager
        .call(
            "mcp__fx__add",
            json!({"a": 2, "b": 3}),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert!(ok.text().contains('5'), "{}", ok.text());
    assert_eq!(status_of(&manager, "fx").state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_server_gets_its_expanded_variables() {
    let script = fixture_script();
    let text = json!({"mcpServers": {"fx": {
        "command": "${FX_PYTHON:-python3}",
        "args": [script, "--chaos"],
        "env": {"FX_SEEN": "${FX_VALUE}-x", "FX_DEFAULT": "${FX_UNSET:-dflt}"}
    }}})
    .to_string();
    let lookup = |name: &str| (name == "FX_VALUE").then(|| "from-env".to_string());
    let loaded = parse_config_text_with(
        std::path::Path::new("/u/mcp.json"),
        ConfigScope::User,
        &text,
        Vars::From(&lookup),
    );
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let manager = start(loaded.servers);
    wait_connected(&manager, "fx", UP).await;
    let result = manager
        .call("mcp__fx__env", json!({}), CancellationToken::new(), None)
        .await
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(&result.text()).unwrap();
    assert_eq!(env["FX_SEEN"], "from-env-x", "{env}");
    assert_eq!(env["FX_DEFAULT"], "dflt", "{env}");
    manager.shutdown().await;
}
