//! Agent runs and their conversation against a real SQLite file: byte-identical provider
//! content, ordering, counters updated atomically with appends, protocol refusals that append
//! nothing, tool results linked to `tool_calls`, interactions in order, summaries, listing.

use aibuddy_store::{
    CallFinish, CallStart, CallStatus, ConfirmRecord, ContextItem, Decision, Interaction,
    MessageRole, NewMessage, NewRun, NewSummary, RequestedCall, RunEnd, RunStatus, Store,
    StoreError, Usage, UserAnswer,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn new_run(id: &str) -> NewRun {
    NewRun {
        run_id: Some(id.into()),
        title: Some(format!("title of {id}")),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-6".into(),
        presentation: "native".into(),
        project_root: Some("/projects/demo".into()),
    }
}

fn call(id: &str, tool: &str) -> RequestedCall {
    RequestedCall {
        tool_call_id: id.into(),
        tool: tool.into(),
    }
}

fn usage(input: i64, output: i64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: input / 2,
        cache_write_tokens: 1,
    }
}

async fn run_call(store: &Store, run: &str, id: &str, projection: &str) {
    store
        .begin_call(CallStart {
            tool_call_id: id.into(),
            run_id: run.into(),
            project_root: Some("/projects/demo".into()),
            tool: "read_file".into(),
            config: "fs".into(),
            input: r#"{"path":"a.txt"}"#.into(),
            started_at_ms: None,
        })
        .await
        .unwrap();
    let mut fin = CallFinish::new(id, CallStatus::Ok);
    fin.raw_output = projection.as_bytes().to_vec();
    fin.model_projection = Some(projection.into());
    store.finish_call(fin).await.unwrap();
}

/// Content exactly as a provider might send it: odd key order, spacing, escapes, big numbers.
const ASSISTANT: &str = r#"[ {"type":"text","text":"Voil\u00e0 \"ok\"\n"},
  {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"z":1,"a":[1.50,2e3],"big":12345678901234567890}},
  {"type":"tool_use","id":"toolu_2","name":"grep","input":{}} ]"#;

