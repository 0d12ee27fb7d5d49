//! `view_skill` through an open project and the call pipeline: catalog in the config's
//! instructions (names and purposes only), full instructions with references, bounded reference
//! reads with paging, refused escapes, unknown names; project skills override bundled ones and a
//! new project skill appears without reopening.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::RejectAll;
use aibuddy::contract::Stage;
use aibuddy::discovery::Exposure;
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn call(app: &App, args: serde_json::Value) -> CallOutcome {
    // view_skill is read-only: it never asks, so a rejecting broker proves no confirmation.
    let runner = app.runner(
        None,
        Arc::new(RejectAll("no confirmations expected".into())),
    );
    runner
        .call(
            &app.toolset(&Default::default()),
            CallRequest {
                id: None,
                name: "view_skill".into(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

fn setup() -> (tempfile::TempDir, AppOptions) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let skills = root.join(".aibuddy/skills");
    std::fs::create_dir_all(skills.join("deploy/docs")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy this project to staging safely.\n---\n\n# Deploy\n1. Run `make release`.\n2. Check the health endpoint.\n",
    )
    .unwrap();
    let long: String = (1..=1000).map(|i| format!("step {i}\n")).collect();
    std::fs::write(skills.join("deploy/docs/runbook.md"), long).unwrap();
    // Overrides the bundled skill of the same name.
    std::fs::create_dir_all(skills.join("verify-after-edit")).unwrap();
    std::fs::write(
        skills.join("verify-after-edit/SKILL.md"),
        "---\nname: verify-after-edit\ndescription: Project-specific verification.\n---\nRun `make check`.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("secret.txt"), "TOPSECRET").unwrap();
    let opts = AppOptions {
        project: root,
        data_dir: dir.path().join("data"),
    };
    (dir, opts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_skill_end_to_end() {
    let (_dir, opts) = setup();
    let app = App::open(opts.clone()).await.unwrap();
    let rows = app.tools_list();
    let row = rows.iter().find(|r| r.name == "view_skill").unwrap();
    assert_eq!(row.exposure, Exposure::Active);

    // The catalog in the config's instructions: names and purposes only.
    let registry = app.capabilities.registry();
    let (_, rc) = registry.get("view_skill").unwrap();
    let instructions = rc.config.instructions().unwrap();
    assert!(instructions.contains("- deploy: Deploy this project to staging safely."));
    assert!(instructions.contains("- verify-after-edit: Project-specific verification."));
    assert!(
        instructions.contains("- investigate-failing-build: "),
        "bundled skills too"
    );
    assert!(
        !instructions.contains("make release"),
        "bodies stay out of the catalog"
    );

    // Full instructions and the list of references.
    let out = call(&app, json!({"name": "deploy"})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("Run `make release`"), "{}", out.model);
    assert!(
        out.model
            .contains("References (read with view_skill(name, reference)): docs/runbook.md")
    );
    assert_eq!(out.confirm, None);

    // One reference, bounded, with paging.
    let out = call(
        &app,
        json!({"name": "deploy", "reference": "docs/runbook.md"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(
        out.model.contains("(lines 1-400 of 1000)"),
        "{}",
        &out.model[..200]
    );
    assert!(out.model.contains("step 400\n") && !out.model.contains("step 401\n"));
    assert!(
        out.model
            .ends_with("[more: call view_skill again with offset 400]")
    );
    let out = call(
        &app,
        json!({"name": "deploy", "reference": "docs/runbook.md", "offset": 990}),
    )
    .await;
    assert!(
        out.model.contains("(lines 991-1000 of 1000)"),
        "{}",
        out.model
    );
    assert!(!out.model.contains("[more"));

    // Escapes are refused at Authorization; unknown names at Parameters.
    for bad in [
        "../../secret.txt",
        "/etc/passwd",
        "docs/../../../secret.txt",
    ] {
        let out = call(&app, json!({"name": "deploy", "reference": bad})).await;
        assert_eq!(out.stage, Some(Stage::Authorization), "{bad}: {out:?}");
        assert_eq!(out.error.as_ref().unwrap().code, "path_escape");
    }
    let out = call(
        &app,
        json!({"name": "deploy", "reference": "docs/missing.md"}),
    )
    .await;
    assert_eq!(out.stage, Some(Stage::Parameters));
    assert!(
        out.model.contains("docs/runbook.md"),
        "lists the real references: {}",
        out.model
    );
    let out = call(&app, json!({"name": "nope"})).await;
    assert_eq!(out.stage, Some(Stage::Parameters));
    assert!(out.model.contains("deploy"), "{}", out.model);

    // The project's copy overrides the bundled skill.
    let out = call(&app, json!({"name": "verify-after-edit"})).await;
    assert!(out.model.contains("Run `make check`."), "{}", out.model);

    // A skill added while the project is open appears without reopening.
    let skills = opts.project.join(".aibuddy/skills/new-one");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: new-one\ndescription: Added at run time.\n---\nHello.\n",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = call(&app, json!({"name": "new-one"})).await;
        if out.status == CallStatus::Ok {
            assert!(out.model.contains("Hello."));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "new skill never appeared: {}",
            out.model
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_escape_is_refused() {
    let (dir, opts) = setup();
    let link = opts.project.join(".aibuddy/skills/deploy/docs/leak.md");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), &link).unwrap();
    let app = App::open(opts).await.unwrap();
    let out = call(&app, json!({"name": "deploy", "reference": "docs/leak.md"})).await;
    assert_eq!(out.stage, Some(Stage::Authorization), "{out:?}");
    assert!(!out.model.contains("TOPSECRET"));
}
