//! The real CLI with `sandbox.kind: "container"` against a real engine (Podman's API service and
//! the image of `crates/container`'s tests): `aibuddy call execute` runs inside the container, on
//! the project's files, without network, says so, and leaves no container behind.

use serde_json::{Value, json};

use crate::container_engine::engine;
use crate::support::aibuddy;

#[test]
fn a_command_runs_in_the_container_on_the_project_and_nothing_is_left() {
    let Some(engine) = engine() else { return };
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("a.txt"), "from the host\n").unwrap();
    let user = json!({"sandbox": {"kind": "container", "container": {
        "engine": format!("unix://{}", engine.socket.display()), "image": engine.image}}});
    std::fs::write(d.path().join("settings.json"), user.to_string()).unwrap();
    let args =
        json!({"command": "pwd; cat a.txt; ls /sys/class/net; echo inside > b.txt"}).to_string();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &["call", "execute", &args, "--yes", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    let text = v.to_string();
    assert!(
        text.contains("/workspace\\nfrom the host\\nlo\\n"),
        "{text}"
    );
    assert!(text.contains("sandbox: ran in container"), "{text}");
    assert_eq!(
        std::fs::read_to_string(p.path().join("b.txt")).unwrap(),
        "inside\n"
    );
    // The CLI removed its container when it ended.
    let root = p.path().canonicalize().unwrap();
    let ps = engine
        .podman()
        .args(["ps", "--all", "--quiet", "--filter"])
        .arg(format!("label=aibuddy.project={}", root.display()))
        .output()
        .unwrap();
    assert!(ps.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ps.stdout).trim(),
        "",
        "a container was left"
    );
}
