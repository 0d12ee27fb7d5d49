//! What the agent benchmarks share: temp projects, the real MCP servers' configuration, the
//! fake provider's settings for the CLI, and verdict formatting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use aibuddy_provider::testing::FakeServer;
use serde_json::{Value, json};

/// The directory `make test` installs the real MCP servers into, when they are installed.
pub fn tools_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/mcp"));
    dir.join(".installed").exists().then_some(dir)
}

pub fn node_bin(t: &Path, b: &str) -> PathBuf {
    t.join("node/node_modules/.bin").join(b)
}

/// A temp project (`root`) and data dir (`data`), removed on drop.
pub struct Project {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
}

pub fn project() -> Project {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = std::fs::canonicalize(tmp.path()).expect("canonical temp dir");
    let root = base.join("proj");
    let data = base.join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).expect("project dir");
    std::fs::create_dir_all(&data).expect("data dir");
    for i in 0..20 {
        std::fs::write(root.join(format!("file_{i:02}.txt")), format!("line {i}\n"))
            .expect("project file");
    }
    Project { tmp, root, data }
}

impl Project {
    pub fn write_data(&self, name: &str, v: &Value) {
        std::fs::write(self.data.join(name), v.to_string()).expect("write data file");
    }

    /// The person's settings: a local Chat Completions entry pointed at the fake server.
    pub fn chat_settings(&self, server: &FakeServer) {
        self.write_data(
            "settings.json",
            &json!({"providers": {"default": "local", "local": {
                "kind": "openai-chat", "base_url": server.openai_base(), "model": "qwen3:8b"}}}),
        );
    }

    /// `aibuddy --project .. --data-dir .. ARGS` with no key in its environment.
    pub fn cli(&self, bin: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin);
        c.arg("--project")
            .arg(&self.root)
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .env_remove("AIBUDDY_LOG")
            .env_remove("AIBUDDY_DATA_DIR")
            .env_remove("AIBUDDY_MCP_CONNECT_WAIT_MS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(Stdio::null());
        c
    }
}

/// The 7 servers of `tests/all/discovery_real_servers.rs` (78 tools), with generous connect timeouts.
pub fn real_servers(t: &Path, tmp: &Path) -> Value {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    let _ = Command::new("git").args(["init", "-q"]).arg(&repo).status();
    let venv = |b: &str| t.join("venv/bin").join(b);
    let mut config = json!({"mcpServers": {
        "everything": {"command": node_bin(t, "mcp-server-everything"), "args": ["stdio"]},
        "filesystem": {"command": node_bin(t, "mcp-server-filesystem"), "args": [tmp]},
        "memory": {"command": node_bin(t, "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": tmp.join("memory.jsonl")}},
        "github": {"command": node_bin(t, "mcp-server-github")},
        "time": {"command": venv("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": venv("mcp-server-git"), "args": ["--repository", repo]},
        "fetch": {"command": venv("mcp-server-fetch")}
    }});
    if let Some(servers) = config["mcpServers"].as_object_mut() {
        for s in servers.values_mut() {
            s["timeouts"] = json!({"connect": 120});
        }
    }
    config
}

/// `PASS`/`MISS` of `value <= goal`.
pub fn verdict(value: f64, goal: f64) -> &'static str {
    if value <= goal { "PASS" } else { "MISS" }
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The load average, printed beside every number (the machine is shared).
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
