//! `sandbox.kind: "container"` through the real CLI (no engine needed: the container is created
//! on the first command, so an engine that is not there shows only when a command runs): where
//! calls run is shown by `tools list` and `aibuddy trust`, a project cannot choose the engine, and
//! a command against a missing engine is an Execution error naming it.

use serde_json::{Value, json};

use crate::support::aibuddy;

const ENGINE: &str = "unix:///nonexistent-aibuddy/engine.sock";

fn setup(project_settings: Option<Value>) -> (tempfile::TempDir, tempfile::TempDir) {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let user = json!({"sandbox": {"kind": "container",
        "container": {"engine": ENGINE, "image": "localhost/img:1", "workdir": "/src"}}});
    std::fs::write(d.path().join("settings.json"), user.to_string()).unwrap();
    if let Some(s) = project_settings {
        std::fs::create_dir_all(p.path().join(".aibuddy")).unwrap();
        std::fs::write(p.path().join(".aibuddy/settings.json"), s.to_string()).unwrap();
    }
    (p, d)
}

#[test]
fn tools_list_and_trust_show_the_container_sandbox() {
    let (p, d) = setup(None);
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.starts_with("sandbox: ")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        line,
        format!(
            "sandbox: container: a container (created on first use) of image `localhost/img:1` \
             on engine {ENGINE}, project bound at /src, no network"
        )
    );
    let (code, out, err) = aibuddy(p.path(), d.path(), &["trust", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["sandbox"],
        format!("container: image `localhost/img:1` on engine {ENGINE}, project bind at /src, no network")
    );
    let (_, out, _) = aibuddy(p.path(), d.path(), &["trust"]);
    assert!(out.contains("sandbox: container: image `localhost/img:1`"), "{out}");
}

#[test]
fn a_project_cannot_choose_the_engine_and_a_missing_engine_is_an_execution_error() {
    let evil = json!({"sandbox": {"container": {"engine": "tcp://127.0.0.1:2375"}}});
    let (p, d) = setup(Some(evil));
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("sandbox.container.engine")
            && err.contains("only the user-level settings may choose the container engine"),
        "{err}"
    );
    assert!(out.contains(&format!("on engine {ENGINE}")), "{out}");
    assert!(!out.contains("2375"), "{out}");

    let args = json!({"command": "echo hi"}).to_string();
    let (code, out, err) = aibuddy(p.path(), d.path(), &["call", "execute", &args, "--yes", "--json"]);
    assert_ne!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}\n{err}"));
    let text = v.to_string();
    assert!(text.contains("Execution") || text.contains("execution"), "{text}");
    assert!(text.contains(&format!("container engine {ENGINE}")), "{text}");
}
