//! Issue 14, `aibuddy mcp` through the real binary: `mcp status` reports a remote server that
//! answers 401 as needing login (JSON and text), `mcp logout` with no stored token says so, and
//! `mcp login` refuses unknown and local (stdio) servers with a usage error. A small real HTTP
//! server on 127.0.0.1 plays the remote server.

mod support;

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
fn login_refuses_unknown_and_local_servers() {
    let (_tmp, project, data) = dirs();
    write_user_servers(&data, "http://127.0.0.1:9/mcp");
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "login", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no MCP server named nope"), "{err}");
    let (code, _, err) = support::aibuddy(&project, &data, &["mcp", "login", "local"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("stdio"), "{err}");
}
