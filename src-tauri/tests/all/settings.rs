//! The settings pages and the catalog's servers through tauri's mock runtime, on a real core app
//! over temporary folders: writes land in the files the CLI reads (read back through the CLI's own
//! loaders), keys go to the OS keyring and never come back, refused values come back located,
//! and `reconnect_server` restarts a real MCP server from `.tools/mcp`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy_desktop::ShellState;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

struct Fixture {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    project: PathBuf,
    data: PathBuf,
    _tmp: tempfile::TempDir,
}

fn fixture(user_mcp: Option<&str>) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("project"), base.join("data"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    if let Some(text) = user_mcp {
        std::fs::write(data.join("mcp.json"), text).unwrap();
    }
    let opts = AppOptions {
        project: project.clone(),
        data_dir: data.clone(),
    };
    let core = tauri::async_runtime::block_on(App::open(opts)).unwrap();
    let app = aibuddy_desktop::wire(mock_builder(), ShellState::new(core))
        .build(aibuddy_desktop::context())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Fixture {
        _app: app,
        window,
        project,
        data,
        _tmp: tmp,
    }
}

fn invoke(f: &Fixture, cmd: &str, body: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(&f.window, request).map(|b| b.deserialize::<Value>().unwrap())
}

#[test]
fn a_provider_entry_written_from_the_window_is_what_the_cli_reads() {
    let f = fixture(None);
    let entry =
        json!({"kind": "openai-chat", "model": "qwen3:8b", "base_url": "http://127.0.0.1:9/v1"});
    let out = invoke(
        &f,
        "set_setting",
        json!({"level": "user", "path": ["providers", "local"], "value": entry}),
    )
    .unwrap();
    assert_eq!(out["problems"], json!([]));
    assert_eq!(out["written"]["trust"], json!({"kind": "not_concerned"}));
    invoke(
        &f,
        "set_setting",
        json!({"level": "user", "path": ["providers", "default"], "value": "local"}),
    )
    .unwrap();
    // The CLI's loader, on the same folders.
    let loaded = aibuddy::trust::load_settings(&f.data, &f.project);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let route = loaded
        .settings
        .providers
        .resolve(None, &aibuddy_provider::BaseUrlOverrides::default())
        .unwrap();
    assert_eq!(
        (
            route.name.as_str(),
            route.model.as_str(),
            route.base_url.as_str()
        ),
        ("local", "qwen3:8b", "http://127.0.0.1:9/v1")
    );
    // A section the pages do not edit (remote sandbox settings may hold keys) stays out.
    let file = f.data.join("settings.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let with_sandbox = text.replacen(
        '{',
        "{\"sandbox\": {\"e2b\": {\"api_key\": \"e2b-secret\"}},",
        1,
    );
    std::fs::write(&file, with_sandbox).unwrap();
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["user"]["providers"]["local"], entry);
    assert!(!pages.to_string().contains("e2b-secret"));
    assert_eq!(pages["provider_keys"][0]["name"], json!("local"));
    assert_eq!(pages["trust"], json!("not_needed"));
}

#[test]
fn a_refused_value_comes_back_located_and_nothing_is_written() {
    let f = fixture(None);
    let file = f.data.join("settings.json");
    std::fs::write(&file, "{\n  \"exec\": {\n    \"network\": true\n  }\n}\n").unwrap();
    let out = invoke(
        &f,
        "set_setting",
        json!({"level": "user", "path": ["exec", "writable_roots"], "value": "not-a-list"}),
    )
    .unwrap();
    assert_eq!(out["written"], Value::Null);
    let problem = &out["problems"][0];
    assert_eq!(problem["field"], json!("exec.writable_roots"));
    assert_eq!(problem["file"], json!(file.display().to_string()));
    assert!(problem["line"].as_u64().is_some(), "{problem}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"exec\": {\n    \"network\": true\n  }\n}\n"
    );
    // Only the pages' own fields may be written.
    let err = invoke(
        &f,
        "set_setting",
        json!({"level": "user", "path": ["sandbox", "kind"], "value": "e2b"}),
    )
    .unwrap_err();
    assert_eq!(err["stage"], json!("Parameters"), "{err}");
}

