//! The pipeline with the real SQLite store and background precompaction: raw results persisted,
//! large model projections compacted after delivery (trim / summarize / drop), recovery through
//! `view_tool_call`, failures recorded as Projection-stage without losing the original.

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
use aibuddy::results::{
    PRECOMPACTION_THRESHOLD, Persistence, SummarizeError, Summarizer, SummaryRequest,
    estimate_tokens,
};
use aibuddy::services::Services;
use aibuddy::settings::Settings;
use aibuddy::tools::view_tool_call::ViewToolCallConfig;
use aibuddy_store::{CallRecord, CompactionState, RawOutputLocation};
use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Prints `n` numbered lines; its trim hook keeps the first and last line (or, for `grow`,
/// returns something larger than the original).
struct Lines {
    grow: bool,
}

fn lines(n: u64) -> String {
    (0..n)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

#[async_trait]
impl ToolHandler for Lines {
    async fn run(&self, _ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        Ok(RawOutput::json(Value::String(lines(
            args["n"].as_u64().unwrap_or(1),
        ))))
    }

    fn trim(&self, _args: &Value, raw: &RawOutput, _max: usize) -> Option<String> {
        let text = raw.value.as_str()?;
        if self.grow {
            return Some(text.repeat(2));
        }
        let all: Vec<&str> = text.lines().collect();
        Some(format!(
            "TRIMMED {} lines; first: {}; last: {}",
            all.len(),
            all.first()?,
            all.last()?
        ))
    }
}

struct Cfg {
    key: &'static str,
    tool: &'static str,
    compaction: Compaction,
    grow: bool,
}

impl ToolConfig for Cfg {
    fn key(&self) -> &str {
        self.key
    }
    fn compaction(&self) -> Compaction {
        self.compaction
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool(
                self.tool,
                "print lines",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(Lines { grow: self.grow }),
        }])
    }
}

/// Records what the store held at the moment the person was asked.
struct InspectingBroker {
    store: aibuddy_store::Store,
    seen: std::sync::Mutex<Vec<aibuddy_store::ConfirmRecord>>,
    approve: bool,
}

#[async_trait]
impl aibuddy::confirm::ConfirmBroker for InspectingBroker {
    async fn decide(
        &self,
        request: &aibuddy::confirm::ConfirmRequest,
        _cancel: &CancellationToken,
    ) -> aibuddy::confirm::Decision {
        let recs = self.store.confirm_records(&request.call_id).await.unwrap();
        self.seen.lock().unwrap().extend(recs);
        if self.approve {
            aibuddy::confirm::Decision::Approved {
                digest: request.digest.clone(),
            }
        } else {
            aibuddy::confirm::Decision::Rejected {
                reason: Some("no".into()),
            }
        }
    }
}

const CONFIGS: [(&str, &str, Compaction, bool, bool); 5] = [
    // key, tool, strategy, disposable, trim hook grows
    ("trimmed", "big", Compaction::Trim, false, false),
    ("summarized", "bigsum", Compaction::Summarize, false, false),
    ("dropped", "bigdrop", Compaction::Drop, true, false),
    ("growing", "grow", Compaction::Trim, false, true),
    ("never", "keep", Compaction::None, false, false),
];

struct Env {
    dir: tempfile::TempDir,
    persistence: Persistence,
    runner: Runner,
}

