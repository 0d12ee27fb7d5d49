//! What `aibuddy call execute` loads at start-up: not the `tool_search` ranking resources (the
//! embedding table and the WordNet thesaurus, tens of MiB and most of a short call's CPU), even
//! with deferred MCP tools in the catalog; `tool_search` still loads and uses them. The probe is
//! the library's own debug log lines for those loads (`AIBUDDY_LOG`), not timing.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::aibuddy_cmd;

const TABLE_LOADED: &str = "tool_search embedding table loaded";
const THESAURUS_LOADED: &str = "WordNet thesaurus loaded";

/// A trusted project with an MCP server of 14 tools (deferred: more than 10).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("proj");
    std::fs::create_dir_all(p.join(".aibuddy")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/mcp/tests/fixtures/misbehaving_server.py");
    std::fs::write(
        p.join(".aibuddy/mcp.json"),
        json!({"mcpServers": {"fx": {"command": "python3", "args": [fixture, "--tools", "12"]}}})
            .to_string(),
    )
    .unwrap();
    let data = dir.path().join("data");
    let shown = aibuddy::trust::status(&p, &data).unwrap();
    aibuddy::trust::grant(&p, &data, &shown.digest).unwrap();
    dir
}

/// `aibuddy call TOOL ARGS --yes --json` with debug logs of the library: (exit code, stdout,
/// stderr).
fn call(dir: &Path, tool: &str, args: &str) -> (i32, Value, String) {
    let out = aibuddy_cmd(&dir.join("proj"), &dir.join("data"))
        .env("AIBUDDY_LOG", "aibuddy=debug")
        .args(["call", tool, args, "--yes", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{err}"));
    (out.status.code().unwrap_or(-1), v, err)
}

#[test]
fn call_execute_loads_no_search_resources_and_tool_search_still_ranks() {
    let dir = project();
    let (code, v, err) = call(dir.path(), "execute", r#"{"command":"echo hi"}"#);
    assert_eq!(code, 0, "{v}\n{err}");
    assert_eq!(v["client"]["exit_code"], 0, "{v}");
    // The debug log is on (the probe can see something) ...
    assert!(err.contains("DEBUG"), "no debug log line: {err}");
    // ... and none of the ranking resources was loaded.
    assert!(!err.contains(TABLE_LOADED), "{err}");
    assert!(!err.contains(THESAURUS_LOADED), "{err}");

    // The same catalog searched: the index is built on the search, with the embedding.
    let (code, v, err) = call(dir.path(), "tool_search", r#"{"query":"add two integers"}"#);
    assert_eq!(code, 0, "{v}\n{err}");
    assert!(err.contains(TABLE_LOADED), "{err}");
    assert!(v["model"].as_str().unwrap().contains("mcp__fx__add"), "{v}");
}

/// A trusted project whose only MCP server touches `marker` when started (and then exits).
fn marker_project(marker: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("proj");
    std::fs::create_dir_all(p.join(".aibuddy")).unwrap();
    let script = format!("touch '{}'", marker.display());
    std::fs::write(
        p.join(".aibuddy/mcp.json"),
        json!({"mcpServers": {"m": {"command": "sh", "args": ["-c", script]}}}).to_string(),
    )
    .unwrap();
    let data = dir.path().join("data");
    let shown = aibuddy::trust::status(&p, &data).unwrap();
    aibuddy::trust::grant(&p, &data, &shown.digest).unwrap();
    dir
}

#[test]
fn a_built_in_call_starts_no_mcp_server_an_mcp_search_does() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("started");
    let dir = marker_project(&marker);
    for (tool, args) in [
        ("execute", r#"{"command":"true"}"#),
        ("ls", r#"{"path":"."}"#),
    ] {
        let (code, v, err) = call(dir.path(), tool, args);
        assert_eq!(code, 0, "{tool}: {v}\n{err}");
        assert!(!marker.exists(), "`call {tool}` started the MCP server");
    }
    // tool_search searches the servers' tools: it starts them (this one fails at once).
    let (_, v, err) = call(dir.path(), "tool_search", r#"{"query":"anything"}"#);
    assert!(
        marker.exists(),
        "`call tool_search` did not start it: {v}\n{err}"
    );
}
