//! Stopping one call of a run from the window (an `execute` card's own Stop): `cancel_call` with the
//! run's tool call id ends that command's process tree, the model gets the call back as cancelled,
//! and the run goes on to its next step. Real fake provider on 127.0.0.1, real child processes.

use crate::fake_run;

use std::time::{Duration, Instant};

use aibuddy_provider::testing::Turn;
use fake_run::{fixture, invoke, processes_with};
use serde_json::json;

#[test]
fn cancel_call_stops_one_run_call_and_the_run_goes_on() {
    let f = fixture();
    let command = "sleep 40.713";
    f.push(Turn::text("Waiting.").call("call_w1", "execute", json!({ "command": command })));
    f.push(Turn::text("That one was stopped; carrying on."));
    let started = invoke(&f.window, "start_run", json!({ "prompt": "wait" })).unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_string();
    f.approve(&run_id, "call_w1");
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(command).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stopped at once, while the sandbox may still be starting: nothing of the tree may be left
    // (the exec crate's early-stop guarantee, `crates/exec/tests/early_stop.rs`).
    let call = f.wait_event(&run_id, "tool_call");
    let call_id = call["tool_call_id"].as_str().unwrap().to_string();
    assert!(call_id.ends_with(":call_w1"), "{call}");
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": "nope" })).unwrap(),
        json!(false)
    );
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(true)
    );
    let result = f.wait_event(&run_id, "tool_result");
    assert_eq!(result["status"], json!("cancelled"), "{result}");
    assert!(result["duration_ms"].as_u64().is_some(), "{result}");
    // The run was not stopped: the model got the cancelled call and answered.
    let finished = f.wait_event(&run_id, "run_finished");
    assert_eq!(finished["status"], json!("completed"), "{finished}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(command).is_empty() {
        let left: Vec<String> = processes_with(command)
            .iter()
            .map(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                format!(
                    "{p}: {} | {stat}",
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                )
            })
            .collect();
        assert!(
            Instant::now() < deadline,
            "the stopped command is still running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = invoke(&f.window, "show_run", json!({ "runId": run_id })).unwrap();
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(
        messages[2]["result"]["status"],
        json!("cancelled"),
        "{shown}"
    );
    assert_eq!(
        messages[3]["text"],
        json!("That one was stopped; carrying on.")
    );
    // Once ended, the call can no longer be stopped.
    assert_eq!(
        invoke(&f.window, "cancel_call", json!({ "callId": call_id })).unwrap(),
        json!(false)
    );
    f.server.assert_clean();
}