#[tokio::test]
async fn a_conversation_round_trips_in_order_with_exact_content_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let run = store.create_run(new_run("run_a")).await.unwrap();
    assert_eq!(run, "run_a");
    let seqs = store
        .append_messages(
            &run,
            vec![
                NewMessage::user_text("read a.txt"),
                NewMessage::assistant(
                    "anthropic",
                    ASSISTANT.into(),
                    Some(usage(100, 20)),
                    vec![call("toolu_1", "read_file"), call("toolu_2", "grep")],
                ),
            ],
        )
        .await
        .unwrap();
    assert_eq!(seqs, [1, 2]);
    run_call(&store, &run, "toolu_1", "line one").await;
    // toolu_2 is answered before it has a row: the message links, the result is absent.
    let seqs = store
        .append_messages(
            &run,
            vec![
                NewMessage::tool_result("toolu_1"),
                NewMessage::tool_result("toolu_2"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(seqs, [3, 4]);
    let last = store
        .append_message(
            &run,
            NewMessage::assistant(
                "anthropic",
                r#"[{"type":"text","text":"done"}]"#.into(),
                Some(usage(50, 5)),
                vec![],
            ),
        )
        .await
        .unwrap();
    assert_eq!(last, 5);

    let conv = store.conversation(&run).await.unwrap();
    let roles: Vec<MessageRole> = conv.messages.iter().map(|m| m.role).collect();
    use MessageRole::*;
    assert_eq!(roles, [User, Assistant, Tool, Tool, Assistant]);
    assert_eq!(
        conv.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert!(
        conv.messages[1].content == ASSISTANT,
        "content changed: {}",
        conv.messages[1].content
    );
    assert_eq!(conv.messages[1].provider_kind.as_deref(), Some("anthropic"));
    assert_eq!(conv.messages[1].usage, Some(usage(100, 20)));
    assert_eq!(
        conv.messages[1].requested_calls,
        [call("toolu_1", "read_file"), call("toolu_2", "grep")]
    );
    assert_eq!(conv.messages[0].usage, None);
    let linked = conv.messages[2].result.as_ref().expect("toolu_1 is linked");
    assert_eq!(linked.status, CallStatus::Ok);
    assert_eq!(linked.model_projection.as_deref(), Some("line one"));
    assert_eq!(conv.messages[3].tool_call_id.as_deref(), Some("toolu_2"));
    assert_eq!(conv.messages[3].result, None);
    assert!(conv.dangling_calls().is_empty());

    let rec = &conv.run;
    assert_eq!(rec.status, Some(RunStatus::Running));
    assert_eq!(rec.steps, 2);
    assert_eq!(rec.tool_calls, 2);
    let mut total = usage(100, 20);
    total.add(&usage(50, 5));
    assert_eq!(rec.usage, total);
    assert_eq!(rec.project_root.as_deref(), Some("/projects/demo"));
    assert_eq!(rec.owner.as_deref(), Some(store.instance_id()));

    // The listing JSON embeds content as JSON.
    let listed = serde_json::to_value(&conv.messages[1]).unwrap();
    assert_eq!(listed["content"][1]["input"]["z"], json!(1));

    store
        .finish_run(
            &run,
            RunEnd {
                status: RunStatus::Completed,
                stage: None,
                error_message: None,
                stop_reason: Some("max_tokens".into()),
            },
        )
        .await
        .unwrap();
    let done = store.get_run(&run).await.unwrap().unwrap();
    assert_eq!(done.status, Some(RunStatus::Completed));
    assert_eq!(done.stop_reason.as_deref(), Some("max_tokens"));
    assert!(done.finished_at_ms.is_some());
    // A finished run takes no more messages and cannot finish again.
    let err = store
        .append_message(&run, NewMessage::user_text("more"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::RunNotRunning { .. }), "{err}");
    let err = store
        .finish_run(
            &run,
            RunEnd {
                status: RunStatus::Error,
                stage: Some(aibuddy_common::Stage::Execution),
                error_message: Some("x".into()),
                stop_reason: None,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::RunNotRunning { .. }), "{err}");
}

#[tokio::test]
async fn a_batch_that_breaks_the_protocol_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let run = store.create_run(new_run("run_b")).await.unwrap();
    store
        .append_message(
            &run,
            NewMessage::assistant(
                "openai-chat",
                "{}".into(),
                Some(usage(10, 1)),
                vec![call("c1", "ls")],
            ),
        )
        .await
        .unwrap();
    let before = store.get_run(&run).await.unwrap().unwrap();

    let cases: Vec<(Vec<NewMessage>, &str)> = vec![
        (
            vec![
                NewMessage::tool_result("c1"),
                NewMessage::tool_result("nope"),
            ],
            "did not request",
        ),
        (
            vec![NewMessage::tool_result("c1"), NewMessage::tool_result("c1")],
            "already has a result",
        ),
        (
            vec![
                NewMessage::tool_result("c1"),
                NewMessage::assistant(
                    "openai-chat",
                    "{}".into(),
                    Some(usage(5, 5)),
                    vec![call("c1", "ls")],
                ),
            ],
            "already used",
        ),
    ];
    for (batch, want) in cases {
        let err = store.append_messages(&run, batch).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::InvalidMessage(m) if m.contains(want)),
            "{err}"
        );
        let conv = store.conversation(&run).await.unwrap();
        assert_eq!(conv.messages.len(), 1, "a refused batch left messages");
        assert_eq!(conv.run, before, "a refused batch changed the counters");
    }
    let mut not_json = NewMessage::user_text("x");
    not_json.content = "{\"a\":".into();
    assert!(matches!(
        store.append_message(&run, not_json).await,
        Err(StoreError::InvalidMessage(_))
    ));
    // Another Store (another process, for the store) does not own the run.
    let other = Store::open(dir.path()).unwrap();
    let err = other
        .append_message(&run, NewMessage::tool_result("c1"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::RunNotRunning { .. }), "{err}");
    assert!(matches!(
        store
            .append_message("missing", NewMessage::user_text("x"))
            .await,
        Err(StoreError::RunNotFound(_))
    ));
    assert!(matches!(
        store.create_run(new_run("run_b")).await,
        Err(StoreError::DuplicateRun(_))
    ));
}

