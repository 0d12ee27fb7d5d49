//! `mcp_login` / `mcp_logout` / `mcp_logins` through tauri's mock runtime, on a real core app over
//! temporary folders, against a real OAuth-protected MCP server on 127.0.0.1
//! (`crates/mcp/tests/fixtures/oauth_server.py`: registration, PKCE, tokens). The "browser" is an
//! HTTP client following the authorization URL and its redirect to the loopback listener. The
//! token lands in the plane's token vault (the one the hosts give the OS keyring as; this
//! container's keyring is unavailable, so the vault here is the in-memory one) and nowhere under
//! the project or data folders (settings, SQLite, logs) nor in any event; the server ends
//! connected with its tool. A server of an untrusted project's mcp.json is refused.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::plane::PlaneOptions;
use aibuddy_desktop::ShellState;
use aibuddy_desktop::mcp_login::{McpLogins, SERVERS_CHANGED};
use aibuddy_mcp::oauth::{MemoryVault, TokenVault};
use serde_json::{Value, json};
use tauri::{Listener, Manager};

struct OAuthServer(Child);

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the fixture; returns it and its MCP URL.
fn oauth_server() -> (OAuthServer, String) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/mcp/tests/fixtures/oauth_server.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().strip_prefix("PORT ").unwrap().parse().unwrap();
    (OAuthServer(child), format!("http://127.0.0.1:{port}/mcp"))
}

fn server_state(w: &support::Window, name: &str) -> String {
    let servers = w.invoke("list_servers", json!({})).unwrap();
    servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["state"]["kind"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

fn wait_state(w: &support::Window, name: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let state = server_state(w, name);
        if state == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} stayed {state}, expected {want}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every byte of every file under `dir` (settings, SQLite, WAL, logs).
fn files_contain(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
            {
                hits.push(path.display().to_string());
            }
        }
    }
    hits
}

