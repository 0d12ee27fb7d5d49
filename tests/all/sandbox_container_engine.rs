//! The real CLI with `sandbox.kind: "container"` against a real engine (Podman's API service and
//! the image of `crates/container`'s tests): `aibuddy call execute` runs inside the container, on
//! the project's files, with the network only through the allow-list proxy, says so, and
//! leaves no container behind.

use crate::support::registry::registry;
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

/// `exec.network` holds in the container as on this machine: the listed host is reached through
/// the proxy, an unlisted one is refused without asking (`--yes`, no terminal) and named in the
/// model text, the model's `sandbox:` line says so; with `exec.network: false`, no egress.
#[test]
fn the_network_policy_holds_in_the_container_through_the_proxy() {
    let Some(engine) = engine() else { return };
    let (port, other) = (registry(), registry());
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let curl = |port: u16| {
        format!(
            "NO_PROXY= no_proxy= curl -sS --max-time 10 http://localhost:{port}/ 2>&1; echo \" exit=$?\""
        )
    };
    let args = json!({"command": format!("{}; {}", curl(port), curl(other))}).to_string();
    for network in [
        json!({"allow": [format!("localhost:{port}")]}),
        json!(false),
    ] {
        let user = json!({"sandbox": {"kind": "container", "container": {
            "engine": format!("unix://{}", engine.socket.display()), "image": engine.image}},
            "exec": {"network": network}});
        std::fs::write(d.path().join("settings.json"), user.to_string()).unwrap();
        let (code, out, err) = aibuddy(
            p.path(),
            d.path(),
            &["call", "execute", &args, "--yes", "--json"],
        );
        assert_eq!(code, 0, "{out}\n{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
        let model = v["model"].as_str().unwrap_or_default();
        if network == json!(false) {
            assert!(!model.contains("registry-ok"), "{model}");
            assert!(model.contains("without network"), "{model}");
            continue;
        }
        assert_eq!(model.matches("registry-ok").count(), 1, "{model}");
        assert!(
            model.contains(&format!(
                "network: refused connection to localhost:{other} (not on exec.network.allow); \
                 the person can add it to exec.network.allow in settings.json"
            )),
            "{model}"
        );
        assert!(
            model.contains("sandbox: ran in container")
                && model.contains("network only through the allow-list proxy"),
            "{model}"
        );
    }
}

/// A background process in the container through the real `aibuddy run` (issue 25 in the
/// container sandbox): `process_input` reaches its stdin in two parts, `close_stdin` is its end
/// of file, and `process_output` shows what it made of them and that it ended by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_in_the_container_takes_input_until_its_stdin_is_closed() {
    use aibuddy_provider::ProviderKind;
    use aibuddy_provider::testing::Turn;
    const K: ProviderKind = ProviderKind::Anthropic;
    let Some(engine) = engine() else { return };
    let f = crate::support::cli_run::CliRun::start(K).await;
    f.user_settings(json!({"sandbox": {"kind": "container", "container": {
        "engine": format!("unix://{}", engine.socket.display()), "image": engine.image}}}));
    let calls: [(&str, Value); 5] = [
        (
            "execute",
            json!({"command": "wc -c", "background": true, "description": "a counter"}),
        ),
        (
            "process_input",
            json!({"process_id": "bg1", "input": "hello "}),
        ),
        (
            "process_input",
            json!({"process_id": "bg1", "input": "world\n", "close_stdin": true}),
        ),
        (
            "process_output",
            json!({"process_id": "bg1", "wait_ms": 10000}),
        ),
        (
            "process_output",
            json!({"process_id": "bg1", "wait_ms": 10000}),
        ),
    ];
    for (i, (tool, args)) in calls.into_iter().enumerate() {
        f.server.push(
            Turn::text("Next.")
                .call(&format!("toolu_c{i}"), tool, args)
                .reply(K),
        );
    }
    f.server.push(Turn::text("Done.").reply(K));
    let (code, ev, err) = f
        .events(&["run", "--json", "--yes", "count the bytes"])
        .await;
    assert_eq!(code, 0, "{err}");
    let r: Vec<&Value> = ev.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(r.len(), 5, "{ev:?}");
    let model = |v: &Value| v["model"].as_str().unwrap_or_default().to_string();
    for v in &r {
        assert_eq!(v["status"], "ok", "{v}");
    }
    assert!(
        model(r[1]).contains("wrote 6 bytes to the stdin of process bg1"),
        "{}",
        model(r[1])
    );
    assert!(model(r[2]).contains("wrote 6 bytes to the stdin of process bg1 and closed it"));
    let both = format!("{}{}", model(r[3]), model(r[4]));
    assert!(both.contains("12\n"), "{both}");
    assert!(
        model(r[4]).starts_with("process bg1: ended (exit code 0)"),
        "{}",
        model(r[4])
    );
    f.server.assert_clean();
}

/// `project: "sync"` over the engine's `tcp://` address through the real CLI: the command runs on
/// a copy, its change comes back, a hook it plants does not, and the call says both.
#[test]
fn a_synced_project_over_tcp_gets_the_changes_back_and_not_the_hook() {
    let Some(engine) = engine() else { return };
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("a.txt"), "from the host\n").unwrap();
    let user = json!({"sandbox": {"kind": "container", "container": {
        "engine": format!("tcp://{}", engine.tcp()), "image": engine.image, "project": "sync"}}});
    std::fs::write(d.path().join("settings.json"), user.to_string()).unwrap();
    let args = json!({"command": "cat a.txt; echo inside > b.txt; mkdir -p .git/hooks; \
        echo 'rm -rf ~' > .git/hooks/pre-commit"})
    .to_string();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &["call", "execute", &args, "--yes", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    let text = v.to_string();
    assert!(text.contains("from the host"), "{text}");
    assert!(
        text.contains("project sync:") && text.contains("REFUSED") && text.contains(".git"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path().join("b.txt")).unwrap(),
        "inside\n"
    );
    assert!(!p.path().join(".git/hooks/pre-commit").exists());
    // What the window's cards show of it (the core's one rule over the client projection): the
    // change brought back counted, the planted hook listed as refused.
    let view = aibuddy::tools::execute::call_sync("execute", &v["client"])
        .unwrap_or_else(|| panic!("no sync on the card: {text}"));
    assert!(view.brought_back >= 1, "{view:?}");
    let refused: Vec<String> = view
        .refused
        .iter()
        .map(|n| format!("{:?}", n.path))
        .collect();
    assert!(
        refused
            .iter()
            .any(|p| p.contains(r#"".git/hooks/pre-commit""#)),
        "{refused:?}"
    );
}
