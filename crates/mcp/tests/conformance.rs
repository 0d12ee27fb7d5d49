//! The official MCP conformance harness (npm `@modelcontextprotocol/conformance`, pinned to the
//! newest release that runs on Node 20) runs its non-auth client scenarios against a small
//! client binary built on this crate (src/bin/conformance_client.rs).

mod common;

use common::*;

const SCENARIOS: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

#[test]
fn non_auth_client_scenarios_pass() {
    let dir = installed_servers("conformance non_auth_client_scenarios_pass");
    let harness = dir.join("node/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let client = env!("CARGO_BIN_EXE_aibuddy-mcp-conformance-client");
    let out_dir = tempfile::tempdir().unwrap();
    for scenario in SCENARIOS {
        let output = std::process::Command::new("node")
            .arg(&harness)
            .args([
                "client",
                "--command",
                client,
                "--scenario",
                scenario,
                "--timeout",
                "30000",
                "-o",
            ])
            .arg(out_dir.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "scenario {scenario} failed:\n{text}"
        );
        assert!(
            text.contains("OVERALL: PASSED"),
            "scenario {scenario} did not pass:\n{text}"
        );
        assert!(
            text.contains(", 0 failed, 0 warnings"),
            "scenario {scenario} had failures or warnings:\n{text}"
        );
        eprintln!("conformance scenario {scenario}: passed");
    }
}
