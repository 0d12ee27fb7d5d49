//! Tests of the `execute` config: pure request/scope/projection functions, then real commands
//! through the local sandbox, the pipeline with confirmation, cancellation, and the hard deadline
//! against a stalled sandbox adapter.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_sandbox::{
    Capabilities, EditOutcome, EditPlan, EditRequest, GlobOutcome, GlobRequest, GrepOutcome,
    GrepRequest, ListRequest, Listing, ReadOutcome, ReadRequest, SandboxError, SandboxKind,
    WriteOutcome, WritePlan, WriteRequest,
};
use pretty_assertions::assert_eq;

use super::*;
use crate::contract::Stage;
use crate::events::CollectingSink;
use crate::events::{Event, OutputStream};
use crate::services::{Services, open_sandbox};
use crate::settings::{ExecSettings, Settings};

#[test]
fn the_spool_path_is_the_stores_for_every_call_id() {
    let data = Path::new("/data");
    let store = aibuddy_store::DataPaths::new(data);
    // An agent run's call ids are `<run_id>:<provider id>`: the id is not rewritten.
    for id in ["call_1", "01JRUN0000:call_1", "01JRUN0000:toolu_01.x"] {
        assert_eq!(
            spool_path(data, id),
            Some(store.spool_file(id).unwrap()),
            "{id}"
        );
    }
    assert_eq!(spool_path(data, "../x"), None);
}

fn args(cmd: &str) -> ExecArgs {
    ExecArgs {
        command: cmd.into(),
        timeout_ms: None,
        description: None,
        background: false,
    }
}

