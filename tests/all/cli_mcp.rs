//! Issue 14, `aibuddy mcp` through the real binary: `mcp status` reports a remote server that
//! answers 401 as needing login (JSON and text), `mcp logout` with no stored token says so, and
//! `mcp login` refuses unknown and local (stdio) servers with a usage error. A small real HTTP
//! server on 127.0.0.1 plays the remote server.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::{Value, json};

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    (tmp, project, data)
}

/// Answers every request 401 with a Bearer challenge; returns the MCP URL.
fn unauthorized_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = r#"{"error":"invalid_token"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\"\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

fn write_user_servers(data: &std::path::Path, url: &str) {
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {
            "remote": {"type": "http", "url": url},
            "local": {"command": "/bin/true"}
        }})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn status_reports_a_401_server_as_needing_login() {
    let (_tmp, project, data) = dirs();
    write_user_servers(&data, &unauthorized_server());
    let (code, out, err) = support::aibuddy(&project, &data, &["mcp", "status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let remote = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["server"] == "remote")
        .unwrap_or_else(|| panic!("remote missing: {rows}"));
    assert_eq!(remote["state"], "needs_login", "{rows}");
    assert_eq!(remote["tools"], 0);
    assert!(remote["reason"].is_null(), "{rows}");

    // `tools list`: one row for the server, absent, reason exactly `needs login`.
    let (code, out, err) = support::aibuddy(&project, &data, &["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listing: Value = serde_json::from_str(&out).unwrap();
    let rows: Vec<&Value> = listing
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["source"].to_string().contains("remote"))
        .collect();
    assert_eq!(rows.len(), 1, "{listing}");
    assert_eq!(rows[0]["name"], "mcp__remote__*", "{listing}");
    assert_eq!(rows[0]["exposure"], "absent", "{listing}");
    assert_eq!(rows[0]["absent_reason"], "needs login", "{listing}");

    let (code, out, err) = support::aibuddy(&project, &data, &["mcp", "status"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("remote") && l.contains("needs_login")),
        "{out}"
    );
}

#[test]
fn logout_without_a_token_says_so() {
    let (_tmp, project, data) = dirs();
    write_user_servers(&data, "http://127.0.0.1:9/mcp");
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "logout", "remote"]);
    // The container's keyring may be unavailable: then a clear failure, never a panic.
    assert!(
        (code == 0 && err.contains("no token was stored"))
            || (code == 1 && err.contains("keyring")),
        "{code} {err}"
    );
}

#[test]
fn login_refuses_unknown_and_local_servers_and_tries_remote_ones() {
    let (_tmp, project, data) = dirs();
    write_user_servers(&data, "http://127.0.0.1:9/mcp");
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "login", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no MCP server named `nope`"), "{err}");
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "login", "local"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("stdio"), "{err}");
    std::fs::write(
        data.join("mcp.json"),
        json!({"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}})
            .to_string(),
    )
    .unwrap();
    // A legacy SSE server logs in like a streamable-HTTP one (since the SSE transport got
    // OAuth): here nothing listens, so the login fails reaching it, at Authorization, exit 1.
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "login", "old"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("login to old failed (Authorization)"), "{err}");
    assert!(err.contains("could not be reached"), "{err}");
}

/// `${VAR}` with the variable unset is a located problem in `tools check` (file, line, column,
/// field path, the variable's name, never a value) and that server does not start; a set one
/// reaches the server; `"disabled": true` is listed as disabled; `tools` allow/deny lists leave
/// tools out with their reason.
#[test]
fn variables_disabled_servers_and_tool_lists_through_the_cli() {
    let (_tmp, project, data) = dirs();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/mcp/tests/fixtures/misbehaving_server.py"
    );
    let text = format!(
        "{{\"mcpServers\": {{\n  \"fx\": {{\"command\": \"${{AIBUDDY_T14_PY:-python3}}\", \"args\": [\"{fixture}\"],\n         \"env\": {{\"FX_TOKEN\": \"${{AIBUDDY_T14_TOKEN}}\"}},\n         \"tools\": {{\"allow\": [\"e*\", \"add\"], \"deny\": [\"elicit\"]}}}},\n  \"needs\": {{\"command\": \"x\",\n            \"env\": {{\"K\": \"${{AIBUDDY_T14_UNSET}}\"}}}},\n  \"off\": {{\"command\": \"/nonexistent\", \"disabled\": true}}\n}}}}"
    );
    std::fs::write(data.join("mcp.json"), text).unwrap();
    let run = |args: &[&str]| {
        let out = support::aibuddy_cmd(&project, &data)
            .args(args)
            .env("AIBUDDY_T14_TOKEN", "t14-s3cret-value")
            .env_remove("AIBUDDY_T14_UNSET")
            .env_remove("AIBUDDY_T14_PY")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["tools", "check"]);
    assert_eq!(code, 1, "{out}{err}");
    let file = data.join("mcp.json");
    let expected = format!(
        "mcp: {}:6:21: server \"needs\": field \"env.K\": environment variable AIBUDDY_T14_UNSET is not set",
        file.display()
    );
    assert!(out.lines().any(|l| l.starts_with(&expected)), "{out}");
    assert!(!out.contains("t14-s3cret-value") && !err.contains("t14-s3cret-value"));

    let (code, out, err) = run(&["mcp", "status", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("t14-s3cret-value"), "{out}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["server"] == name)
            .cloned()
    };
    assert!(
        row("needs").is_none(),
        "a server with a problem does not start: {rows}"
    );
    assert_eq!(row("off").unwrap()["state"], "disabled", "{rows}");
    let fx = row("fx").unwrap();
    assert_eq!(fx["state"], "connected", "{rows}");
    assert_eq!(fx["tools"], 2, "echo and add: {fx}");
    let left_out = fx["left_out"].as_array().unwrap();
    let reason = |tool: &str| {
        left_out
            .iter()
            .find(|t| t["tool"] == tool)
            .map(|t| t["reason"].as_str().unwrap().to_string())
    };
    assert_eq!(reason("elicit").as_deref(), Some("denied by mcp.json"));
    assert_eq!(reason("crash").as_deref(), Some("not in allow list"));
    assert_eq!(reason("echo"), None);

    let (code, out, _) = run(&["mcp", "status"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("  left out: elicit (denied by mcp.json)"),
        "{out}"
    );

    // `tools list` shows the left-out tools as absent with their reason.
    let (code, out, err) = run(&["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listing: Value = serde_json::from_str(&out).unwrap();
    let absent = |name: &str| {
        listing
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| (r["exposure"].clone(), r["absent_reason"].clone()))
    };
    let (exposure, why) = absent("mcp__fx__elicit").expect("elicit listed");
    assert_eq!(exposure, "absent", "{listing}");
    assert_eq!(why, "denied by mcp.json");
    let (exposure, why) = absent("mcp__fx__crash").expect("crash listed");
    assert_eq!(exposure, "absent", "{listing}");
    assert_eq!(why, "not in allow list");
    assert_eq!(absent("mcp__fx__echo").unwrap().0, "active", "{listing}");
}

/// Authorization metadata is the server's (untrusted): an authorization URL the browser must not
/// get (`javascript:`, `file:`, plain http to another host) is never printed for the person to
/// open, and the login ends at once (the same rule as the window's, `aibuddy::host::mcp_login`).
#[test]
fn login_never_prints_an_authorization_url_the_browser_must_not_get() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/mcp/tests/fixtures/oauth_server.py"
    );
    for bad in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://auth.example/authorize",
    ] {
        let (_tmp, project, data) = dirs();
        let mut child = std::process::Command::new("python3")
            .args([script, "--authorize-url", bad])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port: u16 = line.trim().strip_prefix("PORT ").unwrap().parse().unwrap();
        write_user_servers(&data, &format!("http://127.0.0.1:{port}/mcp"));
        let (code, out, err) = support::aibuddy(&project, &data, &["mcp", "login", "remote"]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(code, 1, "{bad}: {err}");
        assert!(
            !err.contains("open this URL") && !out.contains(bad) && !err.contains(bad),
            "{bad}: {err}"
        );
        assert!(err.contains("the login to remote stopped"), "{bad}: {err}");
    }
}
