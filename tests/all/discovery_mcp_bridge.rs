//! The capability plane with a real MCP server process (the stdlib-only fixture server of
//! aibuddy-mcp's tests): MCP tools enter the registry as `mcp:<server>` configs, the count gates
//! decide exposure, `tool_search` activates deferred tools for the following steps of one run
//! only, a `list_changed` re-evaluates the gates, bad schemas and failed servers show as absent
//! with their reasons, and the context rebuild after compaction keeps exactly what retained
//! messages reference. MCP servers are untrusted: a server's own `readOnlyHint` does not spare its
//! tools the confirmation unless the person marked the server `trustAnnotations`.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::contract::Stage;
use aibuddy::discovery::{ContextMessage, Exposure, Presentation, ToolListing};
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use aibuddy::registry::Source;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/mcp/tests/fixtures/misbehaving_server.py")
}

struct Project {
    _dir: tempfile::TempDir,
    opts: AppOptions,
}

/// A project whose person's own (user-level) `mcp.json` has the fixture server `fx` (with
/// `args`) and a server that cannot start. User-level, so no project trust is involved.
fn project(fx_args: &[&str]) -> Project {
    project_with(fx_args, None)
}

/// As [`project`], with `fx`'s `trustAnnotations` set when `trust` is Some.
fn project_with(fx_args: &[&str], trust: Option<bool>) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let mut args = vec![fixture_server().to_string_lossy().into_owned()];
    args.extend(fx_args.iter().map(|s| s.to_string()));
    let mut fx = json!({"command": "python3", "args": args});
    if let Some(trust) = trust {
        fx["trustAnnotations"] = json!(trust);
    }
    std::fs::write(
        data.join("mcp.json"),
        serde_json::to_string_pretty(&json!({"mcpServers": {
            "fx": fx,
            "broken": {"command": "/nonexistent/mcp-server"}
        }}))
        .unwrap(),
    )
    .unwrap();
    let opts = AppOptions {
        project: root,
        data_dir: data,
    };
    Project { _dir: dir, opts }
}

fn row<'a>(rows: &'a [ToolListing], name: &str) -> &'a ToolListing {
    rows.iter().find(|r| r.name == name).unwrap_or_else(|| {
        panic!(
            "no row {name}: {:?}",
            rows.iter().map(|r| &r.name).collect::<Vec<_>>()
        )
    })
}

