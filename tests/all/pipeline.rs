//! The call pipeline end to end with a real (test-only) tool config: discovery, parameters,
//! authorization with a bound confirm decision, execution, cancellation, projections and records.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aibuddy::confirm::{ApproveAll, ConfirmBroker, Decision, PendingBroker, RejectAll};
use aibuddy::contract::{DefineError, Stage, ToolError, define_tool};
use aibuddy::discovery::{self, HostCaps};
use aibuddy::events::{CallStatus, CollectingSink, Event};
use aibuddy::pipeline::{CallRequest, MemoryRecorder, Runner};
use aibuddy::registry::{
    CallContext, Prepared, RawOutput, Registry, Risk, Source, ToolConfig, ToolConfigMeta, ToolDef,
    ToolHandler,
};
use aibuddy::services::Services;
use aibuddy::settings::Settings;
use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Appends a line to a file in the project: a real effect we can observe (or not).
struct AppendHandler {
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl ToolHandler for AppendHandler {
    async fn prepare(&self, _ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        Ok(Prepared {
            target: args["file"].as_str().unwrap_or_default().to_string(),
            consequence: "appends one line".into(),
            inside_project: true,
            ..Default::default()
        })
    }
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let path = ctx
            .services
            .project_root
            .join(args["file"].as_str().unwrap_or("x"));
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(args["line"].as_str().unwrap_or_default());
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| ToolError::execution("io", e.to_string()))?;
        Ok(RawOutput::json(json!({"appended": args["line"]})))
    }
    fn model(&self, args: &Value, _raw: &RawOutput) -> String {
        format!("appended to {}", args["file"].as_str().unwrap_or_default())
    }
}

/// Waits until cancelled.
struct SleepHandler;
#[async_trait]
impl ToolHandler for SleepHandler {
    async fn run(&self, ctx: &CallContext, _args: &Value) -> Result<RawOutput, ToolError> {
        ctx.events.emit(Event::Heartbeat {
            call_id: ctx.call_id.clone(),
        });
        ctx.cancel.cancelled().await;
        Err(ToolError::execution("cancelled", "stopped by the person"))
    }
}

/// Runs, then cannot read its own result (a stored result of another shape).
struct MisreadHandler;
#[async_trait]
impl ToolHandler for MisreadHandler {
    async fn run(&self, _ctx: &CallContext, _args: &Value) -> Result<RawOutput, ToolError> {
        Ok(RawOutput::json(json!({"unexpected": "shape"})))
    }
    fn project(&self, _args: &Value, _raw: &RawOutput) -> Result<(Value, String), ToolError> {
        Err(ToolError::projection(
            "result_mismatch",
            "the stored result is not a misread result",
        ))
    }
}

struct TestConfig {
    runs: Arc<AtomicUsize>,
}
impl ToolConfig for TestConfig {
    fn key(&self) -> &str {
        "test"
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![
            ToolDef {
                spec: define_tool(
                    "append",
                    "Append a line to a file",
                    json!({"type": "object", "properties": {"file": {"type": "string"}, "line": {"type": "string"}}, "required": ["file", "line"], "additionalProperties": false}),
                )?,
                risk: Risk::Writes,
                source: Source::Core,
                handler: Arc::new(AppendHandler {
                    runs: self.runs.clone(),
                }),
            },
            ToolDef {
                spec: define_tool("wait", "Wait until stopped", json!({"type": "object"}))?,
                risk: Risk::ReadOnly,
                source: Source::Core,
                handler: Arc::new(SleepHandler),
            },
            ToolDef {
                spec: define_tool("misread", "Run, then misread", json!({"type": "object"}))?,
                risk: Risk::ReadOnly,
                source: Source::Core,
                handler: Arc::new(MisreadHandler),
            },
        ])
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    runs: Arc<AtomicUsize>,
    registry: Arc<Registry>,
    recorder: Arc<MemoryRecorder>,
}

