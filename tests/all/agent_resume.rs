//! `continue_run` after a run whose process stopped mid-tool: the run is found `interrupted` by
//! the next open of the store, its dangling call is answered as interrupted, and the continued
//! run sends a valid protocol (checked by the fake server on every request).

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::{RunEvent, RunStart, RunStatus};
use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::events::CallStatus;
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn interrupted_then_continued(kind: ProviderKind, marker: &str) {
    let mut h = harness(kind, None).await;
    let command = format!("sleep {marker}");
    h.push(Turn::text("Waiting.").call("call_long", "execute", json!({"command": command})));
    let events = sink();
    let agent = h.agent(Arc::new(ApproveAll), fast_options());
    let task = {
        let events = events.clone();
        tokio::spawn(async move {
            agent
                .run(
                    RunStart {
                        prompt: "wait a long time".into(),
                        ..RunStart::default()
                    },
                    CancellationToken::new(),
                    events,
                )
                .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&command).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The process "dies" mid-tool: the loop is dropped without finishing anything, then the
    // project is closed (its store's liveness lock released).
    task.abort();
    let _ = task.await;
    let run_id = h.store().list_runs(10, None).await.unwrap()[0]
        .run_id
        .clone();
    let opts = AppOptions {
        project: h.root.clone(),
        data_dir: h.data.clone(),
    };
    let old = std::mem::replace(&mut h.app, Arc::new(App::open(opts.clone()).await.unwrap()));
    drop(old);
    // Reopen once more now that the first instance is gone: its running run is recovered.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let app = App::open(opts.clone()).await.unwrap();
        let status = app
            .persistence
            .as_ref()
            .unwrap()
            .store
            .get_run(&run_id)
            .await
            .unwrap()
            .unwrap()
            .status;
        if status == Some(RunStatus::Interrupted) {
            h.app = Arc::new(app);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "run never became interrupted: {status:?}"
        );
        drop(app);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    h.push(Turn::text(
        "The command was interrupted; I will not rerun it.",
    ));
    let (out, _) = h.continue_run(&run_id, "").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.run_id, run_id);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].raw_body.contains("call_long"),
        "{}",
        reqs[1].raw_body
    );
    assert!(
        reqs[1].raw_body.contains("nterrupted"),
        "{}",
        reqs[1].raw_body
    );
    let conv = h.store().conversation(&run_id).await.unwrap();
    assert!(conv.dangling_calls().is_empty());
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_after_interrupted_anthropic() {
    interrupted_then_continued(ProviderKind::Anthropic, "30.611").await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_after_interrupted_chat() {
    interrupted_then_continued(ProviderKind::OpenAiChat, "30.733").await;
}

/// A provider that numbers its calls per run (`call_0` in every run, as local servers do): the
/// second run's `call_0` is stored under its own run-scoped id, runs and completes, and each run's
/// model gets its own `call_0` back.
async fn provider_ids_reused_across_runs(kind: ProviderKind) {
    let h = harness(kind, None).await;
    // Two conversations on one server: its replay check follows a single conversation's served
    // turns in order, so it is off here (every other invariant is still checked on each request).
    h.server.check_replay(false);
    let agent = h.agent(Arc::new(ApproveAll), fast_options());
    let mut run_ids = Vec::new();
    for (file, word) in [("notes.txt", "alpha-content"), ("b.txt", "beta-content")] {
        h.push(Turn::text("Reading.").call("call_0", "read_file", json!({"path": file})));
        h.push(Turn::text("Read it."));
        let events = sink();
        let out = agent
            .run(
                RunStart {
                    prompt: format!("read {file}"),
                    ..RunStart::default()
                },
                CancellationToken::new(),
                events.clone(),
            )
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        let stored = format!("{}:call_0", out.run_id);
        assert!(events.events().iter().any(|e| matches!(e,
            RunEvent::ToolResult { tool_call_id, status: CallStatus::Ok, model, .. }
                if *tool_call_id == stored && model.contains(word))));
        let call = h.store().get_call(&stored).await.unwrap().unwrap();
        assert_eq!(call.run_id, out.run_id);
        // The model's next request answers its own id with this run's result.
        let reqs = h.server.requests();
        let last = &reqs[reqs.len() - 1].raw_body;
        assert!(last.contains("\"call_0\"") && last.contains(word), "{last}");
        assert!(
            !last.contains(&stored),
            "the model never sees the stored id"
        );
        run_ids.push(out.run_id);
    }
    assert_ne!(run_ids[0], run_ids[1]);
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_ids_reused_across_runs_anthropic() {
    provider_ids_reused_across_runs(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_ids_reused_across_runs_chat() {
    provider_ids_reused_across_runs(ProviderKind::OpenAiChat).await;
}