#[tokio::test]
async fn runs_are_listed_newest_first_with_their_counters() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = store
            .create_run(NewRun {
                run_id: None,
                ..new_run("unused")
            })
            .await
            .unwrap();
        let calls: Vec<RequestedCall> = (0..i).map(|c| call(&format!("{id}_{c}"), "ls")).collect();
        store
            .append_message(
                &id,
                NewMessage::assistant("anthropic", "[]".into(), None, calls),
            )
            .await
            .unwrap();
        ids.push(id);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    // A run that only groups tool calls (`aibuddy call`) is not an agent run.
    run_call(&store, "call-group", "plain_call", "x").await;

    let rows = store.list_runs(100, None).await.unwrap();
    let listed: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    assert_eq!(rows[0].tool_calls, 4);
    assert_eq!(rows[0].steps, 1);
    assert_eq!(rows[0].status, RunStatus::Running);
    assert_eq!(rows[0].model.as_deref(), Some("claude-sonnet-4-6"));
    assert!(rows[0].started_at.ends_with('Z'));

    let page1 = store.list_runs(2, None).await.unwrap();
    let page2 = store.list_runs(2, Some(&page1[1].run_id)).await.unwrap();
    let page3 = store.list_runs(2, Some(&page2[1].run_id)).await.unwrap();
    let paged: Vec<String> = [page1, page2, page3]
        .concat()
        .into_iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(paged, newest_first);
}

