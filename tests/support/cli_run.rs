//! [`CliRun`]: the fixture of the tests that drive the real `aibuddy run` against the scripted
//! fake provider. A project and a data directory under one temporary folder, the fake server
//! (checking the protocol on every request), user-level settings naming a provider of one route,
//! and the command with that route's key and base URL in its environment.

use std::path::PathBuf;

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::FakeServer;
use serde_json::{Value, json};

/// The API key the fake server expects (the Chat route's local server takes none).
pub const KEY: &str = "sk-test-cli-run-5f2e";

/// The user-level `providers` of a route, against `server`: Anthropic and Responses take their
/// base URL from the environment (a key from the environment only goes there), Chat is a local
/// OpenAI-compatible entry.
pub fn providers(kind: ProviderKind, server: &FakeServer) -> Value {
    match kind {
        ProviderKind::Anthropic => {
            json!({"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}})
        }
        ProviderKind::OpenAiResponses => {
            json!({"default": "openai", "openai": {"model": "gpt-5.4"}})
        }
        ProviderKind::OpenAiChat => json!({"default": "local", "local": {
            "kind": "openai-chat", "base_url": server.openai_base(), "model": "qwen3:8b"}}),
    }
}

/// `providers` with the provider-native tool search forced on the Anthropic and Responses entries
/// (a custom base URL would present activeTools).
pub fn with_native_search(mut providers: Value) -> Value {
    if let Some(entry) = providers["default"].as_str().map(str::to_string)
        && providers[&entry]["kind"] != "openai-chat"
    {
        providers[&entry]["tool_search"] = json!("native");
    }
    providers
}

/// One temporary project, data directory and fake provider for `aibuddy run`.
pub struct CliRun {
    _tmp: tempfile::TempDir,
    /// The canonical temporary folder holding `proj/` and `data/` (room for side folders).
    pub base: PathBuf,
    pub project: PathBuf,
    pub data: PathBuf,
    pub server: FakeServer,
    pub kind: ProviderKind,
}

impl CliRun {
    /// The folders, the server and user-level settings with only the route's provider.
    pub async fn start(kind: ProviderKind) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let (project, data) = (base.join("proj"), base.join("data"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        let server = FakeServer::start().await.unwrap();
        if kind != ProviderKind::OpenAiChat {
            server.expect_key(KEY);
        }
        let run = CliRun {
            _tmp: tmp,
            base,
            project,
            data,
            server,
            kind,
        };
        run.user_settings(json!({}));
        run
    }

    /// Writes the user-level `settings.json`: the route's `providers` plus `extra`'s keys.
    pub fn user_settings(&self, extra: Value) {
        let mut settings = json!({ "providers": providers(self.kind, &self.server) });
        if let (Some(all), Value::Object(more)) = (settings.as_object_mut(), extra) {
            all.extend(more);
        }
        std::fs::write(self.data.join("settings.json"), settings.to_string()).unwrap();
    }

    /// `aibuddy ARGS` with the route's key and base URL (the other route's removed) and MCP
    /// servers awaited at most 2 s before the first request.
    pub fn std_command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = super::aibuddy_cmd(&self.project, &self.data);
        cmd.args(args)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("AIBUDDY_MCP_CONNECT_WAIT_MS", "2000");
        match self.kind {
            ProviderKind::Anthropic => {
                cmd.env("ANTHROPIC_API_KEY", KEY)
                    .env("ANTHROPIC_BASE_URL", self.server.anthropic_base());
            }
            ProviderKind::OpenAiResponses => {
                cmd.env("OPENAI_API_KEY", KEY)
                    .env("OPENAI_BASE_URL", self.server.openai_base());
            }
            ProviderKind::OpenAiChat => {}
        }
        cmd
    }

    /// [`CliRun::std_command`] for tokio.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        tokio::process::Command::from(self.std_command(args))
    }

    /// Runs `aibuddy ARGS` to its end: (exit code, stdout, stderr).
    pub async fn output(&self, args: &[&str]) -> (i32, String, String) {
        output_of(self.command(args)).await
    }

    /// Runs `aibuddy ARGS` (with `--json`) to its end: (exit code, events, stderr).
    pub async fn events(&self, args: &[&str]) -> (i32, Vec<Value>, String) {
        let (code, out, err) = self.output(args).await;
        (code, events_of(&out, &err), err)
    }
}

/// Runs `cmd` to its end: (exit code, stdout, stderr).
pub async fn output_of(mut cmd: tokio::process::Command) -> (i32, String, String) {
    let out = cmd.output().await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON events of a `--json` run's stdout, one per line (`stderr` shown when one is not).
pub fn events_of(stdout: &str, stderr: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{stderr}")))
        .collect()
}
