//! A stdio server's environment and what is printed about it, with real child processes.
//!
//! Issue 9: MCP servers were started with the client's full environment (secrets included), and
//! start-up warnings could quote configured values. Now a server gets the MCP SDKs' default
//! environment plus its config's `env`, and no reason or log line carries an `env` value or a
//! token-like argument.
//!
//! One test in this binary, so setting the parent's environment before the runtime starts cannot
//! race another test's threads.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_mcp::{McpManager, ServerConfig, Transport};
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const UP: Duration = Duration::from_secs(30);
const ENV_SECRET: &str = "tok-ENV-SECRET-1234";
const ARG_SECRET: &str = "sk-ARG-SECRET-5678";

/// The log lines of this process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The real interpreter: a `python3` shim (pyenv) is a shell script that adds its own variables.
fn real_python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn with_env(mut cfg: ServerConfig, pairs: &[(&str, &str)]) -> ServerConfig {
    if let Transport::Stdio { env, .. } = &mut cfg.transport {
        for (k, v) in pairs {
            env.insert(k.to_string(), v.to_string());
        }
    }
    cfg
}

#[test]
fn servers_get_the_default_environment_and_nothing_prints_configured_values() {
    // SAFETY: the only test of this binary, before any runtime or thread of ours exists.
    unsafe {
        std::env::set_var("SECRET_TOKEN", "parent-secret-token");
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-parent-key");
        std::env::set_var("LC_ALL", "C.UTF-8");
    }
    let logs = Captured::default();
    let writer = logs.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            // Every line of this crate; rmcp's own TRACE dumps whole messages, including the
            // `env` tool's answer, which legitimately holds the configured value.
            .with_env_filter(tracing_subscriber::EnvFilter::new("info,aibuddy_mcp=trace"))
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut envdump = fixture("envdump", &["--chaos"]);
    if let Transport::Stdio { command, .. } = &mut envdump.transport {
        *command = real_python();
    }
    runtime.block_on(async {
        let manager = McpManager::start(
            vec![
                with_env(
                    envdump,
                    &[
                        ("CONFIGURED_VAR", "from-config"),
                        ("GITHUB_TOKEN", ENV_SECRET),
                    ],
                ),
                with_env(
                    fixture(
                        "leaky",
                        &["--stderr-config", &format!("--api-key={ARG_SECRET}")],
                    ),
                    &[("ZZ_API_TOKEN", ENV_SECRET)],
                ),
                ServerConfig::stdio(
                    "missing",
                    "/nonexistent/mcp-server",
                    vec![format!("--token={ARG_SECRET}")],
                ),
            ],
            Default::default(),
            fast_options(),
        );
        wait_connected(&manager, "envdump", UP).await;

        // 1. The environment: SDK defaults + locale + the config's env, nothing else.
        let result = manager
            .call(
                "mcp__envdump__env",
                json!({}),
                CancellationToken::new(),
                None,
            )
            .await
            .unwrap();
        let env: BTreeMap<String, String> = serde_json::from_str::<Value>(&result.text())
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .expect("env tool returns an object of strings");
        assert!(!env.contains_key("SECRET_TOKEN"), "{env:?}");
        assert!(!env.contains_key("ANTHROPIC_API_KEY"), "{env:?}");
        assert_eq!(env["CONFIGURED_VAR"], "from-config");
        assert_eq!(env["GITHUB_TOKEN"], ENV_SECRET);
        assert_eq!(env["LC_ALL"], "C.UTF-8");
        assert!(env.contains_key("PATH"), "{env:?}");
        let allowed = |k: &str| {
            aibuddy_mcp::DEFAULT_INHERITED_ENV_VARS.contains(&k)
                || k == "LANG"
                || k.starts_with("LC_")
                || k == "CONFIGURED_VAR"
                || k == "GITHUB_TOKEN"
        };
        // python3 itself may add LC_CTYPE when coercing the C locale; that is LC_* anyway.
        let extra: Vec<&String> = env.keys().filter(|k| !allowed(k)).collect();
        assert!(extra.is_empty(), "unexpected variables: {extra:?}");

        // 2. Start-up failures: the reasons name the command, never env values or arguments.
        let leaky = wait_failed(&manager, "leaky", UP).await;
        assert!(leaky.contains("exit status: 3"), "{leaky}");
        assert!(
            leaky.contains("fixture: argv"),
            "the stderr tail is kept: {leaky}"
        );
        let missing = wait_failed(&manager, "missing", UP).await;
        assert!(missing.contains("/nonexistent/mcp-server"), "{missing}");
        for reason in [&leaky, &missing] {
            assert!(!reason.contains(ENV_SECRET), "{reason}");
            assert!(!reason.contains(ARG_SECRET), "{reason}");
        }
        // After a reconnect attempt too (the warning is logged again).
        let ok = manager
            .wait_for(UP, |all| {
                all.iter().any(|s| {
                    s.server == "leaky"
                        && matches!(&s.state, aibuddy_mcp::ServerState::Failed { .. })
                        && s.protocol_version.is_none()
                })
            })
            .await;
        assert!(ok);
        tokio::time::sleep(Duration::from_millis(800)).await;
        manager.shutdown().await;
    });

    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("MCP server failed") && logs.contains("stderr: fixture: env ZZ_API_TOKEN="),
        "the failures and stderr lines are logged: {logs}"
    );
    let leaked: Vec<&str> = logs.lines().filter(|l| l.contains(ENV_SECRET)).collect();
    assert!(
        leaked.is_empty(),
        "a configured env value was logged: {leaked:#?}"
    );
    assert!(
        !logs.contains(ARG_SECRET),
        "a configured argument was logged"
    );
    assert!(!logs.contains("parent-secret-token"));
}