#[test]
fn login_keeps_the_token_in_the_vault_only_and_the_server_connects() {
    let (_server, url) = oauth_server();
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("project"), base.join("data"));
    std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {"remote": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    // A project server, in a project nobody trusted.
    std::fs::write(
        project.join(".aibuddy/mcp.json"),
        json!({"mcpServers": {"proj": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();

    let vault = Arc::new(MemoryVault::default());
    let plane = PlaneOptions {
        mcp_connect_wait: Duration::from_secs(30),
        watch_skills: false,
        mcp_token_vault: Some(vault.clone()),
        ..PlaneOptions::default()
    };
    let core = tauri::async_runtime::block_on(App::open_with(
        AppOptions {
            project: project.clone(),
            data_dir: data.clone(),
        },
        plane.clone(),
    ))
    .unwrap();
    let w = support::window(ShellState::new(core).with_plane(plane));
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = events.clone();
    w.app.listen_any(SERVERS_CHANGED, move |event| {
        seen.lock().unwrap().push(event.payload().to_owned());
    });
    let all_events: Arc<Mutex<Vec<String>>> = Arc::default();
    for name in [
        "run-event",
        "project-changed",
        "trust-changed",
        SERVERS_CHANGED,
    ] {
        let seen = all_events.clone();
        w.app.listen_any(name, move |event| {
            seen.lock().unwrap().push(event.payload().to_owned());
        });
    }
    wait_state(&w, "remote", "needs_login");
    assert_eq!(server_state(&w, "proj"), "untrusted");

    // The untrusted project's server is refused before anything is contacted.
    let opened: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = opened.clone();
    w.app
        .state::<McpLogins>()
        .set_opener(Arc::new(move |url: &str| {
            log.lock().unwrap().push(url.to_owned());
            let url = url.to_owned();
            tauri::async_runtime::spawn(async move {
                // The browser: follows the authorization URL and its redirect to the loopback.
                let _ = reqwest::get(&url).await;
            });
            Ok(())
        }));
    let refused = w
        .invoke("mcp_login", json!({"server": "proj"}))
        .unwrap_err();
    assert_eq!(refused["stage"], "Authorization", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("not trusted"),
        "{refused}"
    );
    assert!(opened.lock().unwrap().is_empty());

    let outcome = w.invoke("mcp_login", json!({"server": "remote"})).unwrap();
    assert_eq!(outcome, "logged_in");
    assert_eq!(opened.lock().unwrap().len(), 1);
    assert!(opened.lock().unwrap()[0].contains("/authorize?"));

    let stored: Value = serde_json::from_str(&vault.load("remote").unwrap().unwrap()).unwrap();
    let token = stored["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(token.starts_with("at-"));
    wait_state(&w, "remote", "connected");
    let tools = w.invoke("list_tools", json!({})).unwrap();
    assert!(tools.to_string().contains("mcp__remote__whoami"), "{tools}");
    let logins = |more: bool| json!([{"server": "remote", "more_scope_needed": more}]);
    assert_eq!(w.invoke("mcp_logins", json!({})).unwrap(), logins(false));
    assert!(!events.lock().unwrap().is_empty(), "no {SERVERS_CHANGED}");

    // Nowhere else: not in any file under the project or the data dir, nor in any event.
    let secret = stored["client_secret"].as_str().unwrap().to_owned();
    for needle in [&token, &secret] {
        assert!(
            files_contain(&base, needle).is_empty(),
            "{:?}",
            files_contain(&base, needle)
        );
        assert!(
            !all_events
                .lock()
                .unwrap()
                .iter()
                .any(|e| e.contains(needle.as_str())),
            "an event carried a credential"
        );
    }

    // Step-up: a tool the token lacks scope for is refused (typed), the catalog is told, and
    // logging in again asks for that scope; the tool then works.
    let manager = w
        .app
        .state::<ShellState>()
        .app()
        .unwrap()
        .capabilities
        .mcp
        .clone()
        .unwrap();
    let call = |tool: &str| {
        tauri::async_runtime::block_on(manager.call(
            tool,
            json!({}),
            tokio_util::sync::CancellationToken::new(),
            None,
        ))
        .map(|r| format!("{r:?}"))
    };
    let refused = call("mcp__remote__admin").unwrap_err();
    assert_eq!(refused.code(), "insufficient_scope", "{refused}");
    assert_eq!(w.invoke("mcp_logins", json!({})).unwrap(), logins(true));
    assert_eq!(
        w.invoke("mcp_login", json!({"server": "remote"})).unwrap(),
        "logged_in"
    );
    wait_state(&w, "remote", "connected");
    let answer = call("mcp__remote__admin").unwrap();
    assert!(answer.contains("an authorized caller"), "{answer}");
    assert_eq!(w.invoke("mcp_logins", json!({})).unwrap(), logins(false));

    // Log out: the token goes, the server needs login again.
    assert_eq!(
        w.invoke("mcp_logout", json!({"server": "remote"})).unwrap(),
        true
    );
    assert!(vault.load("remote").unwrap().is_none());
    wait_state(&w, "remote", "needs_login");
    assert_eq!(w.invoke("mcp_logins", json!({})).unwrap(), json!([]));
    assert_eq!(
        w.invoke("mcp_logout", json!({"server": "remote"})).unwrap(),
        false
    );
    assert_eq!(
        w.invoke("cancel_mcp_login", json!({"server": "remote"}))
            .unwrap(),
        false
    );
}

#[test]
fn a_login_stops_when_the_browser_fails_or_is_cancelled() {
    let (_server, url) = oauth_server();
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("project"), base.join("data"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {"remote": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let vault = Arc::new(MemoryVault::default());
    let plane = PlaneOptions {
        mcp_connect_wait: Duration::from_secs(30),
        watch_skills: false,
        mcp_token_vault: Some(vault.clone()),
        ..PlaneOptions::default()
    };
    let core = tauri::async_runtime::block_on(App::open_with(
        AppOptions {
            project,
            data_dir: data,
        },
        plane.clone(),
    ))
    .unwrap();
    let w = support::window(ShellState::new(core).with_plane(plane));
    // A browser that cannot start ends the login at once, saying why.
    w.app
        .state::<McpLogins>()
        .set_opener(Arc::new(|_: &str| Err("no browser here".to_owned())));
    let err = w
        .invoke("mcp_login", json!({"server": "remote"}))
        .unwrap_err();
    assert_eq!(err["stage"], "Authorization", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("no browser here"),
        "{err}"
    );
    // A browser that never comes back.
    let opened = Arc::new(Mutex::new(false));
    let flag = opened.clone();
    w.app
        .state::<McpLogins>()
        .set_opener(Arc::new(move |_: &str| {
            *flag.lock().unwrap() = true;
            Ok(())
        }));
    let handle = w.app.handle().clone();
    let waiting = std::thread::spawn({
        let window = w.window.clone();
        move || {
            let _keep = handle;
            support::invoke(&window, "mcp_login", json!({"server": "remote"}))
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !*opened.lock().unwrap() {
        assert!(Instant::now() < deadline, "the browser was never opened");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        w.invoke("cancel_mcp_login", json!({"server": "remote"}))
            .unwrap(),
        true
    );
    let err = waiting.join().unwrap().unwrap_err();
    assert_eq!(err["stage"], "Authorization", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("cancelled"),
        "{err}"
    );
    assert!(vault.load("remote").unwrap().is_none());
}
