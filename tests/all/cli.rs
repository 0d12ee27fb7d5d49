//! The real `aibuddy` binary: stable subcommands and JSON shapes.

use crate::support;

use serde_json::Value;
use support::aibuddy;

#[test]
fn tools_list_json_rows_have_the_contract_fields() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let (code, out, err) = aibuddy(p.path(), d.path(), &["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).expect("json array");
    assert!(!rows.is_empty(), "tools list is empty");
    let read_file = rows
        .iter()
        .find(|r| r["name"] == "read_file")
        .unwrap_or_else(|| panic!("read_file missing in {out}"));
    assert_eq!(read_file["exposure"], "active", "{read_file}");
    assert_eq!(read_file["config"], "filesystem", "{read_file}");
    for row in &rows {
        for field in ["name", "config", "source", "exposure"] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
        let exposure = row["exposure"].as_str().unwrap();
        assert!(["active", "deferred", "absent"].contains(&exposure));
        assert_eq!(
            exposure == "absent",
            row.get("absent_reason").is_some(),
            "{row}"
        );
    }
}

#[test]
fn tools_check_passes_and_reports_settings_problems() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let (code, out, _) = aibuddy(p.path(), d.path(), &["tools", "check"]);
    assert_eq!(code, 0, "{out}");
    std::fs::create_dir_all(p.path().join(".aibuddy")).unwrap();
    std::fs::write(
        p.path().join(".aibuddy/settings.json"),
        "{\n  \"exec\": {\n    \"network\": \"sometimes\"\n  }\n}\n",
    )
    .unwrap();
    let (code, out, _) = aibuddy(p.path(), d.path(), &["tools", "check", "--json"]);
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).unwrap();
    let problem = &report["settings"][0];
    assert_eq!(problem["field"], "exec.network");
    assert_eq!(problem["line"], 3);
    assert!(
        problem["file"]
            .as_str()
            .unwrap()
            .ends_with(".aibuddy/settings.json")
    );
}

#[test]
fn call_execute_stream_writes_output_to_stderr_and_the_result_to_stdout() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &[
            "call",
            "execute",
            r#"{"command":"echo out; echo err >&2"}"#,
            "--yes",
            "--json",
            "--stream",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // Streamed live output goes to stderr, both of the command's streams.
    assert!(err.lines().any(|l| l == "out"), "stderr: {err}");
    assert!(err.lines().any(|l| l == "err"), "stderr: {err}");
    // stdout stays one parseable JSON result.
    let v: Value = serde_json::from_str(&out).expect("stdout is one JSON value");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["tool"], "execute");
    assert_eq!(v["client"]["exit_code"], 0, "{v}");
}

#[test]
fn call_unknown_tool_reports_discovery_stage() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let (code, out, _) = aibuddy(
        p.path(),
        d.path(),
        &["call", "no_such_tool", "{}", "--json"],
    );
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "error");
    assert_eq!(v["stage"], "Discovery");
    assert!(v["tool_call_id"].as_str().unwrap().starts_with("call_"));
    assert!(v["model"].as_str().unwrap().contains("no_such_tool"));
    assert!(v.get("client").is_some());
}

#[test]
fn missing_project_is_a_clear_startup_error() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = aibuddy(&d.path().join("nope"), d.path(), &["tools", "list"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be opened"), "{err}");
}