#[tokio::test]
async fn interactions_of_a_run_are_read_in_the_order_they_completed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let run = store.create_run(new_run("run_i")).await.unwrap();
    let confirm = |id: &str| ConfirmRecord {
        tool_call_id: id.into(),
        run_id: Some(run.clone()),
        digest: "d".into(),
        target: "rm build".into(),
        scope: "/projects/demo/build".into(),
        consequence: "deletes build".into(),
        decision: Decision::Pending,
        requested_at_ms: 1,
        decided_at_ms: None,
        policy: None,
    };
    store
        .record_user_answer(UserAnswer {
            tool_call_id: "ask_1".into(),
            run_id: Some(run.clone()),
            question: json!({"question": "Which branch?", "options": ["main", "dev"]}),
            answer: json!(["main"]),
            answered_at_ms: 10,
        })
        .await
        .unwrap();
    let rejected = store
        .record_confirm_request(confirm("exec_1"))
        .await
        .unwrap();
    store
        .record_decision(rejected, Decision::Rejected)
        .await
        .unwrap();
    let _still_pending = store
        .record_confirm_request(confirm("exec_2"))
        .await
        .unwrap();
    // The pipeline's recorder writes requests without a run id: the call's run is theirs.
    run_call(&store, &run, "exec_3", "").await;
    let mut no_run = confirm("exec_3");
    no_run.run_id = None;
    let approved = store.record_confirm_request(no_run).await.unwrap();
    store
        .record_decision(approved, Decision::Approved)
        .await
        .unwrap();
    let mut elsewhere = confirm("exec_other");
    elsewhere.run_id = None;
    let other = store.record_confirm_request(elsewhere).await.unwrap();
    store
        .record_decision(other, Decision::Approved)
        .await
        .unwrap();
    let conv = store.conversation(&run).await.unwrap();
    let kinds: Vec<(&str, &str)> = conv
        .interactions
        .iter()
        .map(|i| match i {
            Interaction::Answer(a) => ("answer", a.tool_call_id.as_str()),
            Interaction::Confirm(c) => ("confirm", c.tool_call_id.as_str()),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("answer", "ask_1"),
            ("confirm", "exec_1"),
            ("confirm", "exec_3")
        ]
    );
    match conv.interaction_of("exec_1") {
        Some(Interaction::Confirm(c)) => assert_eq!(c.decision, Decision::Rejected),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_summary_replaces_its_range_and_the_originals_stay() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let run = store.create_run(new_run("run_s")).await.unwrap();
    store
        .append_messages(
            &run,
            vec![
                NewMessage::user_text("task"),
                NewMessage::assistant("anthropic", "[]".into(), None, vec![call("t1", "ls")]),
            ],
        )
        .await
        .unwrap();
    run_call(&store, &run, "t1", "a b c").await;
    store
        .append_messages(
            &run,
            vec![
                NewMessage::tool_result("t1"),
                NewMessage::assistant("anthropic", "[]".into(), None, vec![]),
                NewMessage::user_text("next"),
            ],
        )
        .await
        .unwrap();
    let summary = |from, to| NewSummary {
        covers_from: from,
        covers_to: to,
        text: "the user asked for a listing; it showed a b c".into(),
        provider_kind: Some("anthropic".into()),
        model: Some("claude-haiku".into()),
        usage: Some(usage(30, 7)),
    };
    let err = store.append_summary(&run, summary(1, 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidMessage(_)), "{err}");
    let before = store.get_run(&run).await.unwrap().unwrap().usage;
    store.append_summary(&run, summary(1, 4)).await.unwrap();

    let conv = store.conversation(&run).await.unwrap();
    assert_eq!(conv.messages.len(), 5, "originals stay");
    let items: Vec<String> = conv
        .effective()
        .iter()
        .map(|i| match i {
            ContextItem::Message(m) => format!("m{}", m.seq),
            ContextItem::Summary(s) => format!("s{}..{}", s.covers_from, s.covers_to),
        })
        .collect();
    assert_eq!(items, ["s1..4", "m5"]);
    let mut want = before;
    want.add(&usage(30, 7));
    assert_eq!(conv.run.usage, want);
    assert_eq!(conv.summaries[0].usage, Some(usage(30, 7)));
}

/// A subagent run (schema 12) names its parent run and the parent's call; the parent lists its
/// children, and listing marks the child, while other runs have no parent.
#[tokio::test]
async fn a_child_run_is_linked_to_its_parent_and_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let parent = store.create_run(new_run("parent-1")).await.unwrap();
    let child = store
        .create_child_run(
            new_run("child-1"),
            aibuddy_store::RunParent {
                run_id: parent.clone(),
                call_id: "parent-1:toolu_a".into(),
                shape: Some(r#"{"tools":["ls"]}"#.into()),
            },
        )
        .await
        .unwrap();
    let rec = store.get_run(&child).await.unwrap().unwrap();
    assert_eq!(rec.parent_run_id.as_deref(), Some("parent-1"));
    assert_eq!(rec.parent_call_id.as_deref(), Some("parent-1:toolu_a"));
    assert_eq!(rec.child_shape.as_deref(), Some(r#"{"tools":["ls"]}"#));
    let p = store.get_run(&parent).await.unwrap().unwrap();
    assert_eq!((p.parent_run_id, p.parent_call_id), (None, None));
    assert_eq!(
        store.child_runs(&parent).await.unwrap(),
        vec![("child-1".to_string(), Some("parent-1:toolu_a".to_string()))]
    );
    assert!(store.child_runs(&child).await.unwrap().is_empty());
    let rows = store.list_runs(10, None).await.unwrap();
    let row = rows.iter().find(|r| r.run_id == "child-1").unwrap();
    assert_eq!(row.parent_run_id.as_deref(), Some("parent-1"));
    assert_eq!(row.parent_call_id.as_deref(), Some("parent-1:toolu_a"));
    let row = rows.iter().find(|r| r.run_id == "parent-1").unwrap();
    assert_eq!(row.parent_run_id, None);
}
