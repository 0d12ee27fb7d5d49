//! Runtime instructions join the system prompt only while their config's tools are active.

use aibuddy::app::{App, AppOptions};

async fn open(settings: Option<&str>) -> (App, tempfile::TempDir, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    if let Some(s) = settings {
        std::fs::create_dir_all(project.path().join(".aibuddy")).unwrap();
        std::fs::write(project.path().join(".aibuddy/settings.json"), s).unwrap();
        // A project's `sandbox.kind` applies only once the person trusts the project.
        let shown = aibuddy::trust::status(project.path(), data.path()).unwrap();
        aibuddy::trust::grant(project.path(), data.path(), &shown.digest).unwrap();
    }
    let app = App::open(AppOptions {
        project: project.path().to_path_buf(),
        data_dir: data.path().to_path_buf(),
    })
    .await
    .unwrap();
    (app, project, data)
}

#[tokio::test]
async fn filesystem_instructions_follow_the_active_tools() {
    let (app, _p, _d) = open(None).await;
    let text = app.instructions("run_a");
    assert!(text.contains("## Tools: filesystem"), "{text}");
    assert!(text.contains("## Tools: execute"), "{text}");

    // An unavailable sandbox makes the fs and execute tools absent: their instructions go too.
    let (app, _p, _d) = open(Some(r#"{"sandbox": {"kind": "e2b"}}"#)).await;
    let text = app.instructions("run_b");
    assert!(!text.contains("## Tools: filesystem"), "{text}");
    assert!(!text.contains("## Tools: execute"), "{text}");

    // Disabling a config removes its instructions as well.
    let (app, _p, _d) = open(Some(r#"{"tools": {"disabled": ["execute"]}}"#)).await;
    let text = app.instructions("run_c");
    assert!(text.contains("## Tools: filesystem"), "{text}");
    assert!(!text.contains("## Tools: execute"), "{text}");
}