#[test]
fn one_config_execute_and_its_process_tools_with_stable_arguments() {
    let tools = ExecuteConfig.tools().unwrap();
    let named: Vec<(&str, Risk)> = tools.iter().map(|t| (t.name(), t.risk)).collect();
    assert_eq!(
        named,
        [
            (NAME, Risk::HighImpact),
            ("process_output", Risk::ReadOnly),
            ("process_input", Risk::HighImpact),
            ("process_stop", Risk::Writes),
            ("process_list", Risk::ReadOnly),
        ]
    );
    for t in &tools {
        assert!(meta().names.covers(t.name()));
    }
    let mut props: Vec<String> = schema()["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    props.sort();
    assert_eq!(
        props,
        ["background", "command", "description", "timeout_ms"]
    );
    let spec = &tools[0].spec;
    assert!(spec.parse_args(r#"{"command":"ls"}"#).is_ok());
    assert!(
        spec.parse_args(r#"{"command":"ls","timeout_ms":600001}"#)
            .is_err()
    );
    assert!(spec.parse_args(r#"{"command":""}"#).is_err());
    assert!(spec.parse_args(r#"{"cmd":"ls"}"#).is_err());
}

#[test]
fn request_from_settings_and_arguments() {
    let root = Path::new("/proj");
    let settings = ExecSettings {
        writable_roots: vec!["~/.cargo".into(), "build-cache".into(), "/opt/x".into()],
        env_include: vec!["NPM_TOKEN".into()],
        network: crate::settings::NetworkSetting::Off,
        max_processes: 100,
        ..ExecSettings::default()
    };
    let req = build_request(
        &args("make"),
        &settings,
        root,
        Some(Path::new("/home/u")),
        None,
    )
    .unwrap();
    assert_eq!(req.timeout, Duration::from_secs(120));
    assert_eq!(req.heartbeat_interval, Duration::from_secs(30));
    assert_eq!(req.cwd, root);
    assert!(!req.network_allowed);
    assert_eq!(req.max_processes, 100);
    assert_eq!(
        ExecSettings::default().max_processes,
        aibuddy_sandbox::aibuddy_exec::DEFAULT_MAX_PROCESSES
    );
    assert_eq!(
        req.writable_roots,
        vec![
            PathBuf::from("/home/u/.cargo"),
            PathBuf::from("/proj/build-cache"),
            PathBuf::from("/opt/x")
        ]
    );
    assert!(req.env.always_drop.contains(&"OPENAI_API_KEY".to_string()));
    assert_eq!(req.env.include, vec!["NPM_TOKEN".to_string()]);

    let mut a = args("make");
    a.timeout_ms = Some(5_000);
    let req = build_request(&a, &settings, root, None, None).unwrap();
    assert_eq!(req.timeout, Duration::from_secs(5));
    a.timeout_ms = Some(600_001);
    let err = build_request(&a, &settings, root, None, None).unwrap_err();
    assert_eq!(err.stage, Stage::Parameters);
}

#[test]
fn credentials_exposed_by_settings_are_resolved_and_home_is_passed() {
    let settings = ExecSettings {
        expose_credentials: vec!["~/.aws".into()],
        ..ExecSettings::default()
    };
    let req = build_request(
        &args("ls"),
        &settings,
        Path::new("/proj"),
        Some(Path::new("/home/u")),
        None,
    )
    .unwrap();
    assert_eq!(req.home.as_deref(), Some(Path::new("/home/u")));
    assert_eq!(req.exposed_credentials, vec![PathBuf::from("/home/u/.aws")]);
}

#[test]
fn both_data_directories_are_hidden_once_each() {
    let default = Path::new("/home/u/.local/share/aibuddy");
    assert_eq!(
        data_dirs(Path::new("/work/d"), default),
        vec![PathBuf::from("/work/d"), default.to_path_buf()]
    );
    assert_eq!(data_dirs(default, default), vec![default.to_path_buf()]);
}

#[test]
fn live_chunks_never_split_characters() {
    let bytes = "aé😀".as_bytes();
    for cut in 0..=bytes.len() {
        let (t1, carry) = decode_carrying(&bytes[..cut]);
        let mut rest = carry;
        rest.extend_from_slice(&bytes[cut..]);
        let (t2, carry2) = decode_carrying(&rest);
        assert_eq!(format!("{t1}{t2}"), "aé😀", "cut at {cut}");
        assert!(carry2.is_empty());
    }
    // Invalid bytes are not carried forever.
    assert_eq!(decode_carrying(b"x\xff").0, "x\u{fffd}");
}

#[test]
fn trim_keeps_header_head_and_tail() {
    let model = format!(
        "exit: code 0\nstatus: completed\n--- output ---\n{}\n--- end of output ---",
        "y".repeat(5_000)
    );
    let t = trim_model(&model, 1_000);
    assert!(t.chars().count() <= 1_000, "{}", t.chars().count());
    assert!(t.starts_with("exit: code 0\nstatus: completed\n--- output ---\n"));
    assert!(t.ends_with("--- end of output ---"));
    assert!(t.contains("more characters trimmed"));
    assert_eq!(trim_model("short", 100), "short");
}

// ------------------------------------------------------------------ real commands

struct Fixture {
    _project: tempfile::TempDir,
    _data: tempfile::TempDir,
    services: Arc<Services>,
}

fn fixture(settings: Settings) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let services = Arc::new(Services {
        project_root: root.clone(),
        data_dir: data.path().to_path_buf(),
        settings,
        sandbox: open_sandbox(&Default::default(), &root),
        session_rules: Default::default(),
        processes: Default::default(),
    });
    Fixture {
        _project: project,
        _data: data,
        services,
    }
}

fn ctx(f: &Fixture, events: Arc<CollectingSink>, cancel: CancellationToken) -> CallContext {
    CallContext {
        call_id: "call_test_exec".into(),
        run_id: "run_test".into(),
        tool: NAME.into(),
        cancel,
        events,
        services: f.services.clone(),
        broker: Arc::new(crate::confirm::RejectAll("tests ask nobody".into())),
    }
}

fn deltas(events: &[Event]) -> (String, String, usize) {
    let (mut out, mut err, mut beats) = (String::new(), String::new(), 0);
    for e in events {
        match e {
            Event::ToolOutputDelta {
                stream: OutputStream::Stdout,
                chunk,
                ..
            } => out.push_str(chunk),
            Event::ToolOutputDelta {
                stream: OutputStream::Stderr,
                chunk,
                ..
            } => err.push_str(chunk),
            Event::Heartbeat { .. } => beats += 1,
            _ => {}
        }
    }
    (out, err, beats)
}

/// The approval's scope names the container a command will run in (the window and the CLI
/// prompt show these lines), and `auto` runs it as it runs a fully confined local command
/// (`Launch::Full`: the container holds the protected paths and the network as that path does).
#[tokio::test]
#[cfg(feature = "container")]
async fn the_scope_of_a_command_in_a_container_names_it() {
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("engine.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let mut settings = Settings::default();
    settings.sandbox.kind = "container".into();
    settings.sandbox.container = Some(json!({
        "engine": format!("unix://{}", sock.display()), "image": "localhost/img:1"
    }));
    let mut f = fixture(settings.clone());
    let services = Arc::get_mut(&mut f.services).unwrap();
    services.sandbox = open_sandbox(&settings.sandbox, &services.project_root);
    assert!(
        services.sandbox.is_ok(),
        "{:?}",
        services.sandbox.as_ref().err()
    );
    let c = ctx(&f, CollectingSink::new(), CancellationToken::new());
    let prepared = ExecuteHandler
        .prepare(&c, &json!({"command": "make"}))
        .await
        .unwrap();
    assert!(
        prepared.scope[0].starts_with("runs in the sandbox container: a container (created on first use) of image `localhost/img:1`"),
        "{:?}",
        prepared.scope
    );
    assert!(
        prepared
            .scope
            .iter()
            .any(|l| l.starts_with("confinement: a container")
                && l.contains("network only through the allow-list proxy (allow: crates.io")),
        "{:?}",
        prepared.scope
    );
    assert_eq!(prepared.launch, Some(crate::approvals::Launch::Full));
}

#[tokio::test]
async fn runs_in_the_project_streams_live_and_projects() {
    let f = fixture(Settings::default());
    let events = CollectingSink::new();
    let c = ctx(&f, events.clone(), CancellationToken::new());
    let a = json!({"command": "pwd; printf 'h\\303\\251llo'; echo oops >&2; exit 2", "description": "demo"});
    let prepared = ExecuteHandler.prepare(&c, &a).await.unwrap();
    assert_eq!(prepared.target, a["command"].as_str().unwrap());
    // Issue 22: the model's description is its claim, kept apart from the app's consequence.
    assert_eq!(prepared.consequence, super::EXECUTE_CONSEQUENCE);
    assert_eq!(prepared.model_says.as_deref(), Some("demo"));
    assert!(prepared.scope[0].starts_with("cwd: "));
    let raw = ExecuteHandler.run(&c, &a).await.unwrap();
    let (out, err, _) = deltas(&events.events());
    let root = f.services.project_root.display().to_string();
    assert_eq!(out, format!("{root}\nhéllo"));
    assert_eq!(err, "oops\n");
    let client = ExecuteHandler.client(&a, &raw);
    assert_eq!(client["exit_code"], json!(2));
    assert_eq!(client["cut"], json!(false));
    assert_eq!(client["cwd"], json!(root));
    assert_eq!(client["stderr_bytes"], json!(5));
    let model = ExecuteHandler.model(&a, &raw);
    assert!(
        model.starts_with("exit: code 2\nstatus: completed\n"),
        "{model}"
    );
    assert!(model.contains("héllo"));
    // Heartbeats and live events never enter the model text.
    assert!(!model.contains("Heartbeat"));
    // The raw output is spooled where the store expects it.
    let spool = raw.spool.clone().unwrap();
    assert_eq!(spool, f.services.data_dir.join("spool/call_test_exec.out"));
    assert_eq!(
        std::fs::read_to_string(&spool).unwrap(),
        format!("{root}\nhéllooops\n")
    );
}

#[tokio::test]
async fn live_deltas_carry_every_character_whole() {
    let f = fixture(Settings::default());
    let events = CollectingSink::new();
    let c = ctx(&f, events.clone(), CancellationToken::new());
    // 3-byte lines: the 64 KiB deliveries cut characters; the deltas never do.
    let a = json!({"command": "yes é | head -n 100000"});
    ExecuteHandler.run(&c, &a).await.unwrap();
    let (out, _, _) = deltas(&events.events());
    assert_eq!(out, "\u{e9}\n".repeat(100_000));
}

#[tokio::test]
async fn heartbeats_reach_the_event_sink_only() {
    let mut settings = Settings::default();
    settings.exec.heartbeat_secs = 1;
    let f = fixture(settings);
    let events = CollectingSink::new();
    let c = ctx(&f, events.clone(), CancellationToken::new());
    let a = json!({"command": "sleep 1.3"});
    let raw = ExecuteHandler.run(&c, &a).await.unwrap();
    let (_, _, beats) = deltas(&events.events());
    assert_eq!(beats, 1);
    assert!(!raw.value.to_string().contains("eartbeat"));
}

#[tokio::test]
async fn stop_ends_the_tree_and_records_cancelled_with_output_so_far() {
    let f = fixture(Settings::default());
    let events = CollectingSink::new();
    let cancel = CancellationToken::new();
    let c = ctx(&f, events.clone(), cancel.clone());
    let a = json!({"command": "echo started; sleep 1000 & while :; do sleep 0.05; done"});
    let canceller = {
        let events = events.clone();
        tokio::spawn(async move {
            while !deltas(&events.events()).0.contains("started") {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            cancel.cancel();
        })
    };
    let err = ExecuteHandler.run(&c, &a).await.unwrap_err();
    canceller.await.unwrap();
    assert_eq!(
        (err.stage, err.code.as_str()),
        (Stage::Execution, "cancelled")
    );
    let details = err.details.unwrap();
    assert!(
        details["partial_model"]
            .as_str()
            .unwrap()
            .contains("started")
    );
    assert!(
        details["partial_model"]
            .as_str()
            .unwrap()
            .contains("status: cancelled")
    );
    assert_eq!(details["client"]["cancelled"], json!(true));
}

#[tokio::test]
async fn through_the_pipeline_with_confirmation() {
    use crate::confirm::{ApproveAll, RejectAll};
    use crate::pipeline::{CallRequest, MemoryRecorder, Runner};
    let f = fixture(Settings::default());
    let registry = Arc::new(
        crate::registry::Registry::build(vec![Arc::new(ExecuteConfig)], vec![meta()]).unwrap(),
    );
    let host = crate::app::host_caps(&f.services);
    let toolset =
        crate::discovery::effective(&registry, &f.services.settings, &host, &BTreeSet::new());
    let runner = |broker: Arc<dyn crate::confirm::ConfirmBroker>| Runner {
        run_id: "run_exec".into(),
        registry: registry.clone(),
        services: f.services.clone(),
        broker,
        recorder: Arc::new(MemoryRecorder::default()),
        after_call: None,
        sandbox_kind: "local".into(),
        checkpoints: None,
    };
    let call = |cmd: &str| CallRequest {
        id: None,
        name: NAME.into(),
        arguments: json!({"command": cmd}).to_string(),
    };
    let marker = f.services.project_root.join("made");
    let rejected = runner(Arc::new(RejectAll("no".into())))
        .call(
            &toolset,
            call("touch made"),
            CancellationToken::new(),
            CollectingSink::new(),
        )
        .await;
    assert_eq!(rejected.stage, Some(Stage::Authorization));
    assert!(!marker.exists(), "a rejected command has no effect");
    let ok = runner(Arc::new(ApproveAll))
        .call(
            &toolset,
            call("touch made && echo done"),
            CancellationToken::new(),
            CollectingSink::new(),
        )
        .await;
    assert!(ok.error.is_none(), "{:?}", ok.error);
    assert!(marker.exists());
    assert!(ok.model.contains("done"));
    let scope = &ok.confirm.as_ref().unwrap().request.scope;
    assert!(
        scope.iter().any(|l| l.starts_with("confinement: ")),
        "{scope:?}"
    );
    assert!(scope.iter().any(|l| l.starts_with("environment withheld")));
}

// ------------------------------------------------------------------ hard deadline

/// A sandbox whose `exec` never returns (a hung remote adapter); everything else is the real one.
#[derive(Debug)]
struct StalledSandbox(Arc<dyn Sandbox>);

#[async_trait]
impl Sandbox for StalledSandbox {
    fn kind(&self) -> SandboxKind {
        self.0.kind()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    fn root(&self) -> &Path {
        self.0.root()
    }
    fn scope(&self, given: &str) -> Result<String, SandboxError> {
        self.0.scope(given)
    }
    async fn list(&self, r: ListRequest, c: CancellationToken) -> Result<Listing, SandboxError> {
        self.0.list(r, c).await
    }
    async fn read(
        &self,
        r: ReadRequest,
        c: CancellationToken,
    ) -> Result<ReadOutcome, SandboxError> {
        self.0.read(r, c).await
    }
    async fn preview_write(
        &self,
        r: WriteRequest,
        c: CancellationToken,
    ) -> Result<WritePlan, SandboxError> {
        self.0.preview_write(r, c).await
    }
    async fn write(
        &self,
        r: WriteRequest,
        c: CancellationToken,
    ) -> Result<WriteOutcome, SandboxError> {
        self.0.write(r, c).await
    }
    async fn preview_edit(
        &self,
        r: EditRequest,
        c: CancellationToken,
    ) -> Result<EditPlan, SandboxError> {
        self.0.preview_edit(r, c).await
    }
    async fn edit(
        &self,
        r: EditRequest,
        c: CancellationToken,
    ) -> Result<EditOutcome, SandboxError> {
        self.0.edit(r, c).await
    }
    async fn glob(
        &self,
        r: GlobRequest,
        c: CancellationToken,
    ) -> Result<GlobOutcome, SandboxError> {
        self.0.glob(r, c).await
    }
    async fn grep(
        &self,
        r: GrepRequest,
        c: CancellationToken,
    ) -> Result<GrepOutcome, SandboxError> {
        self.0.grep(r, c).await
    }
    async fn exec(
        &self,
        _req: ExecRequest,
        _cancel: CancellationToken,
        _sink: Arc<dyn ExecSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn hard_deadline_ends_a_call_whose_sandbox_never_returns() {
    let f = fixture(Settings::default());
    let stalled = StalledSandbox(f.services.sandbox().unwrap().clone());
    let mut req = ExecRequest::new("true", f.services.project_root.clone());
    req.timeout = Duration::from_millis(100);
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let err = execute_on(
        &stalled,
        req,
        &cancel,
        Arc::new(aibuddy_sandbox::aibuddy_exec::NullSink),
        Duration::from_millis(150),
    )
    .await
    .unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(250));
    assert_eq!(
        (err.stage, err.code.as_str()),
        (Stage::Execution, "hard_deadline")
    );
    assert!(
        err.message.contains("hard deadline of 250 ms")
            && err.message.contains("sandbox timeout 100 ms"),
        "{}",
        err.message
    );
    assert!(
        !cancel.is_cancelled(),
        "the caller's own token is left alone"
    );
}

#[tokio::test]
async fn a_prompt_sandbox_is_not_affected_by_the_hard_deadline() {
    let f = fixture(Settings::default());
    let sandbox = f.services.sandbox().unwrap().clone();
    let mut req = ExecRequest::new("trap '' TERM; sleep 1000", f.services.project_root.clone());
    req.timeout = Duration::from_millis(100);
    req.kill_grace = Duration::from_millis(100);
    let out = execute_on(
        sandbox.as_ref(),
        req,
        &CancellationToken::new(),
        Arc::new(aibuddy_sandbox::aibuddy_exec::NullSink),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert!(out.timed_out);
    assert!(!aibuddy_sandbox::aibuddy_exec::group_alive(out.pgid));
}

#[tokio::test]
async fn a_command_cannot_write_outside_the_project() {
    let f = fixture(Settings::default());
    let outside = visible_tempdir();
    let victim = outside.path().join("keep.txt");
    std::fs::write(&victim, "before").unwrap();
    let events = CollectingSink::new();
    let c = ctx(&f, events.clone(), CancellationToken::new());
    let o = outside.path().display();
    let a = json!({"command": format!(
        "echo x > {o}/new.txt || echo denied-new; echo y >> {o}/keep.txt || echo denied-append; \
         echo z > inside.txt && echo ok-inside"
    )});
    let raw = ExecuteHandler.run(&c, &a).await.unwrap();
    let model = ExecuteHandler.model(&a, &raw);
    for want in ["denied-new", "denied-append", "ok-inside"] {
        assert!(model.contains(want), "{want} missing in {model}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "before");
    assert!(!outside.path().join("new.txt").exists());
    assert!(f.services.project_root.join("inside.txt").exists());
    let client = ExecuteHandler.client(&a, &raw);
    assert_eq!(client["confined"], json!(true));
    let label = client["confinement"].as_str().unwrap();
    assert!(label.starts_with("namespaces+landlock-v"), "{label}");
}

#[tokio::test]
async fn the_data_directory_is_hidden_from_commands() {
    // A data directory the sandbox would see (its /tmp is private, which would hide it anyway).
    let data = visible_tempdir();
    std::fs::write(data.path().join("aibuddy.db"), "HISTORY-ROWS").unwrap();
    let mut f = fixture(Settings::default());
    Arc::get_mut(&mut f.services).unwrap().data_dir = data.path().canonicalize().unwrap();
    let c = ctx(&f, CollectingSink::new(), CancellationToken::new());
    let d = f.services.data_dir.display();
    let a = json!({"command": format!(
        "cat {d}/aibuddy.db; echo x > {d}/aibuddy.db || echo denied-write"
    )});
    let raw = ExecuteHandler.run(&c, &a).await.unwrap();
    let model = ExecuteHandler.model(&a, &raw);
    assert!(!model.contains("HISTORY-ROWS"), "{model}");
    assert!(model.contains("denied-write"), "{model}");
    assert_eq!(
        std::fs::read_to_string(data.path().join("aibuddy.db")).unwrap(),
        "HISTORY-ROWS"
    );
}

#[tokio::test]
async fn a_timeout_is_an_execution_error_that_keeps_its_output() {
    let f = fixture(Settings::default());
    let c = ctx(&f, CollectingSink::new(), CancellationToken::new());
    let a = json!({"command": "echo before-timeout; sleep 1000", "timeout_ms": 700});
    let err = ExecuteHandler.run(&c, &a).await.unwrap_err();
    assert_eq!(
        (err.stage, err.code.as_str()),
        (Stage::Execution, "timed_out")
    );
    assert!(
        err.message.contains("timed out after 700 ms"),
        "{}",
        err.message
    );
    let details = err.details.unwrap();
    let partial = details["partial_model"].as_str().unwrap();
    assert!(partial.contains("before-timeout"), "{partial}");
    assert!(partial.contains("status: timed out"), "{partial}");
    assert_eq!(details["client"]["timed_out"], json!(true));
    let spool = details["spool"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(spool).unwrap(), "before-timeout\n");
}

#[tokio::test]
async fn display_cut_agrees_with_the_model_text() {
    let f = fixture(Settings::default());
    let c = ctx(&f, CollectingSink::new(), CancellationToken::new());
    // ~109 KB: fits the capture buffers (no capture gap) but not the 30,000-character model text.
    let a = json!({"command": "seq 1 20000"});
    let raw = ExecuteHandler.run(&c, &a).await.unwrap();
    let client = ExecuteHandler.client(&a, &raw);
    let model = ExecuteHandler.model(&a, &raw);
    assert!(model.chars().count() <= 30_000);
    assert_eq!(client["cut"], json!(true), "{client}");
    let omitted = client["omitted_middle_bytes"].as_u64().unwrap();
    assert!(
        model.contains(&format!("omitted_middle_bytes: {omitted}")),
        "{model}"
    );
    assert!(model.contains(&format!("[... {omitted} bytes omitted ...]")));
}

#[test]
fn refused_hosts_are_named_for_the_model_with_how_to_allow_them() {
    use aibuddy_sandbox::aibuddy_exec::netproxy::{NetEvent, NetReport, Protocol};
    use aibuddy_sandbox::aibuddy_exec::{Confinement, StreamStats};
    let event = |host: &str, allowed: bool, rule: Option<&str>, reason: &str, n: u32| NetEvent {
        host: host.into(),
        port: 443,
        protocol: Protocol::Connect,
        allowed,
        rule: rule.map(str::to_string),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        connections: n,
        first_ms: 0,
    };
    let mut outcome = ExecOutcome {
        termination: Termination::Exited { code: 0 },
        duration: Duration::from_millis(1),
        timed_out: false,
        cancelled: false,
        killed_leftovers: false,
        head: Vec::new(),
        tail: Vec::new(),
        omitted_middle_bytes: 0,
        stdout: StreamStats::default(),
        stderr: StreamStats::default(),
        spool: None,
        confinement: Confinement::Disabled,
        env_dropped: Vec::new(),
        pgid: 1,
        network: None,
        protected: Default::default(),
        sync: None,
    };
    assert_eq!(network_lines(&outcome), None);
    assert_eq!(super::sandbox_line(&outcome), None);
    let mut in_container = outcome.clone();
    in_container.confinement = Confinement::Container {
        engine: "unix:///run/podman/podman.sock".into(),
        image: "debian:12".into(),
        container: "0123456789ab".into(),
        network_isolated: true,
        synced: false,
    };
    assert_eq!(
        super::sandbox_line(&in_container).as_deref(),
        Some("\nsandbox: ran in container 0123456789ab (image `debian:12`), without network")
    );
    // A synced project: what came back and what was refused, names escaped.
    let mut synced = in_container.clone();
    let mut report = aibuddy_sandbox::aibuddy_exec::SyncReport {
        brought_back: 2,
        ..Default::default()
    };
    report.refuse(
        ".git/hooks/pre-commit\u{1b}[2J",
        "git config, hooks or info",
    );
    synced.sync = Some(report);
    let line = super::sandbox_line(&synced).unwrap();
    assert!(
        line.contains("2 brought back") && line.contains("REFUSED 1: .git/hooks/pre-commit"),
        "{line}"
    );
    assert!(!line.contains('\u{1b}'), "{line}");
    // The call's one-line place names the sync too (from the stored confinement).
    let client = serde_json::json!({ "confinement_detail": synced.confinement });
    assert_eq!(
        super::sandbox_of(&client).as_deref(),
        Some("container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock")
    );
    let mut c = synced.confinement.clone();
    if let Confinement::Container { synced, .. } = &mut c {
        *synced = true;
    }
    let client = serde_json::json!({ "confinement_detail": c });
    assert!(
        super::sandbox_of(&client)
            .is_some_and(|l| l.ends_with("project synced (copied in, changes brought back)")),
        "{client}"
    );
    in_container.network = Some(NetReport {
        mode: "proxy: container without a network".into(),
        policy: "allow: crates.io".into(),
        events: Vec::new(),
        events_dropped: 0,
    });
    assert_eq!(
        super::sandbox_line(&in_container).as_deref(),
        Some(
            "\nsandbox: ran in container 0123456789ab (image `debian:12`), network only through the allow-list proxy"
        )
    );
    outcome.network = Some(NetReport {
        mode: "proxy".into(),
        policy: "allow: crates.io".into(),
        events: vec![
            event("crates.io", true, Some("crates.io"), "", 3),
            event("example.com", false, None, "not on exec.network.allow", 2),
            event(
                "evil\u{1b}[2K.example",
                false,
                Some("deny: *.example"),
                "denied by the exec.network.deny entry `*.example`",
                1,
            ),
        ],
        events_dropped: 0,
    });
    assert_eq!(
        network_lines(&outcome).unwrap(),
        "\nnetwork: refused connection to example.com:443 (not on exec.network.allow, 2 \
         connections); the person can add it to exec.network.allow in settings.json\
         \nnetwork: refused connection to evil\\e[2K.example:443 (denied by the exec.network.deny \
         entry `*.example`); the person can remove the entry from exec.network.deny in \
         settings.json\n"
    );
}

/// A directory outside `/tmp` (the namespace path replaces it by a private tmpfs, so a path there
/// is invisible to a command and a denial would prove nothing), wherever the clone is: not under
/// the target directory, which lies under `/tmp` when the repository is cloned there.
fn visible_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("aibuddy-execute-test-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

#[test]
fn the_recovery_line_fits_the_room_kept_for_it_and_says_what_the_spool_lost() {
    let id = "x".repeat(128);
    let big = u64::MAX / 4;
    let line = recovery_line(&id, big, big, Some(1));
    assert!(line.chars().count() <= 500, "{}", line.chars().count());
    assert!(line.contains("the stored output ends at byte 1"), "{line}");
    let line = recovery_line("toolu_1", 100, 50, Some(1000));
    assert_eq!(
        line,
        "\nomitted: output bytes 100..150 are not shown; read them with view_tool_call \
         {\"tool_call_id\": \"toolu_1\", \"offset\": 100, \"limit\": 50} and page on with its \
         next_offset (up to 30000 bytes a page), or narrow the command"
    );
}