#[test]
fn max_processes_round_trips_and_a_project_value_above_the_user_level_is_not_applied() {
    let f = fixture(None);
    let set = |level: &str, value: Value| {
        invoke(
            &f,
            "set_setting",
            json!({"level": level, "path": ["exec", "max_processes"], "value": value}),
        )
        .unwrap()
    };
    let written = set("user", json!(100));
    assert_eq!(written["problems"], json!([]), "{written}");
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["user"]["exec"]["max_processes"], json!(100));
    assert_eq!(
        aibuddy::trust::load_settings(&f.data, &f.project)
            .settings
            .exec
            .max_processes,
        100
    );

    // Lower at the project level: narrows, applies untrusted.
    assert_eq!(set("project", json!(50))["problems"], json!([]));
    let loaded = aibuddy::trust::load_settings(&f.data, &f.project);
    assert_eq!(loaded.settings.exec.max_processes, 50);
    assert!(loaded.widening.is_empty(), "{:?}", loaded.widening);
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["project"]["exec"]["max_processes"], json!(50));

    // Higher at the project level: written (the person wrote it) but it widens, so an untrusted
    // project keeps the user level's cap.
    assert_eq!(set("project", json!(200))["problems"], json!([]));
    let loaded = aibuddy::trust::load_settings(&f.data, &f.project);
    assert_eq!(loaded.settings.exec.max_processes, 100);
    let widening: Vec<_> = loaded.widening.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(widening, vec!["exec.max_processes"]);

    // Out of range: refused on the field, nothing written.
    let project_file = f.project.join(".aibuddy/settings.json");
    let before = std::fs::read_to_string(&project_file).unwrap();
    for bad in [json!(0), json!(4_194_305), json!(-1), json!("64")] {
        let out = set("project", bad.clone());
        assert_eq!(out["written"], Value::Null, "{bad}: {out}");
        assert_eq!(
            out["problems"][0]["field"],
            json!("exec.max_processes"),
            "{bad}: {out}"
        );
    }
    assert_eq!(std::fs::read_to_string(&project_file).unwrap(), before);
    // Unset: the user level's value applies again.
    assert_eq!(
        invoke(
            &f,
            "set_setting",
            json!({"level": "project", "path": ["exec", "max_processes"], "value": null}),
        )
        .unwrap()["problems"],
        json!([])
    );
    assert_eq!(
        aibuddy::trust::load_settings(&f.data, &f.project)
            .settings
            .exec
            .max_processes,
        100
    );
}