fn fixture() -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Registry::build(
        vec![Arc::new(TestConfig { runs: runs.clone() })],
        vec![ToolConfigMeta::fixed(
            "test",
            "Test",
            "test",
            Risk::Writes,
            false,
            &["append", "wait", "misread"],
        )],
    )
    .expect("consistent");
    Fixture {
        dir: tempfile::tempdir().unwrap(),
        runs,
        registry: Arc::new(registry),
        recorder: Arc::new(MemoryRecorder::default()),
    }
}

fn runner(f: &Fixture, broker: Arc<dyn ConfirmBroker>, settings: Settings) -> Runner {
    let mut settings = settings;
    settings.tools.enabled.push("test".into());
    Runner {
        run_id: "run_test".into(),
        registry: f.registry.clone(),
        services: Arc::new(Services {
            project_root: f.dir.path().to_path_buf(),
            data_dir: f.dir.path().join(".data"),
            settings,
            sandbox: Err("no sandbox in this test".into()),
            session_rules: Default::default(),
            processes: Default::default(),
        }),
        broker,
        recorder: f.recorder.clone(),
        after_call: None,
        sandbox_kind: "local".into(),
        checkpoints: None,
    }
}

async fn call(r: &Runner, name: &str, args: &str) -> (aibuddy::pipeline::CallOutcome, Vec<Event>) {
    let toolset = discovery::effective(
        &r.registry,
        &r.services.settings,
        &HostCaps::default(),
        &BTreeSet::new(),
    );
    let sink = CollectingSink::new();
    let out = r
        .call(
            &toolset,
            CallRequest {
                id: None,
                name: name.into(),
                arguments: args.into(),
            },
            CancellationToken::new(),
            sink.clone(),
        )
        .await;
    (out, sink.events())
}

#[tokio::test]
async fn unknown_tool_is_a_discovery_error_and_recorded() {
    let f = fixture();
    let r = runner(&f, Arc::new(ApproveAll), Settings::default());
    let (out, events) = call(&r, "nope", "{}").await;
    assert_eq!(out.status, CallStatus::Error);
    assert_eq!(out.stage, Some(Stage::Discovery));
    assert!(
        out.model.contains("append"),
        "lists active tools: {}",
        out.model
    );
    assert!(out.model.contains("Hint:"));
    let ends = f.recorder.ends.lock().unwrap();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].stage, Some(Stage::Discovery));
    assert!(matches!(
        events.last(),
        Some(Event::ToolFinished {
            status: CallStatus::Error,
            ..
        })
    ));
}

#[tokio::test]
async fn bad_arguments_are_parameters_errors_without_effect() {
    let f = fixture();
    let r = runner(&f, Arc::new(ApproveAll), Settings::default());
    for args in [
        "{\"file\": 3}",
        "{not json",
        "[]",
        "{\"file\":\"a\",\"line\":\"b\",\"x\":1}",
    ] {
        let (out, _) = call(&r, "append", args).await;
        assert_eq!(out.stage, Some(Stage::Parameters), "{args}");
        assert_eq!(out.status, CallStatus::Error);
    }
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    // The raw input is kept even when it is not JSON.
    let starts = f.recorder.starts.lock().unwrap();
    assert_eq!(starts[1].input, Value::String("{not json".into()));
}

#[tokio::test]
async fn rejection_means_no_effect() {
    let f = fixture();
    let r = runner(&f, Arc::new(RejectAll("no".into())), Settings::default());
    let (out, events) = call(&r, "append", r#"{"file":"a.txt","line":"hello"}"#).await;
    assert_eq!(out.status, CallStatus::Rejected);
    assert_eq!(out.stage, Some(Stage::Authorization));
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    assert!(!f.dir.path().join("a.txt").exists());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ConfirmRequested { .. }))
    );
    let rec = out.confirm.expect("decision kept with the call");
    assert!(!rec.approved);
    assert_eq!(rec.request.target, "a.txt");
}

