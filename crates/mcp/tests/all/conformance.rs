//! The official MCP conformance harness (npm `@modelcontextprotocol/conformance`, pinned to the
//! newest release that runs on Node 20) runs all 23 client scenarios against a small client
//! binary built on this crate (src/bin/conformance_client/): the 4 non-auth ones through
//! `McpManager`, the 19 auth ones through `aibuddy_mcp::oauth` (discovery, registration, PKCE,
//! client credentials, step-up; the loopback redirect listener receives the harness's redirect).

use crate::common;

use common::*;

const NON_AUTH: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

const AUTH: [&str; 19] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/resource-mismatch",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
];

fn run_scenario(scenario: &str) -> (bool, String) {
    let dir = installed_servers("conformance client scenarios");
    let harness = dir.join("node/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let client = env!("CARGO_BIN_EXE_aibuddy-mcp-conformance-client");
    let out_dir = tempfile::tempdir().unwrap();
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
    (output.status.success(), text)
}

fn assert_passes(scenario: &str) {
    let (success, text) = run_scenario(scenario);
    assert!(success, "scenario {scenario} failed:\n{text}");
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

#[test]
fn non_auth_client_scenarios_pass() {
    for scenario in NON_AUTH {
        assert_passes(scenario);
    }
}

#[test]
fn auth_client_scenarios_pass() {
    for scenario in AUTH {
        assert_passes(scenario);
    }
}

#[test]
fn every_client_scenario_is_listed() {
    assert_eq!(NON_AUTH.len() + AUTH.len(), 23);
}