async fn env(summarizer: Option<Arc<dyn Summarizer>>) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut configs: Vec<Arc<dyn ToolConfig>> = CONFIGS
        .iter()
        .map(|(key, tool, compaction, _, grow)| {
            Arc::new(Cfg {
                key,
                tool,
                compaction: *compaction,
                grow: *grow,
            }) as Arc<dyn ToolConfig>
        })
        .collect();
    configs.push(Arc::new(ViewToolCallConfig));
    let mut metas: Vec<ToolConfigMeta> = CONFIGS
        .iter()
        .map(|(key, tool, _, disposable, _)| {
            ToolConfigMeta::fixed(key, key, "test", Risk::ReadOnly, *disposable, &[tool])
        })
        .collect();
    metas.push(aibuddy::tools::view_tool_call::meta());
    let registry = Arc::new(Registry::build(configs, metas).expect("consistent"));
    let data_dir = dir.path().join("data");
    let persistence = Persistence::open(&data_dir, dir.path(), summarizer)
        .await
        .unwrap();
    let mut settings = Settings::default();
    for (key, ..) in CONFIGS {
        settings.tools.enabled.push(key.to_string());
    }
    let runner = Runner {
        run_id: "run_store".into(),
        registry,
        services: Arc::new(Services {
            project_root: dir.path().to_path_buf(),
            data_dir,
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
    };
    Env {
        dir,
        persistence,
        runner,
    }
}

async fn call(e: &Env, name: &str, args: Value) -> CallOutcome {
    let host = HostCaps {
        store: true,
        ..HostCaps::default()
    };
    let toolset = discovery::effective(
        &e.runner.registry,
        &e.runner.services.settings,
        &host,
        &BTreeSet::new(),
    );
    e.runner
        .call(
            &toolset,
            CallRequest {
                id: None,
                name: name.into(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            CollectingSink::new(),
        )
        .await
}

/// The stored record of a call (it must exist).
async fn record(e: &Env, tool_call_id: &str) -> CallRecord {
    e.persistence
        .store
        .get_call(tool_call_id)
        .await
        .unwrap()
        .expect("the call is stored")
}

/// Enough lines to pass the precompaction threshold.
const BIG: u64 = 400;

#[tokio::test]
async fn a_small_result_is_stored_whole_and_left_alone() {
    let e = env(None).await;
    let out = call(&e, "big", json!({"n": 3})).await;
    assert_eq!(out.status, CallStatus::Ok);
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.status, aibuddy_store::CallStatus::Ok);
    assert_eq!(rec.input, json!({"n": 3}));
    assert_eq!(rec.tool, "big");
    assert_eq!(rec.config, "trimmed");
    assert_eq!(rec.model_projection.as_deref(), Some(out.model.as_str()));
    assert_eq!(rec.compaction_state, CompactionState::None);
    let raw = e
        .persistence
        .store
        .read_raw_slice(&out.tool_call_id, 0, 1 << 20)
        .await
        .unwrap();
    assert_eq!(String::from_utf8(raw.bytes).unwrap(), lines(3));
}

#[tokio::test]
async fn a_large_result_is_delivered_whole_then_trimmed_with_a_recovery_pointer() {
    let e = env(None).await;
    let out = call(&e, "big", json!({"n": BIG})).await;
    // The client and the current step got the complete projection.
    assert_eq!(out.model, lines(BIG));
    assert!(estimate_tokens(&out.model) >= PRECOMPACTION_THRESHOLD);
    e.persistence.compactor.wait_idle().await;

    let store = &e.persistence.store;
    let rec = store.get_call(&out.tool_call_id).await.unwrap().unwrap();
    assert_eq!(rec.compaction_state, CompactionState::Compacted);
    assert_eq!(rec.compaction_strategy.as_deref(), Some("trim"));
    let compacted = rec.model_projection.unwrap();
    assert!(
        compacted.starts_with(&format!("TRIMMED {BIG} lines; first: line 0:")),
        "{compacted}"
    );
    assert!(
        compacted.contains("view_tool_call"),
        "tells the model how to recover: {compacted}"
    );
    assert!(compacted.contains(&out.tool_call_id));
    assert!(compacted.len() < out.model.len());
    assert_eq!(
        e.persistence.compactor.cache().get(&out.tool_call_id),
        Some(compacted)
    );

    let pointer = rec.recovery_pointer.unwrap();
    assert_eq!(
        pointer,
        format!("compacted_outputs/run_store/{}.json", out.tool_call_id)
    );
    let doc = store.read_compacted_output(&pointer).await.unwrap();
    assert_eq!(doc["input"], json!({"n": BIG}));
    assert_eq!(doc["output"], json!(lines(BIG)));
    // The raw output in the store is untouched.
    let raw = store
        .read_raw_slice(&out.tool_call_id, 0, 1 << 20)
        .await
        .unwrap();
    assert_eq!(raw.bytes, lines(BIG).into_bytes());

    // view_tool_call recovers it in bounded pages through the same pipeline.
    let page = call(
        &e,
        "view_tool_call",
        json!({"tool_call_id": out.tool_call_id, "limit": 120}),
    )
    .await;
    assert_eq!(page.status, CallStatus::Ok, "{}", page.model);
    assert!(
        page.model.contains("raw output bytes 0..120 of"),
        "{}",
        page.model
    );
    assert!(
        page.model.contains("line 0: the quick brown fox"),
        "{}",
        page.model
    );
    assert!(page.model.contains("\"offset\": 120"), "{}", page.model);
    let second = call(
        &e,
        "view_tool_call",
        json!({"tool_call_id": out.tool_call_id, "offset": 120, "limit": 60}),
    )
    .await;
    let all = lines(BIG);
    assert!(second.model.contains(&all[120..180]), "{}", second.model);
    let unknown = call(
        &e,
        "view_tool_call",
        json!({"tool_call_id": "call_missing"}),
    )
    .await;
    assert_eq!(unknown.status, CallStatus::Error);
    assert_eq!(unknown.stage, Some(aibuddy::contract::Stage::Parameters));
}

/// Summarizes deterministically, after `gate` is opened.
struct GateSummarizer {
    gate: Arc<Notify>,
}

#[async_trait]
impl Summarizer for GateSummarizer {
    async fn summarize(
        &self,
        req: &SummaryRequest<'_>,
        _c: &CancellationToken,
    ) -> Result<String, SummarizeError> {
        self.gate.notified().await;
        Ok(format!(
            "SUMMARY of {}: {} lines",
            req.tool,
            req.text.lines().count()
        ))
    }
}

#[tokio::test]
async fn summarize_runs_in_the_background_without_delaying_the_result() {
    let gate = Arc::new(Notify::new());
    let e = env(Some(Arc::new(GateSummarizer { gate: gate.clone() }))).await;
    // The summarizer is blocked, yet the call returns with the full result.
    let out = call(&e, "bigsum", json!({"n": BIG})).await;
    assert_eq!(out.status, CallStatus::Ok);
    assert_eq!(out.model, lines(BIG));
    let store = &e.persistence.store;
    let mut state = CompactionState::None;
    for _ in 0..500 {
        state = store
            .get_call(&out.tool_call_id)
            .await
            .unwrap()
            .unwrap()
            .compaction_state;
        if state == CompactionState::Pending {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        state,
        CompactionState::Pending,
        "compaction started and waits on the summarizer"
    );
    gate.notify_one();
    e.persistence.compactor.wait_idle().await;
    let rec = store.get_call(&out.tool_call_id).await.unwrap().unwrap();
    assert_eq!(rec.compaction_state, CompactionState::Compacted);
    assert_eq!(rec.compaction_strategy.as_deref(), Some("summarize"));
    let text = rec.model_projection.unwrap();
    assert!(
        text.starts_with(&format!("SUMMARY of bigsum: {BIG} lines")),
        "{text}"
    );
    assert!(rec.recovery_pointer.is_some());
}

#[tokio::test]
async fn summarize_without_a_summarizer_falls_back_to_trim() {
    let e = env(None).await;
    let out = call(&e, "bigsum", json!({"n": BIG})).await;
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.compaction_state, CompactionState::Compacted);
    assert_eq!(rec.compaction_strategy.as_deref(), Some("trim"));
    assert!(rec.model_projection.unwrap().starts_with("TRIMMED"));
}

struct FailingSummarizer;

#[async_trait]
impl Summarizer for FailingSummarizer {
    async fn summarize(
        &self,
        _r: &SummaryRequest<'_>,
        _c: &CancellationToken,
    ) -> Result<String, SummarizeError> {
        Err(SummarizeError("provider returned 529 overloaded".into()))
    }
}

#[tokio::test]
async fn a_failed_summary_is_recorded_and_the_original_stays() {
    let e = env(Some(Arc::new(FailingSummarizer))).await;
    let out = call(&e, "bigsum", json!({"n": BIG})).await;
    assert_eq!(out.status, CallStatus::Ok, "the call itself succeeded");
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.status, aibuddy_store::CallStatus::Ok);
    assert_eq!(rec.compaction_state, CompactionState::Failed);
    assert!(rec.compaction_error.unwrap().contains("529"));
    assert_eq!(rec.model_projection.as_deref(), Some(lines(BIG).as_str()));
    assert_eq!(rec.recovery_pointer, None);
    assert_eq!(e.persistence.compactor.cache().get(&out.tool_call_id), None);
}

#[tokio::test]
async fn disposable_output_is_dropped_without_a_recovery_pointer() {
    let e = env(None).await;
    let out = call(&e, "bigdrop", json!({"n": BIG})).await;
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.compaction_state, CompactionState::Dropped);
    assert_eq!(rec.recovery_pointer, None);
    assert!(rec.model_projection.unwrap().contains("dropped"));
    assert!(!e.dir.path().join("data/compacted_outputs").exists());
    // The raw output is still stored with the call.
    assert_eq!(rec.raw_output, RawOutputLocation::Inline);
}

