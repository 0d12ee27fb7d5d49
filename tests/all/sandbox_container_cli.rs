//! `sandbox.kind: "container"` through the real CLI, no engine needed (the container is created
//! on the first command; opening needs only the engine's socket to exist, here one nobody
//! answers on): where calls run is shown by `tools list` and `aibuddy trust`, a project cannot
//! choose the engine, and a missing engine leaves the tools absent with the reason, naming it.
//! The adapter itself is tested against a real engine in `crates/container/tests/all`.

use std::os::unix::net::UnixListener;

use serde_json::{Value, json};

use crate::support::aibuddy;

/// A socket where an engine would be (bound, never accepted from), its folder, and its address.
fn engine_socket() -> (tempfile::TempDir, UnixListener, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engine.sock");
    let listener = UnixListener::bind(&path).unwrap();
    (dir, listener, format!("unix://{}", path.display()))
}

fn setup(engine: &str, project_settings: Option<Value>) -> (tempfile::TempDir, tempfile::TempDir) {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let user = json!({"sandbox": {"kind": "container",
        "container": {"engine": engine, "image": "localhost/img:1", "workdir": "/src"}}});
    std::fs::write(d.path().join("settings.json"), user.to_string()).unwrap();
    if let Some(s) = project_settings {
        std::fs::create_dir_all(p.path().join(".aibuddy")).unwrap();
        std::fs::write(p.path().join(".aibuddy/settings.json"), s.to_string()).unwrap();
    }
    (p, d)
}

#[test]
fn tools_list_and_trust_show_the_container_sandbox() {
    let (_dir, _listener, engine) = engine_socket();
    let (p, d) = setup(&engine, None);
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        line,
        format!(
            "sandbox: container: a container (created on first use) of image `localhost/img:1` \
             on engine {engine}, project bound at /src, no network of its own (egress only \
             through the allow-list proxy)"
        )
    );
    // The execute row's confinement (the desktop's tools panel shows the same field).
    let (_, json_out, _) = aibuddy(p.path(), d.path(), &["tools", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&json_out).unwrap();
    let execute = rows.iter().find(|r| r["name"] == "execute").unwrap();
    let conf = execute["confinement"].as_str().unwrap_or_default();
    assert!(conf.starts_with("container (container: "), "{execute}");
    let (code, out, err) = aibuddy(p.path(), d.path(), &["trust", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["sandbox"],
        format!(
            "container: image `localhost/img:1` on engine {engine}, project bind at /src, no network"
        )
    );
    let (_, out, _) = aibuddy(p.path(), d.path(), &["trust"]);
    assert!(
        out.contains("sandbox: container: image `localhost/img:1`"),
        "{out}"
    );
}

#[test]
fn a_project_cannot_choose_the_engine() {
    let (_dir, _listener, engine) = engine_socket();
    let evil = json!({"sandbox": {"container": {"engine": "tcp://127.0.0.1:2375"}}});
    let (p, d) = setup(&engine, Some(evil));
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("sandbox.container.engine")
            && err.contains("only the user-level settings may choose the container engine"),
        "{err}"
    );
    assert!(out.contains(&format!("on engine {engine}")), "{out}");
    assert!(!out.contains("2375"), "{out}");
    // Trusted, the project's image applies; its engine still does not.
    let (code, _, err) = aibuddy(p.path(), d.path(), &["trust", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let other = json!({"sandbox": {"container": {"engine": "tcp://127.0.0.1:2375", "image": "proj/img:2"}}});
    std::fs::write(p.path().join(".aibuddy/settings.json"), other.to_string()).unwrap();
    let (code, _, err) = aibuddy(p.path(), d.path(), &["trust", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("only the user-level settings may choose the container engine"),
        "{err}"
    );
    assert!(
        out.contains(&format!("of image `proj/img:2` on engine {engine}")),
        "{out}"
    );
}

#[test]
fn a_missing_engine_leaves_the_tools_absent_and_names_it() {
    let engine = "unix:///nonexistent-aibuddy/engine.sock";
    let (p, d) = setup(engine, None);
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("sandbox: unavailable: ") && line.contains(engine),
        "{line}"
    );
    let args = json!({"command": "echo hi"}).to_string();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &["call", "execute", &args, "--yes", "--json"],
    );
    assert_ne!(code, 0, "{out}");
    assert!(format!("{out}{err}").contains(engine), "{out}\n{err}");
    assert!(!out.contains("\"hi"), "{out}");
}

#[test]
fn a_remote_engine_runs_with_the_project_synced_and_says_so() {
    // Opening connects nowhere: the address needs no engine behind it.
    let engine = "tcp://build.invalid:2375";
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let settings = |project: &str| {
        json!({"sandbox": {"kind": "container", "container": {"engine": engine,
            "image": "localhost/img:1", "workdir": "/src", "project": project}}})
        .to_string()
    };
    std::fs::write(d.path().join("settings.json"), settings("sync")).unwrap();
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with(&format!(
            "sandbox: container: a container (created on first use) of image `localhost/img:1` \
             on engine {engine}, project copied into the container at /src and its changes \
             brought back after each command"
        )) && line.ends_with("no network"),
        "{line}"
    );
    let (_, json_out, _) = aibuddy(p.path(), d.path(), &["tools", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&json_out).unwrap();
    let execute = rows.iter().find(|r| r["name"] == "execute").unwrap();
    let conf = execute["confinement"].as_str().unwrap_or_default();
    assert!(conf.starts_with("container+sync+nonet"), "{execute}");
    let (code, out, err) = aibuddy(p.path(), d.path(), &["trust", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let summary = v["sandbox"].as_str().unwrap_or_default();
    assert!(
        summary.contains("project sync (copied in, the changes brought back")
            && summary.contains(engine),
        "{summary}"
    );
    // `bind` with that engine stays refused, and says what to use.
    std::fs::write(d.path().join("settings.json"), settings("bind")).unwrap();
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("not on this machine") && out.contains("\"sync\""),
        "{out}"
    );
}
