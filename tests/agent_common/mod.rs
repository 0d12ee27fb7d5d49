//! Shared harness of the `agent_*` tests: a real temp project and data dir (real SQLite, real
//! tools), the fake provider server over real HTTP, and an `Agent` pointed at it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::agent::{Agent, AgentOptions, CollectingRunSink, RunEvent, RunOutcome, RunStart};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::confirm::ConfirmBroker;
use aibuddy::discovery::Exposure;
use aibuddy_provider::testing::{FakeServer, RecordedRequest};
use aibuddy_provider::{ApiKey, BaseUrlFrom, HttpProvider, Presentation, ProviderKind, Route};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const KEY: &str = "sk-test-agent-SECRET-0123456789";

pub fn model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "claude-sonnet-4-6",
        ProviderKind::OpenAiResponses => "gpt-5.4",
        ProviderKind::OpenAiChat => "qwen3:8b",
    }
}

/// Native on the two APIs that support it, activeTools on Chat Completions.
pub fn presentation(kind: ProviderKind) -> Presentation {
    match kind {
        ProviderKind::OpenAiChat => Presentation::ActiveTools,
        _ => Presentation::Native,
    }
}

pub fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/mcp/tests/fixtures/misbehaving_server.py")
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
    pub app: Arc<App>,
    pub server: FakeServer,
    pub kind: ProviderKind,
}

/// Options with fast retries (tests must not sleep through real backoff).
pub fn fast_options() -> AgentOptions {
    let mut o = AgentOptions::default();
    o.backoff.base_ms = 20;
    o.backoff.max_delay_ms = 100;
    o
}

/// A project with `notes.txt` and `b.txt`; with `mcp_args`, the person's own `mcp.json` runs the
/// fixture MCP server `fx` with those arguments.
pub async fn harness(kind: ProviderKind, mcp_args: Option<&[&str]>) -> Harness {
    harness_with_settings(kind, mcp_args, None).await
}

/// [`harness`] with the person's own `settings.json` (user level, written before the app opens).
pub async fn harness_with_settings(
    kind: ProviderKind,
    mcp_args: Option<&[&str]>,
    user_settings: Option<Value>,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(root.join("notes.txt"), "alpha-content\n").unwrap();
    std::fs::write(root.join("b.txt"), "beta-content\n").unwrap();
    if let Some(settings) = user_settings {
        std::fs::write(data.join("settings.json"), settings.to_string()).unwrap();
    }
    if let Some(args) = mcp_args {
        let mut a = vec![fixture_server().to_string_lossy().into_owned()];
        a.extend(args.iter().map(|s| s.to_string()));
        std::fs::write(
            data.join("mcp.json"),
            json!({"mcpServers": {"fx": {"command": "python3", "args": a}}}).to_string(),
        )
        .unwrap();
    }
    let app = App::open(AppOptions {
        project: root.clone(),
        data_dir: data.clone(),
    })
    .await
    .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.expect_key(KEY);
    Harness {
        root: app.project_root.clone(),
        dir,
        data,
        app: Arc::new(app),
        server,
        kind,
    }
}

impl Harness {
    pub fn route(&self) -> Route {
        Route {
            name: "fake".into(),
            kind: self.kind,
            model: model(self.kind).into(),
            base_url: self.server.base_url(self.kind),
            first_party: false,
            base_url_from: BaseUrlFrom::Settings,
            presentation: presentation(self.kind),
            context_window: 200_000,
            stream: None,
            images: true,
        }
    }

    pub fn agent(&self, broker: Arc<dyn ConfirmBroker>, options: AgentOptions) -> Agent {
        self.agent_presenting(broker, options, presentation(self.kind))
    }

    /// An agent whose route uses `presentation` (e.g. activeTools forced on Responses, as the
    /// setting `tool_search: "active_tools"` does).
    pub fn agent_presenting(
        &self,
        broker: Arc<dyn ConfirmBroker>,
        options: AgentOptions,
        presentation: Presentation,
    ) -> Agent {
        let route = Route {
            presentation,
            ..self.route()
        };
        let provider = HttpProvider::new(route, ApiKey::new(KEY)).unwrap();
        Agent::new(self.app.clone(), Arc::new(provider), broker, options)
    }

    /// Runs `start` to its end against the fake provider (the replies pushed before), every
    /// confirmation approved: the outcome and the run's events.
    pub async fn run_with(
        &self,
        start: RunStart,
        options: AgentOptions,
    ) -> (RunOutcome, Vec<RunEvent>) {
        let events = sink();
        let out = self
            .agent(Arc::new(ApproveAll), options)
            .run(start, CancellationToken::new(), events.clone())
            .await
            .unwrap();
        (out, events.events())
    }

    /// [`Harness::run_with`] a new run of `prompt` with [`fast_options`].
    pub async fn run_prompt(&self, prompt: &str) -> (RunOutcome, Vec<RunEvent>) {
        self.run_with(new_run(prompt), fast_options()).await
    }

    /// [`Harness::run_with`] continuing `run_id` with `prompt` (empty: none) and [`fast_options`].
    pub async fn continue_run(&self, run_id: &str, prompt: &str) -> (RunOutcome, Vec<RunEvent>) {
        let start = RunStart {
            continue_run: Some(run_id.to_string()),
            ..new_run(prompt)
        };
        self.run_with(start, fast_options()).await
    }

    pub fn push(&self, turn: aibuddy_provider::testing::Turn) {
        self.server.push(turn.reply(self.kind));
    }

    pub fn store(&self) -> aibuddy_store::Store {
        self.app.persistence.as_ref().unwrap().store.clone()
    }

    /// Waits until the MCP server `fx` is connected (its tools listed as deferred).
    pub async fn wait_deferred(&self, tool: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let rows = self.app.tools_list();
            if rows
                .iter()
                .any(|r| r.name == tool && r.exposure == Exposure::Deferred)
            {
                return;
            }
            assert!(Instant::now() < deadline, "{tool} never became deferred");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The names of the tools a recorded request sends, with their `defer_loading` flag.
pub fn sent_tools(req: &RecordedRequest) -> Vec<(String, bool)> {
    req.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let name = t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap_or_default()
                .to_string();
            (name, t["defer_loading"] == Value::Bool(true))
        })
        .collect()
}

pub fn text_of(events: &[RunEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A new run of `prompt`.
pub fn new_run(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

pub fn sink() -> Arc<CollectingRunSink> {
    CollectingRunSink::new()
}

/// Waits for an event matching `pred` (bounded generously).
pub async fn wait_event(sink: &CollectingRunSink, what: &str, pred: impl Fn(&RunEvent) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sink.events().iter().any(&pred) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub use crate::support::processes_with;
