//! Background precompaction belongs to its run: two runs in one process (the desktop's case)
//! share one `Compactor`; stopping one run cancels the precompaction of that run's calls and
//! leaves the other run's to complete. Real pipeline, real SQLite store, the summarize strategy
//! behind a summarizer that waits for a gate (or its token, as the provider-backed one does).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use aibuddy::confirm::ApproveAll;
use aibuddy::contract::{DefineError, ToolError, define_tool};
use aibuddy::discovery::{self, HostCaps};
use aibuddy::events::{CallStatus, CollectingSink};
use aibuddy::pipeline::{CallOutcome, CallRequest, Runner};
use aibuddy::registry::{
    CallContext, Compaction, RawOutput, Registry, Risk, Source, ToolConfig, ToolConfigMeta,
    ToolDef, ToolHandler,
};
use aibuddy::results::{Persistence, SummarizeError, Summarizer, SummaryRequest};
use aibuddy::services::Services;
use aibuddy::settings::Settings;
use aibuddy_store::CompactionState;
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Prints `n` numbered lines (enough of them pass the precompaction threshold).
struct Lines;

#[async_trait]
impl ToolHandler for Lines {
    async fn run(&self, _ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let n = args["n"].as_u64().unwrap_or(1);
        let text: String = (0..n)
            .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
            .collect();
        Ok(RawOutput::json(Value::String(text)))
    }
}

struct Cfg;

impl ToolConfig for Cfg {
    fn key(&self) -> &str {
        "summarized"
    }
    fn compaction(&self) -> Compaction {
        Compaction::Summarize
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool(
                "bigsum",
                "print lines",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(Lines),
        }])
    }
}

/// Summarizes once `gate` opens; gives up when its token is cancelled.
struct GateSummarizer {
    gate: Arc<Notify>,
}

#[async_trait]
impl Summarizer for GateSummarizer {
    async fn summarize(
        &self,
        req: &SummaryRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<String, SummarizeError> {
        tokio::select! {
            _ = self.gate.notified() => Ok(format!("SUMMARY: {} lines", req.text.lines().count())),
            _ = cancel.cancelled() => Err(SummarizeError("stopped".into())),
        }
    }
}

fn runner(run_id: &str, dir: &std::path::Path, persistence: &Persistence) -> Runner {
    let registry = Arc::new(
        Registry::build(
            vec![Arc::new(Cfg) as Arc<dyn ToolConfig>],
            vec![ToolConfigMeta::fixed(
                "summarized",
                "summarized",
                "test",
                Risk::ReadOnly,
                false,
                &["bigsum"],
            )],
        )
        .expect("consistent"),
    );
    let mut settings = Settings::default();
    settings.tools.enabled.push("summarized".into());
    Runner {
        run_id: run_id.into(),
        registry,
        services: Arc::new(Services {
            project_root: dir.to_path_buf(),
            data_dir: dir.join("data"),
            settings,
            sandbox: Err("no sandbox in this test".into()),
            session_rules: Default::default(),
            processes: Default::default(),
        }),
        broker: Arc::new(ApproveAll),
        recorder: persistence.call_recorder(),
        after_call: Some(persistence.after_call()),
        sandbox_kind: "local".into(),
        checkpoints: None,
    }
}

async fn call_big(r: &Runner) -> CallOutcome {
    let host = HostCaps {
        store: true,
        ..HostCaps::default()
    };
    let toolset = discovery::effective(&r.registry, &r.services.settings, &host, &BTreeSet::new());
    r.call(
        &toolset,
        CallRequest {
            id: None,
            name: "bigsum".into(),
            arguments: json!({"n": 400}).to_string(),
        },
        CancellationToken::new(),
        CollectingSink::new(),
    )
    .await
}

async fn state_of(p: &Persistence, id: &str) -> CompactionState {
    p.store
        .get_call(id)
        .await
        .unwrap()
        .expect("stored")
        .compaction_state
}

/// Waits (bounded generously) until call `id` reaches `want`.
async fn wait_state(p: &Persistence, id: &str, want: CompactionState) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = state_of(p, id).await;
        if now == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{id}: {now:?}, wanted {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_one_run_cancels_its_precompaction_and_not_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Notify::new());
    let persistence = Persistence::open(
        &dir.path().join("data"),
        dir.path(),
        Some(Arc::new(GateSummarizer { gate: gate.clone() })),
    )
    .await
    .unwrap();
    let compactor = persistence.compactor.clone();
    let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
    let _a = compactor.attach_run("run_a", &stop_a);
    let _b = compactor.attach_run("run_b", &stop_b);
    let (ra, rb) = (
        runner("run_a", dir.path(), &persistence),
        runner("run_b", dir.path(), &persistence),
    );
    let a = call_big(&ra).await;
    let b = call_big(&rb).await;
    assert_eq!((a.status, b.status), (CallStatus::Ok, CallStatus::Ok));
    // Both precompactions are waiting in the summarizer.
    wait_state(&persistence, &a.tool_call_id, CompactionState::Pending).await;
    wait_state(&persistence, &b.tool_call_id, CompactionState::Pending).await;

    // The person stops run A: its precompaction ends, the original stays.
    stop_a.cancel();
    wait_state(&persistence, &a.tool_call_id, CompactionState::Failed).await;
    let rec_a = persistence
        .store
        .get_call(&a.tool_call_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec_a.model_projection.as_deref(), Some(a.model.as_str()));
    // Run B's is still waiting, untouched by A's stop.
    assert_eq!(
        state_of(&persistence, &b.tool_call_id).await,
        CompactionState::Pending
    );

    // Run B's summary arrives and replaces its projection.
    gate.notify_one();
    wait_state(&persistence, &b.tool_call_id, CompactionState::Compacted).await;
    let rec_b = persistence
        .store
        .get_call(&b.tool_call_id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        rec_b
            .model_projection
            .as_deref()
            .is_some_and(|m| m.starts_with("SUMMARY: 400 lines")),
        "{:?}",
        rec_b.model_projection
    );
    compactor.wait_idle().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_run_and_an_unattached_call_follow_only_the_app_wide_stop() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Notify::new());
    let persistence = Persistence::open(
        &dir.path().join("data"),
        dir.path(),
        Some(Arc::new(GateSummarizer { gate: gate.clone() })),
    )
    .await
    .unwrap();
    let compactor = persistence.compactor.clone();
    // A run that ended normally (its guard dropped) and was stopped afterwards: nothing of it
    // is cancelled by that late stop; a call outside any run (`aibuddy call`) neither.
    let stop = CancellationToken::new();
    drop(compactor.attach_run("run_done", &stop));
    stop.cancel();
    let done = call_big(&runner("run_done", dir.path(), &persistence)).await;
    let loose = call_big(&runner("call_loose", dir.path(), &persistence)).await;
    wait_state(&persistence, &done.tool_call_id, CompactionState::Pending).await;
    wait_state(&persistence, &loose.tool_call_id, CompactionState::Pending).await;
    // The app-wide stop (project closed, CLI exit) ends both.
    compactor.cancel();
    wait_state(&persistence, &done.tool_call_id, CompactionState::Failed).await;
    wait_state(&persistence, &loose.tool_call_id, CompactionState::Failed).await;
    compactor.wait_idle().await;
}