async fn call(app: &App, run: &str, name: &str, args: serde_json::Value) -> CallOutcome {
    let runner = app.runner(Some(run.to_string()), Arc::new(ApproveAll));
    runner
        .call(
            &app.run_toolset(run),
            CallRequest {
                id: None,
                name: name.to_string(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

async fn wait_until(app: &App, what: &str, cond: impl Fn(&[ToolListing]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = app.tools_list();
        if cond(&rows) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_server_is_active_and_absences_carry_reasons() {
    let p = project(&["--bad-schema"]);
    let app = App::open(p.opts.clone()).await.unwrap();
    let rows = app.tools_list();

    let echo = row(&rows, "mcp__fx__echo");
    assert_eq!(echo.exposure, Exposure::Active, "9 tools pass the gates");
    assert_eq!(echo.source, Source::Mcp("fx".into()));
    assert_eq!(echo.config, "mcp:fx");
    // fx is not marked trustAnnotations: its hints do not lower risk.
    assert_eq!(
        echo.risk,
        aibuddy::registry::Risk::HighImpact,
        "untrusted readOnlyHint"
    );
    assert_eq!(
        row(&rows, "mcp__fx__crash").risk,
        aibuddy::registry::Risk::HighImpact,
        "no annotations"
    );
    assert_eq!(
        row(&rows, "mcp__fx__add").risk,
        aibuddy::registry::Risk::HighImpact,
        "untrusted destructiveHint: false"
    );

    // Bad schemas: left out with a Discovery reason, siblings stay.
    for bad in [
        "mcp__fx__bad_type",
        "mcp__fx__bad_keyword",
        "mcp__fx__no_type",
    ] {
        let r = row(&rows, bad);
        assert_eq!(r.exposure, Exposure::Absent);
        assert!(
            r.absent_reason
                .as_deref()
                .unwrap()
                .starts_with("Discovery:"),
            "{r:?}"
        );
    }
    // A server that cannot start: one absent row with the reason.
    let broken = row(&rows, "mcp__broken__*");
    assert_eq!(broken.exposure, Exposure::Absent);
    assert!(
        broken
            .absent_reason
            .as_deref()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{broken:?}"
    );
    // Nothing deferred: tool_search is absent with its reason.
    let ts = row(&rows, "tool_search");
    assert_eq!(ts.exposure, Exposure::Absent);
    assert_eq!(
        ts.absent_reason.as_deref(),
        Some("nothing is deferred in this run")
    );

    // The MCP tool runs through the whole pipeline.
    let out = call(
        &app,
        "run_1",
        "mcp__fx__echo",
        json!({"message": "hi there"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("hi there"), "{}", out.model);
    // Schema violations are Parameters errors before anything reaches the server.
    let out = call(&app, "run_1", "mcp__fx__add", json!({"a": "x"})).await;
    assert_eq!(out.stage, Some(Stage::Parameters), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_re_evaluates_the_gates() {
    let p = project(&[]);
    let app = App::open(p.opts.clone()).await.unwrap();
    assert_eq!(
        row(&app.tools_list(), "mcp__fx__echo").exposure,
        Exposure::Active
    );
    for name in ["extra_one", "extra_two"] {
        let out = call(&app, "run_x", "mcp__fx__add_tool", json!({"name": name})).await;
        assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    }
    // 11 tools now: the server exceeds the per-server gate and its tools are deferred.
    wait_until(&app, "fx deferred after list_changed", |rows| {
        rows.iter().any(|r| r.name == "mcp__fx__extra_two")
            && rows
                .iter()
                .filter(|r| r.source == Source::Mcp("fx".into()))
                .all(|r| r.exposure == Exposure::Deferred)
    })
    .await;
    let rows = app.tools_list();
    assert_eq!(row(&rows, "tool_search").exposure, Exposure::Active);
    assert_eq!(
        row(&rows, "mcp__fx__extra_two").deferred_reason.as_deref(),
        Some("server `fx` has 11 tools (more than 10): its tools are deferred")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_activates_for_the_run_and_rebuild_follows_context() {
    // 9 fixed + 5 numbered tools: more than 10, so fx is deferred.
    let p = project(&["--tools", "5"]);
    let app = App::open(p.opts.clone()).await.unwrap();
    let rows = app.tools_list();
    assert_eq!(row(&rows, "mcp__fx__echo").exposure, Exposure::Deferred);
    assert_eq!(row(&rows, "tool_search").exposure, Exposure::Active);

    // Before discovery the deferred tool cannot be called (Discovery stage).
    let out = call(&app, "run_a", "mcp__fx__echo", json!({"message": "x"})).await;
    assert_eq!(out.stage, Some(Stage::Discovery), "{out:?}");
    assert!(out.model.contains("tool_search"), "{}", out.model);

    // Provider-native presentation: everything, deferred ones flagged; active-tools: only active.
    let native = app.present_tools("run_a", Presentation::ProviderNative);
    let echo = native.iter().find(|t| t.name == "mcp__fx__echo").unwrap();
    assert!(echo.defer_loading);
    assert!(
        native
            .iter()
            .any(|t| t.name == "tool_search" && !t.defer_loading)
    );
    assert!(
        native
            .iter()
            .any(|t| t.name == "view_skill" && !t.defer_loading)
    );
    let active = app.present_tools("run_a", Presentation::ActiveTools);
    assert!(active.iter().all(|t| !t.name.starts_with("mcp__fx__")));
    assert!(active.iter().any(|t| t.name == "tool_search"));

    // Search activates the best matches for the following steps of this run.
    let out = call(
        &app,
        "run_a",
        "tool_search",
        json!({"query": "echo the message back", "limit": 2}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.starts_with("Activated"), "{}", out.model);
    assert!(out.model.contains("1. mcp__fx__echo"), "{}", out.model);
    assert_eq!(out.client["activated"][0], "mcp__fx__echo");

    let out = call(&app, "run_a", "mcp__fx__echo", json!({"message": "found"})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    let active = app.present_tools("run_a", Presentation::ActiveTools);
    assert!(active.iter().any(|t| t.name == "mcp__fx__echo"));

    // Another run starts with nothing activated.
    let out = call(&app, "run_b", "mcp__fx__echo", json!({"message": "x"})).await;
    assert_eq!(out.stage, Some(Stage::Discovery));

    // Exact selection by name (with and without the server prefix).
    let out = call(
        &app,
        "run_b",
        "tool_search",
        json!({"query": "select:tool_003,mcp__fx__add,nope"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(
        out.model.contains("No deferred tool is named: nope"),
        "{}",
        out.model
    );
    let active: BTreeSet<String> = app.capabilities.discovery.activated("run_b");
    assert_eq!(
        active,
        BTreeSet::from(["mcp__fx__tool_003".to_string(), "mcp__fx__add".to_string()])
    );

    // Compaction rebuilds run_a's context: the echo call is retained -> stays active.
    let kept = app.rebuild_run_context(
        "run_a",
        &[
            ContextMessage::calls(&["read_file"]),
            ContextMessage::calls(&["mcp__fx__echo"]),
        ],
    );
    assert_eq!(kept, BTreeSet::from(["mcp__fx__echo".to_string()]));
    let out = call(&app, "run_a", "mcp__fx__echo", json!({"message": "still"})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    // ...and once the reference has left the context it needs rediscovery.
    let kept = app.rebuild_run_context("run_a", &[ContextMessage::calls(&["read_file"])]);
    assert!(kept.is_empty());
    let out = call(&app, "run_a", "mcp__fx__echo", json!({"message": "gone"})).await;
    assert_eq!(out.stage, Some(Stage::Discovery), "{out:?}");
}

/// Fills in only the name; the schema default fills the age.
struct NameOnly;
#[async_trait::async_trait]
impl aibuddy_mcp::ElicitationBroker for NameOnly {
    async fn elicit(
        &self,
        request: aibuddy_mcp::ElicitationRequest,
    ) -> aibuddy_mcp::ElicitationResponse {
        assert_eq!(request.server, "fx");
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!("Grace"));
        aibuddy_mcp::ElicitationResponse::Accept(m)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_goes_to_the_installed_broker() {
    let p = project(&[]);
    let app = App::open(p.opts.clone()).await.unwrap();
    // Before a broker is installed, requests are declined.
    let out = call(&app, "run_e", "mcp__fx__elicit", json!({})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("decline"), "{}", out.model);
    app.capabilities.set_elicitation_broker(Arc::new(NameOnly));
    let out = call(&app, "run_e", "mcp__fx__elicit", json!({})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(
        out.model.contains("Grace") && out.model.contains("36"),
        "{}",
        out.model
    );
}

async fn call_with(
    app: &App,
    broker: Arc<dyn aibuddy::confirm::ConfirmBroker>,
    name: &str,
    args: serde_json::Value,
) -> CallOutcome {
    let runner = app.runner(Some("run_confirm".to_string()), broker);
    runner
        .call(
            &app.run_toolset("run_confirm"),
            CallRequest {
                id: None,
                name: name.to_string(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

/// Issue 9, "Why" 6: an MCP server's own `readOnlyHint` lowered its tools' risk so they were
/// never confirmed. Now the call is confirmed (and rejected by a broker that rejects) unless the
/// person marked the server `trustAnnotations: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_read_only_hint_does_not_skip_confirmation_unless_trusted() {
    use aibuddy::confirm::RejectAll;
    use aibuddy::registry::Risk;
    for trust in [None, Some(false)] {
        let p = project_with(&[], trust);
        let app = App::open(p.opts.clone()).await.unwrap();
        assert_eq!(
            row(&app.tools_list(), "mcp__fx__echo").risk,
            Risk::HighImpact
        );
        let out = call_with(
            &app,
            Arc::new(RejectAll("no terminal".into())),
            "mcp__fx__echo",
            json!({"message": "sneaky"}),
        )
        .await;
        assert_eq!(out.status, CallStatus::Rejected, "trust {trust:?}: {out:?}");
        assert!(!out.model.contains("echo: sneaky"), "{}", out.model);
    }

    let p = project_with(&[], Some(true));
    let app = App::open(p.opts.clone()).await.unwrap();
    let rows = app.tools_list();
    assert_eq!(row(&rows, "mcp__fx__echo").risk, Risk::ReadOnly);
    assert_eq!(row(&rows, "mcp__fx__add").risk, Risk::Writes);
    assert_eq!(row(&rows, "mcp__fx__crash").risk, Risk::HighImpact);
    let out = call_with(
        &app,
        Arc::new(RejectAll("no terminal".into())),
        "mcp__fx__echo",
        json!({"message": "trusted"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("echo: trusted"), "{}", out.model);
}

/// The same through the CLI: without a terminal and without `--yes` the read-only-hinted tool
/// of an untrusted server is rejected (exit 3); `--yes` approves it.
#[test]
fn the_cli_rejects_an_untrusted_read_only_tool_without_yes() {
    let p = project(&[]);
    let args = r#"{"message":"from the cli"}"#;
    let (code, stdout, stderr) = support::aibuddy(
        &p.opts.project,
        &p.opts.data_dir,
        &["call", "mcp__fx__echo", args, "--json"],
    );
    assert_eq!(code, 3, "stdout: {stdout}\nstderr: {stderr}");
    let out: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(out["status"], "rejected", "{out}");
    let (code, stdout, stderr) = support::aibuddy(
        &p.opts.project,
        &p.opts.data_dir,
        &["call", "mcp__fx__echo", args, "--json", "--yes"],
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("echo: from the cli"), "{stdout}");
}

/// `tools list` names a left-out MCP tool by the name it was given: server `a`'s `b__echo`
/// collides with server `a__b`'s `echo` (`mcp__a__b__echo`) and gets another name; when its
/// schema then becomes unusable, its absent row carries that name, not the default one, which
/// is `a__b`'s working echo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_out_tool_is_listed_under_the_name_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let data = dir.path().join("data");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let fx = fixture_server().to_string_lossy().into_owned();
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {
            "a": {"command": "python3", "args": [fx]},
            "a__b": {"command": "python3", "args": [fx]}
        }})
        .to_string(),
    )
    .unwrap();
    let app = App::open(AppOptions {
        project: root,
        data_dir: data,
    })
    .await
    .unwrap();
    wait_until(&app, "both servers listed", |rows| {
        rows.iter().any(|r| r.name == "mcp__a__echo")
            && rows.iter().any(|r| r.name == "mcp__a__b__echo")
    })
    .await;
    let of_a = |rows: &[ToolListing]| -> Vec<ToolListing> {
        rows.iter()
            .filter(|r| {
                r.source == Source::Mcp("a".into()) && r.name.starts_with("mcp__a__b__echo")
            })
            .cloned()
            .collect()
    };
    let out = call(
        &app,
        "run_1",
        "mcp__a__add_tool",
        json!({"name": "b__echo"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    wait_until(&app, "b__echo listed", |rows| !of_a(rows).is_empty()).await;
    let given = of_a(&app.tools_list())[0].name.clone();
    assert_ne!(given, "mcp__a__b__echo");

    let out = call(
        &app,
        "run_1",
        "mcp__a__add_tool",
        json!({"name": "b__echo", "schema": {"type": "string"}}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    wait_until(&app, "b__echo left out", |rows| {
        of_a(rows).iter().any(|r| r.exposure == Exposure::Absent)
    })
    .await;
    let rows = of_a(&app.tools_list());
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].name, given);
    assert_eq!(rows[0].exposure, Exposure::Absent);
    assert!(
        (rows[0].absent_reason.as_deref()).is_some_and(|r| r.starts_with("Discovery: left out")),
        "{rows:?}"
    );
    // `mcp__a__b__echo` is still `a__b`'s echo alone.
    let all = app.tools_list();
    let echo: Vec<&ToolListing> = all.iter().filter(|r| r.name == "mcp__a__b__echo").collect();
    assert_eq!(echo.len(), 1, "{echo:?}");
    assert_eq!(echo[0].source, Source::Mcp("a__b".into()));
}
