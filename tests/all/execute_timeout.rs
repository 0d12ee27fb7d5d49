//! The real `aibuddy` binary: a timed-out `execute` is an Execution-stage failure (`timed_out`),
//! exits 1, is found by `history --status error`, and keeps the output it produced (model text,
//! client projection and the spooled raw output).

use serde_json::Value;

use crate::support;

use support::aibuddy;

#[test]
fn a_timed_out_execute_is_an_execution_error_with_its_output_kept() {
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(p.path()).unwrap();
    let (code, out, err) = aibuddy(
        &project,
        d.path(),
        &[
            "call",
            "execute",
            r#"{"command":"echo partial-before-timeout; sleep 1000","timeout_ms":800}"#,
            "--yes",
            "--json",
        ],
    );
    assert_eq!(code, 1, "stdout: {out}\nstderr: {err}");
    let v: Value = serde_json::from_str(&out).expect("stdout is one JSON value");
    assert_eq!(v["status"], "error", "{v}");
    assert_eq!(v["stage"], "Execution", "{v}");
    assert_eq!(v["error"]["code"], "timed_out", "{v}");
    let model = v["model"].as_str().unwrap();
    assert!(model.contains("timed out after 800 ms"), "{model}");
    assert!(
        model.contains("partial-before-timeout"),
        "the partial output projection reaches the model: {model}"
    );
    // ...and travels in the error's details for the client.
    assert!(
        v["error"]["details"]["partial_model"]
            .as_str()
            .unwrap()
            .contains("partial-before-timeout"),
        "{v}"
    );
    let id = v["tool_call_id"].as_str().unwrap().to_string();

    let (code, hist, _) = aibuddy(
        &project,
        d.path(),
        &["history", "--status", "error", "--json"],
    );
    assert_eq!(code, 0);
    let rows: Vec<Value> = serde_json::from_str(&hist).expect("json array");
    let row = rows
        .iter()
        .find(|r| r["tool_call_id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not in `history --status error`: {rows:?}"));
    assert_eq!(row["tool"], "execute");

    let (code, raw, _) = aibuddy(&project, d.path(), &["show", &id, "--raw"]);
    assert_eq!(code, 0);
    assert_eq!(
        raw, "partial-before-timeout\n",
        "the spooled raw output is kept"
    );
}