#[tokio::test]
async fn a_compaction_that_is_not_smaller_keeps_the_original_and_writes_nothing() {
    let e = env(None).await;
    let out = call(&e, "grow", json!({"n": BIG})).await;
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.compaction_state, CompactionState::NotSmaller);
    assert_eq!(rec.model_projection.as_deref(), Some(lines(BIG).as_str()));
    assert!(!e.dir.path().join("data/compacted_outputs").exists());

    let keep = call(&e, "keep", json!({"n": BIG})).await;
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &keep.tool_call_id).await;
    assert_eq!(
        rec.compaction_state,
        CompactionState::None,
        "strategy none never compacts"
    );
}

#[tokio::test]
async fn failed_calls_are_recorded_with_their_stage() {
    let e = env(None).await;
    let out = call(&e, "nope", json!({})).await;
    let bad = call(&e, "big", json!({"n": "many"})).await;
    let store = &e.persistence.store;
    let rec = store.get_call(&out.tool_call_id).await.unwrap().unwrap();
    assert_eq!(rec.status, aibuddy_store::CallStatus::Error);
    assert_eq!(rec.stage, Some(aibuddy::contract::Stage::Discovery));
    let rec = store.get_call(&bad.tool_call_id).await.unwrap().unwrap();
    assert_eq!(rec.stage, Some(aibuddy::contract::Stage::Parameters));
    assert_eq!(rec.input, json!({"n": "many"}));
    let hits = store.search("many", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
}

#[tokio::test]
async fn a_confirm_request_is_durable_before_the_person_is_asked() {
    for approve in [true, false] {
        let mut e = env(None).await;
        let broker = Arc::new(InspectingBroker {
            store: e.persistence.store.clone(),
            seen: Default::default(),
            approve,
        });
        e.runner.broker = broker.clone();
        let out = call(&e, "view_tool_call", json!({"tool_call_id": "x"})).await;
        // view_tool_call is read-only: never asked.
        assert!(broker.seen.lock().unwrap().is_empty(), "{}", out.model);

        // A writes-risk tool: use the same Lines handler with a writes risk.
        let registry = Arc::new(
            Registry::build(
                vec![Arc::new(RiskyCfg) as Arc<dyn ToolConfig>],
                vec![ToolConfigMeta::fixed(
                    "risky",
                    "risky",
                    "test",
                    Risk::Writes,
                    false,
                    &["touch"],
                )],
            )
            .unwrap(),
        );
        e.runner.registry = registry;
        let mut settings = Settings::default();
        settings.tools.enabled.push("risky".into());
        e.runner.services = Arc::new(Services {
            project_root: e.dir.path().to_path_buf(),
            data_dir: e.dir.path().join("data"),
            settings,
            sandbox: Err("no sandbox in this test".into()),
            session_rules: Default::default(),
            processes: Default::default(),
        });
        let out = call(&e, "touch", json!({"n": 1})).await;
        let seen = broker.seen.lock().unwrap().clone();
        assert_eq!(
            seen.len(),
            1,
            "the request was in the store when the person was asked"
        );
        assert_eq!(seen[0].decision, aibuddy_store::Decision::Pending);
        assert_eq!(seen[0].tool_call_id, out.tool_call_id);
        let after = e
            .persistence
            .store
            .confirm_records(&out.tool_call_id)
            .await
            .unwrap();
        assert_eq!(after.len(), 1, "the decision updates the same row");
        let want = if approve {
            aibuddy_store::Decision::Approved
        } else {
            aibuddy_store::Decision::Rejected
        };
        assert_eq!(after[0].decision, want);
        let rec = record(&e, &out.tool_call_id).await;
        let status = if approve { "ok" } else { "rejected" };
        assert_eq!(rec.status.as_str(), status);
    }
}

struct RiskyCfg;

impl ToolConfig for RiskyCfg {
    fn key(&self) -> &str {
        "risky"
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool("touch", "pretend to write", json!({"type": "object"}))?,
            risk: Risk::Writes,
            source: Source::Core,
            handler: Arc::new(Lines { grow: false }),
        }])
    }
}

