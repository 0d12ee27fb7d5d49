//! Background precompaction announces itself: when a call's model projection is replaced, the
//! host's sink gets `Event::ToolCompacted` with the call's id, the strategy and the token counts;
//! a call too small to compact announces nothing. Real project, real store, real child process.

use std::collections::BTreeSet;
use std::sync::Arc;

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::ApproveAll;
use aibuddy::events::{CallStatus, CollectingSink, Event, NullSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use aibuddy::results::estimate_tokens;
use aibuddy_store::CompactionState;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn execute(app: &App, command: &str) -> CallOutcome {
    let runner = app.runner(None, Arc::new(ApproveAll));
    let toolset = app.toolset(&BTreeSet::new());
    runner
        .call(
            &toolset,
            CallRequest {
                id: None,
                name: "execute".into(),
                arguments: json!({ "command": command }).to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

fn compacted(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| matches!(e, Event::ToolCompacted { .. }))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_projection_is_announced_with_its_call_id() {
    let tmp = tempfile::tempdir().unwrap();
    let (project, data) = (tmp.path().join("proj"), tmp.path().join("data"));
    std::fs::create_dir_all(&project).unwrap();
    let app = App::open(AppOptions {
        project,
        data_dir: data,
    })
    .await
    .unwrap();
    let persistence = app.persistence.as_ref().expect("the app has a store");
    let sink = CollectingSink::new();
    persistence.compactor.set_event_sink(sink.clone());

    let small = execute(&app, "echo small").await;
    assert_eq!(small.status, CallStatus::Ok, "{}", small.model);
    persistence.compactor.wait_idle().await;
    assert!(compacted(&sink.events()).is_empty(), "{:?}", sink.events());

    let big = execute(&app, "seq 1 20000").await;
    assert_eq!(big.status, CallStatus::Ok, "{}", big.model);
    persistence.compactor.wait_idle().await;
    let events = sink.events();
    let announced = compacted(&events);
    assert_eq!(announced.len(), 1, "{events:?}");
    let Event::ToolCompacted {
        call_id,
        strategy,
        tokens_before,
        tokens_after,
    } = announced[0]
    else {
        unreachable!()
    };
    assert_eq!(call_id, &big.tool_call_id);
    assert_eq!(strategy, "trim");
    assert_eq!(*tokens_before, estimate_tokens(&big.model) as u64);
    // What the event says is what the store now holds for the model.
    let record = persistence
        .store
        .get_call(&big.tool_call_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.compaction_state, CompactionState::Compacted);
    let stored = record.model_projection.unwrap();
    assert_eq!(*tokens_after, estimate_tokens(&stored) as u64);
    assert!(tokens_after < tokens_before);
}
