//! Background processes across runs of one app (issue 25), through `Agent::run` against the fake
//! provider: a run that keeps its processes leaves them running; another run of the same app
//! cannot read, feed or stop them (Authorization, before any confirmation), while the person's
//! own stop (`Processes::stop_any`, the window's Stop) ends them.

use crate::agent_common;

use agent_common::*;
use aibuddy::agent::RunEvent;
use aibuddy::contract::Stage;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::json;

fn results(events: &[RunEvent]) -> Vec<(Option<Stage>, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolResult { stage, model, .. } => Some((*stage, model.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_run_cannot_reach_a_kept_process_and_the_person_stops_it() {
    let k = ProviderKind::Anthropic;
    let h = harness(k, None).await;
    // Two runs against one fake server: the replay check follows one conversation only.
    h.server.check_replay(false);
    h.server.push(
        Turn::text("Starting.")
            .call(
                "toolu_a1",
                "execute",
                json!({"command": "sleep 30", "background": true}),
            )
            .reply(k),
    );
    h.server.push(Turn::text("Started.").reply(k));
    let mut keep = fast_options();
    keep.keep_processes = true;
    let (first, ev) = h.run_with(new_run("start it"), keep).await;
    assert!(
        results(&ev)[0]
            .1
            .starts_with("started background process bg1: sleep 30")
    );
    assert!(
        first.stopped_processes.is_empty(),
        "kept: {:?}",
        first.stopped_processes
    );
    let procs = h.app.services.processes.clone();
    let kept = procs.all();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].is_running());

    h.server.push(
        Turn::text("Trying.")
            .call("toolu_b1", "process_output", json!({"process_id": "bg1"}))
            .call("toolu_b2", "process_list", json!({}))
            .reply(k),
    );
    h.server.push(
        Turn::text("Stopping.")
            .call("toolu_b3", "process_stop", json!({"process_id": "bg1"}))
            .reply(k),
    );
    h.server.push(
        Turn::text("Feeding.")
            .call(
                "toolu_b4",
                "process_input",
                json!({"process_id": "bg1", "input": "x\n"}),
            )
            .reply(k),
    );
    h.server.push(Turn::text("Could not.").reply(k));
    let (second, ev) = h.run_prompt("use it").await;
    let r = results(&ev);
    assert_eq!(r.len(), 4, "{ev:?}");
    for i in [0, 2, 3] {
        assert_eq!(r[i].0, Some(Stage::Authorization), "{:?}", r[i]);
        assert!(
            r[i].1.contains("process `bg1` belongs to another run"),
            "{}",
            r[i].1
        );
    }
    assert_eq!(r[1].1, "no background processes in this run");
    assert!(second.stopped_processes.is_empty());
    assert!(kept[0].is_running(), "another run's calls stopped it");

    // The person's Stop ends it, whatever run started it.
    assert!(procs.stop_any("bg1").await);
    assert!(!kept[0].is_running());
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_the_person_keeps_outlives_its_run_and_the_others_do_not() {
    let k = ProviderKind::Anthropic;
    let h = harness(k, None).await;
    h.server.push(
        Turn::text("Starting two.")
            .call(
                "toolu_k1",
                "execute",
                json!({"command": "sleep 30", "background": true}),
            )
            .reply(k),
    );
    h.server.push(
        Turn::text("And the other.")
            .call(
                "toolu_k2",
                "execute",
                json!({"command": "sleep 31", "background": true}),
            )
            .reply(k),
    );
    h.server.push(
        Turn::text("Waiting a little.")
            .call(
                "toolu_k3",
                "process_output",
                json!({"process_id": "bg2", "wait_ms": 3000}),
            )
            .reply(k),
    );
    h.server.push(Turn::text("Done.").reply(k));
    let procs = h.app.services.processes.clone();
    let person = {
        let procs = procs.clone();
        tokio::spawn(async move {
            // The person ticks Keep on the first one while the run waits.
            loop {
                if let Some(p) = procs.all().into_iter().find(|p| p.id == "bg1") {
                    p.set_kept(true);
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    let (outcome, _ev) = h.run_prompt("start them").await;
    person.await.unwrap();
    let stopped: Vec<&str> = outcome
        .stopped_processes
        .iter()
        .map(|p| p.process_id.as_str())
        .collect();
    assert_eq!(stopped, ["bg2"]);
    let left = procs.all();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, "bg1");
    assert!(left[0].is_running() && left[0].info().kept);
    assert!(procs.stop_any("bg1").await);
    h.server.assert_clean();
}