#[tokio::test]
async fn stopping_cancels_a_pending_compaction_and_keeps_the_original() {
    // The summarizer never answers; a stop must still end the background work.
    let e = env(Some(Arc::new(GateSummarizer {
        gate: Arc::new(Notify::new()),
    })))
    .await;
    let out = call(&e, "bigsum", json!({"n": BIG})).await;
    assert_eq!(out.status, CallStatus::Ok);
    e.persistence.compactor.cancel();
    e.persistence.compactor.wait_idle().await;
    let rec = record(&e, &out.tool_call_id).await;
    assert_eq!(rec.compaction_state, CompactionState::Failed);
    assert_eq!(rec.compaction_error.as_deref(), Some("cancelled"));
    assert_eq!(rec.model_projection.as_deref(), Some(lines(BIG).as_str()));
}

#[tokio::test]
async fn view_tool_call_does_not_reach_calls_of_another_project() {
    let e = env(None).await;
    let mut fin = aibuddy_store::CallFinish::new("call_elsewhere", aibuddy_store::CallStatus::Ok);
    fin.raw_output = b"secret of another project".to_vec();
    e.persistence
        .store
        .record_call(
            aibuddy_store::CallStart {
                tool_call_id: "call_elsewhere".into(),
                run_id: "run_other".into(),
                project_root: Some("/some/other/project".into()),
                tool: "read_file".into(),
                config: "filesystem".into(),
                input: "{}".into(),
                started_at_ms: None,
            },
            fin,
        )
        .await
        .unwrap();
    let out = call(
        &e,
        "view_tool_call",
        json!({"tool_call_id": "call_elsewhere"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(!out.model.contains("secret"), "{}", out.model);
    assert!(out.model.contains("no stored tool call"), "{}", out.model);
}

// --- Checkpoints: concurrent mutating calls (issue 23) ----------------------------------------

/// Writes `args.path` in the project, then waits `args.hold_ms` before it ends.
struct SlowWrite {
    root: std::path::PathBuf,
}

#[async_trait]
impl ToolHandler for SlowWrite {
    async fn run(&self, _ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let path = self.root.join(args["path"].as_str().unwrap_or("x.txt"));
        tokio::fs::write(&path, "written\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(args["hold_ms"].as_u64().unwrap_or(0))).await;
        Ok(RawOutput::json(json!("ok")))
    }
}

struct SlowWriteCfg {
    root: std::path::PathBuf,
}

impl ToolConfig for SlowWriteCfg {
    fn key(&self) -> &str {
        "slow"
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool(
                "slow_write",
                "write a file, then wait",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "hold_ms": {"type": "integer"}}}),
            )?,
            risk: Risk::Writes,
            source: Source::Core,
            handler: Arc::new(SlowWrite {
                root: self.root.clone(),
            }),
        }])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_mutating_calls_each_see_only_their_own_changes() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("old.txt"), "old\n").unwrap();
    let data_dir = dir.path().join("data");
    let persistence = Persistence::open(&data_dir, &project, None).await.unwrap();
    let checkpoints = aibuddy::checkpoints::Checkpoints::open(
        &data_dir,
        &project,
        persistence.store.clone(),
        aibuddy_checkpoint::DEFAULT_MAX_FILE_BYTES,
    )
    .unwrap();
    let registry = Arc::new(
        Registry::build(
            vec![Arc::new(SlowWriteCfg {
                root: project.clone(),
            }) as Arc<dyn ToolConfig>],
            vec![ToolConfigMeta::fixed(
                "slow",
                "slow",
                "test",
                Risk::Writes,
                false,
                &["slow_write"],
            )],
        )
        .expect("consistent"),
    );
    let mut settings = Settings::default();
    settings.tools.enabled = vec!["slow".into()];
    let runner = Arc::new(Runner {
        run_id: "run_concurrent".into(),
        registry,
        services: Arc::new(Services {
            project_root: project.clone(),
            data_dir,
            settings,
            sandbox: Err("no sandbox in this test".into()),
            session_rules: Default::default(),
            processes: Default::default(),
        }),
        broker: Arc::new(ApproveAll),
        recorder: persistence.call_recorder(),
        after_call: Some(persistence.after_call()),
        sandbox_kind: "local".into(),
        checkpoints: Some(Arc::new(checkpoints.clone())),
    });
    let toolset = discovery::effective(
        &runner.registry,
        &runner.services.settings,
        &HostCaps::default(),
        &BTreeSet::new(),
    );
    let spawn = |path: &str, hold_ms: u64, cancel: CancellationToken| {
        let (runner, toolset) = (runner.clone(), toolset.clone());
        let args = json!({"path": path, "hold_ms": hold_ms}).to_string();
        tokio::spawn(async move {
            runner
                .call(
                    &toolset,
                    CallRequest {
                        id: None,
                        name: "slow_write".into(),
                        arguments: args,
                    },
                    cancel,
                    CollectingSink::new(),
                )
                .await
        })
    };
    // The first call writes its file (under the project's call lock) and holds on; the second
    // starts while it holds. Without the lock the first call's change set would hold the
    // second's file too.
    let first = spawn("first.txt", 1500, CancellationToken::new());
    let t = std::time::Instant::now();
    while !project.join("first.txt").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the first call never wrote"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = spawn("second.txt", 0, CancellationToken::new());
    // A third, stopped while it waits for the lock, ends cancelled (not an error) and does nothing.
    let stop = CancellationToken::new();
    let third = spawn("third.txt", 0, stop.clone());
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.cancel();
    let third = third.await.unwrap();
    assert_eq!(third.status, CallStatus::Cancelled, "{:?}", third.error);
    assert_eq!(
        third.error.as_ref().map(|e| e.code.as_str()),
        Some("cancelled")
    );
    assert!(!project.join("third.txt").exists());
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(first.status, CallStatus::Ok, "{:?}", first.error);
    assert_eq!(second.status, CallStatus::Ok, "{:?}", second.error);
    for (out, own) in [(&first, "first.txt"), (&second, "second.txt")] {
        let view = checkpoints
            .changes_for_call(&out.tool_call_id)
            .await
            .unwrap();
        let paths: Vec<&str> = view.files.iter().map(|f| f.change.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![own],
            "{} holds only its own file",
            out.tool_call_id
        );
        assert!(view.complete);
    }
}