/// `exec.network` from the window: off, the default registries, or allow and deny lists, read
/// back by the CLI's loader; a bad entry refused on the field with nothing written.
#[test]
fn network_lists_round_trip_and_a_bad_entry_is_refused_on_the_field() {
    use aibuddy::settings::NetworkSetting;
    let f = fixture(None);
    let set = |value: Value| {
        invoke(
            &f,
            "set_setting",
            json!({"level": "user", "path": ["exec", "network"], "value": value}),
        )
        .unwrap()
    };
    let network = || {
        aibuddy::trust::load_settings(&f.data, &f.project)
            .settings
            .exec
            .network
    };
    assert_eq!(set(json!(false))["problems"], json!([]));
    assert_eq!(network(), NetworkSetting::Off);
    assert_eq!(set(json!(true))["problems"], json!([]));
    assert_eq!(network(), NetworkSetting::Registries);
    let lists = json!({"allow": ["crates.io", "*.npmjs.org", "localhost:5173", "*"], "deny": ["evil.example:443"]});
    assert_eq!(set(lists.clone())["problems"], json!([]));
    assert_eq!(
        network(),
        NetworkSetting::Lists {
            allow: Some(vec![
                "crates.io".into(),
                "*.npmjs.org".into(),
                "localhost:5173".into(),
                "*".into()
            ]),
            deny: vec!["evil.example:443".into()],
        }
    );
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["user"]["exec"]["network"], lists);
    let file = f.data.join("settings.json");
    let before = std::fs::read_to_string(&file).unwrap();
    for bad in [
        json!({"allow": ["http://crates.io/"], "deny": []}),
        json!({"allow": ["crates.io:99999"], "deny": []}),
        json!({"allow": ["*.*.x"], "deny": []}),
    ] {
        let out = set(bad.clone());
        assert_eq!(out["written"], Value::Null, "{bad}: {out}");
        assert_eq!(
            out["problems"][0]["field"],
            json!("exec.network"),
            "{bad}: {out}"
        );
        assert!(
            out["problems"][0]["message"]
                .as_str()
                .unwrap()
                .contains("not a network entry"),
            "{out}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

/// `exec.protected_paths` at both levels and `exec.unprotected_paths` at the user level only: a
/// project value that would widen authority is refused on the field, never written.
#[test]
fn protected_paths_round_trip_and_unprotected_paths_only_at_the_user_level() {
    let f = fixture(None);
    let set = |level: &str, field: &str, value: Value| {
        invoke(
            &f,
            "set_setting",
            json!({"level": level, "path": ["exec", field], "value": value}),
        )
        .unwrap()
    };
    assert_eq!(
        set("user", "protected_paths", json!(["Makefile"]))["problems"],
        json!([])
    );
    assert_eq!(
        set("project", "protected_paths", json!([".github/workflows/"]))["problems"],
        json!([])
    );
    assert_eq!(
        set("user", "unprotected_paths", json!([".idea"]))["problems"],
        json!([])
    );
    let project_file = f.project.join(".aibuddy/settings.json");
    let before = std::fs::read_to_string(&project_file).unwrap();
    let out = set("project", "unprotected_paths", json!([".git/hooks"]));
    assert_eq!(out["written"], Value::Null, "{out}");
    assert_eq!(out["problems"][0]["field"], json!("exec.unprotected_paths"));
    assert!(
        out["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("only the user-level settings may remove protected paths"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&project_file).unwrap(), before);
    for bad in [json!(["../x"]), json!(["/etc"])] {
        let out = set("user", "protected_paths", bad.clone());
        assert_eq!(out["written"], Value::Null, "{bad}: {out}");
        assert_eq!(out["problems"][0]["field"], json!("exec.protected_paths"));
    }
    let loaded = aibuddy::trust::load_settings(&f.data, &f.project);
    // The project's list leaves out the person's `Makefile`: untrusted, the union applies, and
    // the settings say so (a project may add protected paths, never drop the person's).
    let fields: Vec<&str> = loaded.problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["exec.protected_paths"], "{:?}", loaded.problems);
    assert_eq!(
        loaded.settings.exec.protected_paths,
        vec!["Makefile".to_string(), ".github/workflows/".to_string()]
    );
    assert_eq!(
        loaded.settings.exec.unprotected_paths,
        vec![".idea".to_string()]
    );
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["user"]["exec"]["unprotected_paths"], json!([".idea"]));
    assert_eq!(
        pages["project"]["exec"]["protected_paths"],
        json!([".github/workflows/"])
    );
}

/// The agent's time limits, written from the window: shown back, applied to the run options the
/// desktop builds (`AgentOptions::from_settings`), a project value above the user level not
/// applied untrusted, out-of-range values refused with nothing written.
#[test]
fn agent_time_limits_round_trip_and_a_longer_project_value_is_not_applied() {
    use aibuddy::agent::AgentOptions;
    let f = fixture(None);
    let set = |level: &str, field: &str, value: Value| {
        invoke(
            &f,
            "set_setting",
            json!({"level": level, "path": ["agent", field], "value": value}),
        )
        .unwrap()
    };
    let limits = || {
        let o = AgentOptions::from_settings(
            &aibuddy::trust::load_settings(&f.data, &f.project).settings,
        );
        (
            o.step_timeout.as_secs(),
            o.keepalive_timeout.as_secs(),
            o.idle_timeout.as_secs(),
        )
    };
    assert_eq!(limits(), (1800, 900, 90), "the defaults");
    for (field, value) in [
        ("step_timeout_secs", 600),
        ("keepalive_timeout_secs", 300),
        ("idle_timeout_secs", 45),
    ] {
        let written = set("user", field, json!(value));
        assert_eq!(written["problems"], json!([]), "{written}");
    }
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(
        pages["user"]["agent"],
        json!({"step_timeout_secs": 600, "keepalive_timeout_secs": 300, "idle_timeout_secs": 45})
    );
    assert_eq!(limits(), (600, 300, 45));

    // Shorter at the project level: narrows, applies untrusted.
    assert_eq!(
        set("project", "step_timeout_secs", json!(60))["problems"],
        json!([])
    );
    assert_eq!(limits(), (60, 300, 45));
    // Longer: written (the person wrote it), but it widens: the user level's limit stays.
    assert_eq!(
        set("project", "step_timeout_secs", json!(3600))["problems"],
        json!([])
    );
    let loaded = aibuddy::trust::load_settings(&f.data, &f.project);
    let widening: Vec<_> = loaded.widening.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(widening, vec!["agent.step_timeout_secs"]);
    assert_eq!(limits(), (600, 300, 45));

    // Out of range or not a whole number of seconds: refused on the field, nothing written.
    let project_file = f.project.join(".aibuddy/settings.json");
    let before = std::fs::read_to_string(&project_file).unwrap();
    for bad in [json!(0), json!(86_401), json!(-5), json!(1.5), json!("60")] {
        let out = set("project", "idle_timeout_secs", bad.clone());
        assert_eq!(out["written"], Value::Null, "{bad}: {out}");
        assert_eq!(
            out["problems"][0]["field"],
            json!("agent.idle_timeout_secs"),
            "{bad}: {out}"
        );
    }
    assert_eq!(std::fs::read_to_string(&project_file).unwrap(), before);
    // Unset at the user level: the default applies again.
    assert_eq!(
        set("user", "idle_timeout_secs", Value::Null)["problems"],
        json!([])
    );
    assert_eq!(limits(), (600, 300, 90));
}

#[test]
fn a_provider_key_goes_to_the_keyring_and_never_comes_back() {
    let f = fixture(None);
    let name = format!("aibuddy-desktop-test-{}", std::process::id());
    let secret = "sk-desktop-settings-test-9f2c";
    invoke(
        &f,
        "set_setting",
        json!({"level": "user", "path": ["providers", name], "value": {"kind": "openai-chat", "model": "m", "base_url": "http://127.0.0.1:9/v1"}}),
    )
    .unwrap();
    match invoke(&f, "set_provider_key", json!({"name": name, "key": secret})) {
        Ok(state) => {
            assert_eq!(state, json!("set"));
            // Stored where `aibuddy run` looks for it.
            let got = aibuddy_provider::keys::keyring_get(&name).unwrap().unwrap();
            assert_eq!(got.expose(), secret);
            let pages = invoke(&f, "settings_pages", json!({})).unwrap();
            assert!(!pages.to_string().contains(secret));
            let key = pages["provider_keys"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == json!(name))
                .unwrap();
            assert_eq!(key["key"], json!("set"));
            let removed = invoke(&f, "remove_provider_key", json!({"name": name})).unwrap();
            assert_eq!(removed, json!("not_set"));
            assert!(
                aibuddy_provider::keys::keyring_get(&name)
                    .unwrap()
                    .is_none()
            );
        }
        Err(err) => {
            // Only where the platform refuses keyutils (containers): a typed error without the key.
            assert!(
                !aibuddy_provider::keys::keyring_usable(),
                "the keyring works here but the key was refused: {err}"
            );
            assert_eq!(err["stage"], json!("Execution"), "{err}");
            assert!(!err.to_string().contains(secret));
        }
    }
    // Nothing was written to a file.
    let settings = std::fs::read_to_string(f.data.join("settings.json")).unwrap();
    assert!(!settings.contains(secret));
    let err = invoke(&f, "set_provider_key", json!({"name": name, "key": "  "})).unwrap_err();
    assert_eq!(err["stage"], json!("Parameters"));
}

#[test]
fn mcp_servers_are_added_validated_inline_and_removed() {
    let f = fixture(None);
    let bad = invoke(
        &f,
        "put_mcp_server",
        json!({"level": "user", "name": "web", "entry": {"url": "ftp://example.com"}}),
    )
    .unwrap();
    assert_eq!(bad["written"], Value::Null);
    assert!(
        bad["problems"][0]["field"]
            .as_str()
            .unwrap()
            .starts_with("mcpServers.web"),
        "{bad}"
    );
    assert!(!f.data.join("mcp.json").exists());
    let ok = invoke(
        &f,
        "put_mcp_server",
        json!({"level": "user", "name": "web", "entry": {"url": "https://example.com/mcp"}}),
    )
    .unwrap();
    assert_eq!(ok["problems"], json!([]));
    let loaded = aibuddy_mcp::load_server_configs(&f.project, Some(&f.data));
    assert_eq!(loaded.servers[0].name, "web");
    let pages = invoke(&f, "settings_pages", json!({})).unwrap();
    assert_eq!(pages["mcp_servers"][0]["level"], json!("user"));
    invoke(
        &f,
        "remove_mcp_server",
        json!({"level": "user", "name": "web"}),
    )
    .unwrap();
    assert!(
        aibuddy_mcp::load_server_configs(&f.project, Some(&f.data))
            .servers
            .is_empty()
    );
}

fn tools_dir() -> PathBuf {
    let dir = std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/mcp"));
    assert!(
        dir.join(".installed").exists(),
        "the real MCP servers are not installed at {}; run `make test`",
        dir.display()
    );
    dir
}

fn server_state(f: &Fixture, name: &str) -> Value {
    let servers = invoke(f, "list_servers", json!({})).unwrap();
    servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == json!(name))
        .cloned()
        .unwrap_or(Value::Null)
}

fn wait_connected(f: &Fixture, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = server_state(f, name);
        if s["state"]["kind"] == json!("connected") || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn reconnect_server_restarts_a_real_server() {
    let memory = tools_dir().join("node/node_modules/.bin/mcp-server-memory");
    let tmp = tempfile::tempdir().unwrap();
    let starts = tmp.path().join("starts");
    let script = format!(
        "echo start >> '{}'; exec '{}'",
        starts.display(),
        memory.display()
    );
    let config = json!({"mcpServers": {"mem": {"command": "sh", "args": ["-c", script],
        "env": {"MEMORY_FILE_PATH": tmp.path().join("m.jsonl").display().to_string()}}}});
    let f = fixture(Some(&config.to_string()));
    let before = wait_connected(&f, "mem");
    assert_eq!(before["state"]["kind"], json!("connected"), "{before}");
    let tools = before["tool_count"].as_u64().unwrap();
    assert!(tools > 0);
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 1);
    assert_eq!(
        invoke(&f, "reconnect_server", json!({"name": "mem"})).unwrap(),
        json!(true)
    );
    let after = wait_connected(&f, "mem");
    assert_eq!(after["state"]["kind"], json!("connected"), "{after}");
    assert_eq!(after["tool_count"].as_u64(), Some(tools));
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 2);
    let err = invoke(&f, "reconnect_server", json!({"name": "nope"})).unwrap_err();
    assert_eq!(err["stage"], json!("Discovery"), "{err}");
    let skills = invoke(&f, "list_skills", json!({})).unwrap();
    assert!(skills["skills"].as_array().is_some());
}
