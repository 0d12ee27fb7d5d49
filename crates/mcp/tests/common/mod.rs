//! Shared helpers for the integration tests: where the installed servers live, the fixture
//! server, fast-retry options, progress collectors.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_mcp::{
    Backoff, ElicitationBroker, ElicitationRequest, ElicitationResponse, McpHandlers, McpManager,
    McpOptions, McpProgress, ProgressSink, ServerConfig, ServerState, ServerStatus,
};

/// `<repo>/.tools/mcp`, or `AIBUDDY_MCP_TOOLS`.
pub fn tools_dir() -> PathBuf {
    std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/mcp"))
}

/// The installed tools dir. A missing install is a failure, never a skip: the tests that need
/// the real servers must run (`make test` installs them).
pub fn installed_servers(test: &str) -> PathBuf {
    let dir = tools_dir();
    assert!(
        dir.join(".installed").exists(),
        "{test}: the real MCP servers are not installed at {}; run `make test` or \
         `bash scripts/install-mcp-servers.sh` (a worktree may symlink .tools from the main checkout)",
        dir.display()
    );
    dir
}

pub fn node_bin(dir: &std::path::Path, name: &str) -> String {
    dir.join("node/node_modules/.bin")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

pub fn venv_bin(dir: &std::path::Path, name: &str) -> String {
    dir.join("venv/bin")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

pub fn fixture_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/misbehaving_server.py")
        .to_string_lossy()
        .into_owned()
}

/// A stdio config running the misbehaving fixture with extra arguments.
pub fn fixture(name: &str, extra: &[&str]) -> ServerConfig {
    let mut args = vec![fixture_script()];
    args.extend(extra.iter().map(|s| s.to_string()));
    ServerConfig::stdio(name, "python3", args)
}

/// Options with quick retries, so reconnect tests finish fast.
pub fn fast_options() -> McpOptions {
    McpOptions {
        backoff: Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_millis(400),
        },
        health_check_timeout: Duration::from_secs(2),
        ..McpOptions::default()
    }
}

pub fn start(configs: Vec<ServerConfig>) -> McpManager {
    McpManager::start(configs, McpHandlers::default(), fast_options())
}

pub fn start_with_broker(
    configs: Vec<ServerConfig>,
    broker: Arc<dyn ElicitationBroker>,
) -> McpManager {
    McpManager::start(
        configs,
        McpHandlers {
            elicitation: broker,
        },
        fast_options(),
    )
}

pub fn status_of(manager: &McpManager, server: &str) -> ServerStatus {
    manager
        .status()
        .into_iter()
        .find(|s| s.server == server)
        .expect("server is configured")
}

pub async fn wait_connected(manager: &McpManager, server: &str, timeout: Duration) {
    let ok = manager
        .wait_for(timeout, |all| {
            all.iter()
                .any(|s| s.server == server && s.state == ServerState::Connected)
        })
        .await;
    assert!(
        ok,
        "{server} did not connect: {:?}",
        status_of(manager, server)
    );
}

pub async fn wait_failed(manager: &McpManager, server: &str, timeout: Duration) -> String {
    let ok = manager
        .wait_for(timeout, |all| {
            all.iter()
                .any(|s| s.server == server && matches!(s.state, ServerState::Failed { .. }))
        })
        .await;
    let status = status_of(manager, server);
    assert!(ok, "{server} did not fail: {status:?}");
    match status.state {
        ServerState::Failed { reason, .. } => reason,
        other => panic!("unexpected state {other:?}"),
    }
}

/// A progress sink that records every event.
pub fn collector() -> (ProgressSink, Arc<Mutex<Vec<McpProgress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let sink: ProgressSink = Arc::new(move |p| sink_seen.lock().unwrap().push(p));
    (sink, seen)
}

/// A broker that answers every request with a fixed response and records the requests.
pub struct FixedBroker {
    pub response: ElicitationResponse,
    pub seen: Mutex<Vec<ElicitationRequest>>,
}

impl FixedBroker {
    pub fn new(response: ElicitationResponse) -> Arc<Self> {
        Arc::new(FixedBroker {
            response,
            seen: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait::async_trait]
impl ElicitationBroker for FixedBroker {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        self.seen.lock().unwrap().push(request);
        self.response.clone()
    }
}

/// Reads the fixture's `--record` file as JSON values.
pub fn recorded(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}
