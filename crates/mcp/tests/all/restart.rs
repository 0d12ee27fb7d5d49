//! `McpManager::restart` against a real server (`mcp-server-memory` from `.tools/mcp`): the old
//! process ends, a new one starts and connects, its tools come back; unknown and disabled servers
//! are refused.

use crate::common;

use std::time::Duration;

use aibuddy_mcp::{McpError, ServerConfig};
use common::*;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_starts_a_fresh_process_and_it_connects_again() {
    let dir = installed_servers("restart");
    let tmp = tempfile::tempdir().unwrap();
    let starts = tmp.path().join("starts");
    // Each start of the server appends a line, so the test sees how many processes there were.
    let script = format!(
        "echo start >> '{}'; exec '{}'",
        starts.display(),
        node_bin(&dir, "mcp-server-memory")
    );
    let mut cfg = ServerConfig::stdio("mem", "sh", vec!["-c".into(), script]);
    if let aibuddy_mcp::Transport::Stdio { env, .. } = &mut cfg.transport {
        env.insert(
            "MEMORY_FILE_PATH".into(),
            tmp.path().join("memory.jsonl").display().to_string(),
        );
    }
    let mut disabled = ServerConfig::stdio("off", "true", vec![]);
    disabled.enabled = false;
    let manager = start(vec![cfg, disabled]);
    wait_connected(&manager, "mem", WAIT).await;
    let tools = status_of(&manager, "mem").tool_count;
    assert!(tools > 0);
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 1);

    manager.restart("mem").await.unwrap();
    wait_connected(&manager, "mem", WAIT).await;
    assert_eq!(status_of(&manager, "mem").tool_count, tools);
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 2);
    let catalog = manager.catalog();
    assert!(catalog.iter().any(|e| e.server == "mem"));

    assert!(matches!(
        manager.restart("nope").await,
        Err(McpError::UnknownServer { .. })
    ));
    assert!(matches!(
        manager.restart("off").await,
        Err(McpError::ServerUnavailable { .. })
    ));
    manager.shutdown().await;
    assert!(manager.restart("mem").await.is_err());
}
