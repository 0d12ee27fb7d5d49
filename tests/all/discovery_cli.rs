//! The real binary with an MCP server configured in the project: `tools list --json` shows
//! `mcp:<server>` sources, deferred exposure and absent reasons; `tools search` ranks the deferred
//! tools; malformed skills are reported with file and line.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::aibuddy;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("proj");
    std::fs::create_dir_all(p.join(".aibuddy/skills/bad")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/mcp/tests/fixtures/misbehaving_server.py");
    std::fs::write(
        p.join(".aibuddy/mcp.json"),
        json!({"mcpServers": {
            "fx": {"command": "python3", "args": [fixture, "--tools", "5"]},
            "gone": {"command": "/nonexistent/mcp-server"}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        p.join(".aibuddy/skills/bad/SKILL.md"),
        "---\nname: bad\n---\nbody\n",
    )
    .unwrap();
    // The project's own MCP servers start only once the person trusts the project.
    let data = dir.path().join("data");
    let shown = aibuddy::trust::status(&p, &data).unwrap();
    aibuddy::trust::grant(&p, &data, &shown.digest).unwrap();
    dir
}

#[test]
fn tools_list_shows_mcp_sources_deferral_and_reasons() {
    let dir = project();
    let (p, d) = (dir.path().join("proj"), dir.path().join("data"));
    let (code, out, err) = aibuddy(&p, &d, &["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    let echo = find("mcp__fx__echo");
    assert_eq!(echo["source"], "mcp:fx");
    assert_eq!(echo["config"], "mcp:fx");
    assert_eq!(echo["exposure"], "deferred", "14 tools > 10");
    assert_eq!(find("tool_search")["exposure"], "active");
    let gone = find("mcp__gone__*");
    assert_eq!(gone["exposure"], "absent");
    assert!(
        gone["absent_reason"]
            .as_str()
            .unwrap()
            .contains("MCP server `gone` is not connected"),
        "{gone}"
    );
    // The malformed skill is reported with file and line.
    assert!(
        err.contains("skills/bad/SKILL.md:3: the frontmatter has no `description` field"),
        "{err}"
    );
}

#[test]
fn tools_search_ranks_deferred_tools() {
    let dir = project();
    let (p, d) = (dir.path().join("proj"), dir.path().join("data"));
    let (code, out, err) = aibuddy(&p, &d, &["tools", "search", "add two integers", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["indexed"], 14);
    assert_eq!(v["candidates"][0]["name"], "mcp__fx__add", "{v}");
    assert_eq!(v["candidates"][0]["server"], "fx");

    let (code, out, _) = aibuddy(&p, &d, &["tools", "search", "select:echo,missing"]);
    assert_eq!(code, 0);
    assert!(out.contains("1. mcp__fx__echo"), "{out}");
    assert!(out.contains("unknown: missing"), "{out}");
}
