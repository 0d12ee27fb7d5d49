//! A container's project sync on a reopened run's card (`show_run`'s `RunToolResult.sync`): the
//! counts, every refused path with why, revealed (the paths come from the container), and why the
//! bring-back was cut short; read from the stored client projection's `sync` by the core's one
//! rule (`call_sync`): a local command and another tool's projection claiming a sync carry none.

use crate::support;

use serde_json::{Value, json};

#[test]
fn a_reopened_runs_card_carries_the_sync_report_with_refused_paths_revealed() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    // The report as the container sync writes it (the real type, serialized as the projection does).
    let mut report = aibuddy::tools::execute::SyncReport {
        copied_in: 4,
        removed_in: 1,
        brought_back: 2,
        brought_back_bytes: 120,
        deleted: 1,
        incomplete: Some("the engine stopped answering".into()),
        ..Default::default()
    };
    report.refuse(".git/hooks/pre-commit", "protected path");
    report.refuse("evil\u{1b}[2Kname", "a link leading out of the project");
    report.skip("big.bin", "over the size bound");
    let sync = serde_json::to_value(&report).unwrap();
    let container = json!({"kind": "container", "engine": "unix:///run/podman/podman.sock",
        "image": "debian:12", "container": "0123456789ab", "network_isolated": true});
    let calls = [
        (
            "c_sync",
            "execute",
            json!({"exit_code": 0, "confinement_detail": container, "sync": sync}),
        ),
        (
            "c_local",
            "execute",
            json!({"exit_code": 0, "confinement_detail": {"kind": "namespaces"}, "sync": null}),
        ),
        ("c_mcp", "mcp__evil__run", json!({"sync": sync})),
    ];
    let run_id = support::stored_run(&project, &data, "synced", &calls);
    let w = support::open(&project, &data);
    let shown = w.invoke("show_run", json!({ "runId": run_id })).unwrap();
    let result = |id: &str| -> Value {
        shown["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["result"]["tool_call_id"] == id)
            .map(|m| m["result"].clone())
            .unwrap_or_else(|| panic!("no result {id}: {shown}"))
    };
    let got = result("c_sync")["sync"].clone();
    assert_eq!(
        (
            &got["copied_in"],
            &got["removed_in"],
            &got["brought_back"],
            &got["brought_back_bytes"],
            &got["deleted"],
        ),
        (&json!(4), &json!(1), &json!(2), &json!(120), &json!(1)),
        "{got}"
    );
    assert_eq!(
        got["refused"][0],
        json!({"path": [{"kind": "text", "text": ".git/hooks/pre-commit"}],
               "why": [{"kind": "text", "text": "protected path"}]}),
        "{got}"
    );
    assert_eq!(
        got["refused"][1]["path"],
        json!([{"kind": "text", "text": "evil"}, {"kind": "code", "code": "ESC"},
               {"kind": "text", "text": "[2Kname"}]),
        "the escape reaches the window as a code, never raw: {got}"
    );
    assert_eq!(got["skipped"][0]["path"][0]["text"], "big.bin", "{got}");
    assert_eq!(
        got["incomplete"],
        json!([{"kind": "text", "text": "the engine stopped answering"}]),
        "{got}"
    );
    // The History detail of the call shows the same report.
    let rec = w
        .invoke("call_record", json!({ "toolCallId": "c_sync" }))
        .unwrap();
    assert_eq!(rec["sync"], got, "{rec}");
    let rec = w
        .invoke("call_record", json!({ "toolCallId": "c_mcp" }))
        .unwrap();
    assert!(rec.get("sync").is_none(), "{rec}");
    assert!(result("c_local").get("sync").is_none(), "{shown}");
    assert!(result("c_mcp").get("sync").is_none(), "{shown}");
}