#[tokio::test]
async fn approval_is_bound_to_its_call() {
    let f = fixture();
    let broker = PendingBroker::new();
    let r = Arc::new(runner(&f, Arc::new(broker.clone()), Settings::default()));
    // Call A: approve it properly, keep its digest.
    let r1 = r.clone();
    let a =
        tokio::spawn(async move { call(&r1, "append", r#"{"file":"a.txt","line":"one"}"#).await });
    broker.wait_pending().await;
    let req_a = broker.pending().pop().unwrap();
    assert!(broker.answer(
        &req_a.call_id,
        Decision::Approved {
            digest: req_a.digest.clone()
        }
    ));
    let (out_a, _) = a.await.unwrap();
    assert_eq!(out_a.status, CallStatus::Ok);
    // Call B, same tool, other arguments: replaying A's approval does not authorise it.
    let r2 = r.clone();
    let b =
        tokio::spawn(async move { call(&r2, "append", r#"{"file":"a.txt","line":"two"}"#).await });
    broker.wait_pending().await;
    let req_b = broker.pending().pop().unwrap();
    assert_ne!(req_a.digest, req_b.digest);
    assert!(broker.answer(
        &req_b.call_id,
        Decision::Approved {
            digest: req_a.digest.clone()
        }
    ));
    let (out_b, _) = b.await.unwrap();
    assert_eq!(out_b.status, CallStatus::Rejected);
    assert_eq!(
        std::fs::read_to_string(f.dir.path().join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn auto_approve_writes_inside_project_skips_the_question() {
    let f = fixture();
    let mut s = Settings::default();
    s.confirm.auto_approve_writes = true;
    let r = runner(&f, Arc::new(RejectAll("would reject".into())), s);
    let (out, events) = call(&r, "append", r#"{"file":"b.txt","line":"x"}"#).await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.model);
    assert_eq!(out.model, "appended to b.txt");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ConfirmRequested { .. }))
    );
    let ends = f.recorder.ends.lock().unwrap();
    assert_eq!(ends[0].output, json!({"appended": "x"}));
}

#[tokio::test]
async fn cancellation_records_cancelled() {
    let f = fixture();
    let r = runner(&f, Arc::new(ApproveAll), Settings::default());
    let toolset = discovery::effective(
        &r.registry,
        &r.services.settings,
        &HostCaps::default(),
        &BTreeSet::new(),
    );
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        c2.cancel();
    });
    let sink = CollectingSink::new();
    let out = r
        .call(
            &toolset,
            CallRequest {
                id: Some("prov_1".into()),
                name: "wait".into(),
                arguments: String::new(),
            },
            cancel,
            sink.clone(),
        )
        .await;
    assert_eq!(out.status, CallStatus::Cancelled);
    assert_eq!(out.tool_call_id, "prov_1", "the provider's id is kept");
    assert_eq!(out.stage, Some(Stage::Execution));
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, Event::Heartbeat { .. }))
    );
}

#[tokio::test]
async fn disabled_config_is_not_in_the_run() {
    let f = fixture();
    let mut s = Settings::default();
    s.tools.disabled.push("test".into());
    let r = runner(&f, Arc::new(ApproveAll), s);
    let (out, _) = call(&r, "wait", "{}").await;
    assert_eq!(out.stage, Some(Stage::Discovery));
}

#[tokio::test]
async fn a_result_that_cannot_be_projected_fails_at_projection_and_keeps_the_raw_output() {
    let f = fixture();
    let r = runner(&f, Arc::new(ApproveAll), Settings::default());
    let (out, events) = call(&r, "misread", "{}").await;
    assert_eq!(out.status, CallStatus::Error);
    assert_eq!(out.stage, Some(Stage::Projection));
    assert!(
        out.model.contains("result_mismatch") || out.model.contains("not a misread result"),
        "{}",
        out.model
    );
    assert!(
        !out.model.contains("unexpected"),
        "raw JSON leaked to the model: {}",
        out.model
    );
    let ends = f.recorder.ends.lock().unwrap();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].stage, Some(Stage::Projection));
    assert_eq!(
        ends[0].output,
        json!({"unexpected": "shape"}),
        "raw output recoverable"
    );
    assert!(matches!(
        events.last(),
        Some(Event::ToolFinished {
            status: CallStatus::Error,
            stage: Some(Stage::Projection),
            ..
        })
    ));
}
