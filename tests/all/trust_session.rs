//! A long-running session (the desktop keeps one `App` open): a command rewriting
//! `.aibuddy/mcp.json` mid-session never gets its server started, and the approved one is no longer
//! restarted either (every restart re-checks trust); reopening the project re-checks trust.

use std::path::Path;
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::trust::{self, TrustState};
use serde_json::json;

fn server(appends_to: &Path) -> String {
    json!({"mcpServers": {"srv": {"command": "sh", "args": ["-c",
        format!("echo started >> '{}'", appends_to.display())]}}})
    .to_string()
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mid_session_rewrite_of_mcp_json_never_starts_its_server() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("proj"), base.join("data"));
    std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
    let (approved, rewritten) = (base.join("approved.log"), base.join("rewritten.log"));
    std::fs::write(project.join(".aibuddy/mcp.json"), server(&approved)).unwrap();
    let shown = trust::status(&project, &data).unwrap();
    trust::grant(&project, &data, &shown.digest).unwrap();

    let app = App::open(AppOptions {
        project: project.clone(),
        data_dir: data.clone(),
    })
    .await
    .unwrap();
    assert_eq!(app.trust.state, TrustState::Trusted);
    // The approved command starts (it is no MCP server, so the plane keeps retrying it).
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(&approved) < 1 {
        assert!(
            Instant::now() < deadline,
            "the approved server never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Mid-session, something rewrites the file.
    std::fs::write(project.join(".aibuddy/mcp.json"), server(&rewritten)).unwrap();
    assert_eq!(app.trust_status().state, TrustState::ChangedSinceTrusted);
    // Reconnects stop: the files the person approved are not what is on disk any more, so even
    // the approved command is not restarted (a pinned script it runs may have been rewritten).
    let mcp = app
        .capabilities
        .mcp
        .clone()
        .expect("the approved server is managed");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let reason = mcp
            .status()
            .into_iter()
            .find(|st| st.server == "srv")
            .map(|st| match st.state {
                aibuddy_mcp::ServerState::Failed { reason, .. } => reason,
                aibuddy_mcp::ServerState::Reconnecting { last_reason, .. } => last_reason,
                _ => String::new(),
            })
            .unwrap_or_default();
        if reason.contains("files changed since the person trusted it") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no reconnect attempt was refused; last reason: {reason}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let refused_at = lines(&approved);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        lines(&approved),
        refused_at,
        "the approved command was restarted after its project's files changed"
    );
    let _ = app.tools_list();
    assert!(!rewritten.exists(), "the rewritten server ran mid-session");
    drop(app);

    // Reopening re-checks trust: still not started, listed absent.
    let app = App::open(AppOptions {
        project,
        data_dir: data,
    })
    .await
    .unwrap();
    assert_eq!(app.trust.state, TrustState::ChangedSinceTrusted);
    let row = app
        .tools_list()
        .into_iter()
        .find(|r| r.name == "mcp__srv__*")
        .unwrap();
    assert_eq!(row.absent_reason.as_deref(), Some("project not trusted"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !rewritten.exists(),
        "the rewritten server ran after reopening"
    );
}
