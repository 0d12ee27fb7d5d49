//! Context rebuild from a stored conversation (pure: hand-built records).

use std::collections::{BTreeSet, HashMap};

use aibuddy_provider::{ContentBlock, Message, ResultBlock, Role};
use aibuddy_store::{
    CallStatus, CompactionState, ConfirmRecord, Conversation, Decision, Interaction, LinkedResult,
    MessageRecord, MessageRole, RequestedCall, RunRecord, SummaryRecord, Usage,
};
use serde_json::json;

use super::{SearchResults, rebuild};

fn run() -> RunRecord {
    RunRecord {
        run_id: "r1".into(),
        title: None,
        provider: Some("anthropic".into()),
        model: Some("m".into()),
        presentation: Some("native".into()),
        status: Some(aibuddy_store::RunStatus::Running),
        stage: None,
        error_message: None,
        started_at: String::new(),
        started_at_ms: 0,
        finished_at_ms: None,
        usage: Usage::default(),
        steps: 0,
        tool_calls: 0,
        project_root: None,
        owner: None,
        scoped_call_ids: false,
        stop_reason: None,
        parent_run_id: None,
        parent_call_id: None,
        child_shape: None,
    }
}

fn msg(seq: i64, role: MessageRole, content: String) -> MessageRecord {
    MessageRecord {
        message_id: format!("m{seq}"),
        run_id: "r1".into(),
        seq,
        role,
        content,
        provider_kind: None,
        created_at_ms: 0,
        usage: None,
        requested_calls: Vec::new(),
        tool_call_id: None,
        result: None,
    }
}

fn user(seq: i64, text: &str) -> MessageRecord {
    msg(seq, MessageRole::User, json!({"text": text}).to_string())
}

fn assistant(seq: i64, calls: &[(&str, &str)]) -> MessageRecord {
    let mut m = Message::assistant_text("working");
    for (id, name) in calls {
        m.content.push(ContentBlock::ToolUse {
            id: (*id).into(),
            name: (*name).into(),
            input: json!({}),
            kind: Default::default(),
        });
    }
    let mut r = msg(
        seq,
        MessageRole::Assistant,
        serde_json::to_string(&m).unwrap(),
    );
    r.requested_calls = calls
        .iter()
        .map(|(id, name)| RequestedCall {
            tool_call_id: (*id).into(),
            tool: (*name).into(),
        })
        .collect();
    r
}

fn result(
    seq: i64,
    id: &str,
    tool: &str,
    status: CallStatus,
    model: Option<&str>,
) -> MessageRecord {
    let mut r = msg(
        seq,
        MessageRole::Tool,
        json!({"tool_call_id": id}).to_string(),
    );
    r.tool_call_id = Some(id.into());
    r.result = Some(LinkedResult {
        tool: tool.into(),
        status,
        stage: None,
        error_message: Some("stopped".into()),
        model_projection: model.map(str::to_string),
        compaction_state: CompactionState::None,
        model_images: None,
        confinement_detail: None,
        sync: None,
    });
    r
}

fn conv(messages: Vec<MessageRecord>) -> Conversation {
    Conversation {
        run: run(),
        messages,
        summaries: Vec::new(),
        interactions: Vec::new(),
    }
}

fn results_of(m: &Message) -> Vec<(&str, &[ResultBlock], bool)> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.as_str(), content.as_slice(), *is_error)),
            _ => None,
        })
        .collect()
}

#[test]
fn results_use_the_model_projection_and_merge_into_one_user_turn() {
    let c = conv(vec![
        user(1, "hi"),
        assistant(2, &[("a", "read_file"), ("b", "execute")]),
        result(3, "a", "read_file", CallStatus::Ok, Some("file text")),
        result(4, "b", "execute", CallStatus::Error, Some("Error: exit 1")),
        user(5, "thanks"),
    ]);
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.messages[0], Message::user_text("hi"));
    assert_eq!(r.messages[1].role, Role::Assistant);
    let res = results_of(&r.messages[2]);
    assert_eq!(res.len(), 2);
    assert_eq!(
        res[0],
        (
            "a",
            &[ResultBlock::Text {
                text: "file text".into()
            }][..],
            false
        )
    );
    assert!(res[1].2, "an error result is flagged");
    assert_eq!(r.messages[2].text(), "thanks");
    assert_eq!(r.references[0].tool_calls, vec!["read_file", "execute"]);
}

#[test]
fn dangling_and_rowless_calls_are_answered_as_interrupted() {
    let mut rowless = result(3, "a", "read_file", CallStatus::Ok, None);
    rowless.result = None;
    let c = conv(vec![
        user(1, "go"),
        assistant(2, &[("a", "read_file"), ("b", "execute")]),
        rowless,
    ]);
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    let res = results_of(r.messages.last().unwrap());
    let ids: Vec<&str> = res.iter().map(|r| r.0).collect();
    assert_eq!(ids, vec!["a", "b"]);
    for (_, content, is_error) in res {
        assert!(is_error);
        assert!(
            matches!(&content[0], ResultBlock::Text { text } if text.starts_with("Interrupted"))
        );
    }
}

#[test]
fn tool_search_results_carry_references_only_on_native_and_only_to_sent_tools() {
    let c = conv(vec![
        user(1, "find"),
        assistant(2, &[("s", "tool_search")]),
        result(
            3,
            "s",
            "tool_search",
            CallStatus::Ok,
            Some("Activated 2 tools"),
        ),
    ]);
    let mut activated = HashMap::new();
    activated.insert(
        "s".to_string(),
        vec!["mcp__a__x".to_string(), "mcp__gone__y".to_string()],
    );
    let mut notes = HashMap::new();
    notes.insert("s".to_string(), "server \"slow\" not searched".to_string());
    let active = SearchResults {
        activated: activated.clone(),
        native_tools: None,
        notes: notes.clone(),
    };
    let r = rebuild(&c, &active).unwrap();
    let res = results_of(r.messages.last().unwrap());
    // activeTools: the tool's own text (which names the servers itself), no extra note.
    assert_eq!(
        res[0].1,
        &[ResultBlock::Text {
            text: "Activated 2 tools".into()
        }][..]
    );
    assert_eq!(r.references[1].activated, vec!["mcp__a__x", "mcp__gone__y"]);

    let names: BTreeSet<String> = ["mcp__a__x".to_string(), "tool_search".to_string()].into();
    let native = SearchResults {
        activated,
        native_tools: Some(&names),
        notes,
    };
    let r = rebuild(&c, &native).unwrap();
    let res = results_of(r.messages.last().unwrap());
    assert_eq!(
        res[0].1,
        &[
            ResultBlock::ToolReference {
                tool_name: "mcp__a__x".into()
            },
            ResultBlock::Text {
                text: "server \"slow\" not searched".into()
            }
        ][..]
    );
}

fn answer(call: &str, question: serde_json::Value, answer: serde_json::Value) -> Interaction {
    Interaction::Answer(aibuddy_store::UserAnswer {
        tool_call_id: call.into(),
        run_id: Some("r1".into()),
        question,
        answer,
        answered_at_ms: 1,
    })
}

/// Several calls answered in one turn, one with two elicitation answers: every result comes
/// first (the Messages API requires it), the person's texts follow in call order, and the MCP
/// call's own result is kept.
#[test]
fn results_come_first_and_every_interaction_of_a_call_follows() {
    let mut c = conv(vec![
        user(1, "go"),
        assistant(2, &[("m", "mcp__fx__elicit"), ("w", "write_file")]),
        result(3, "m", "mcp__fx__elicit", CallStatus::Ok, Some("accepted")),
        result(4, "w", "write_file", CallStatus::Rejected, Some("Rejected")),
    ]);
    let q = serde_json::json!({"kind": "elicitation", "server": "fx", "message": "Who?"});
    c.interactions.push(answer(
        "m",
        q.clone(),
        serde_json::json!({"form": {"name": "Ada"}}),
    ));
    c.interactions
        .push(answer("m", q, serde_json::json!({"declined": true})));
    c.interactions.push(Interaction::Confirm(ConfirmRecord {
        tool_call_id: "w".into(),
        run_id: Some("r1".into()),
        digest: "d".into(),
        target: "notes.txt".into(),
        scope: String::new(),
        consequence: String::new(),
        decision: Decision::Rejected,
        requested_at_ms: 0,
        decided_at_ms: Some(1),
        policy: None,
    }));
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    let last = r.messages.last().unwrap();
    let kinds: Vec<&str> = last
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult { .. } => "result",
            ContentBlock::Text { .. } => "text",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["result", "result", "text", "text", "text"]);
    let res = results_of(last);
    assert_eq!(
        res[0].1,
        &[ResultBlock::Text {
            text: "accepted".into()
        }][..]
    );
    let text = last.text();
    let (ada, declined, rejected) = (
        text.find("\"name\": \"Ada\"").unwrap(),
        text.find("declined").unwrap(),
        text.find("rejected notes.txt").unwrap(),
    );
    assert!(ada < declined && declined < rejected, "{text}");
}

#[test]
fn summaries_replace_their_range_and_confirms_become_user_text() {
    let mut c = conv(vec![
        user(1, "old"),
        assistant(2, &[]),
        user(3, "write it"),
        assistant(4, &[("w", "write_file")]),
        result(5, "w", "write_file", CallStatus::Rejected, Some("Rejected")),
    ]);
    c.summaries.push(SummaryRecord {
        summary_id: 1,
        run_id: "r1".into(),
        covers_from: 1,
        covers_to: 2,
        text: "we said hello".into(),
        provider_kind: None,
        model: None,
        usage: None,
        created_at_ms: 0,
    });
    c.interactions.push(Interaction::Confirm(ConfirmRecord {
        tool_call_id: "w".into(),
        run_id: Some("r1".into()),
        digest: "d".into(),
        target: "notes.txt".into(),
        scope: String::new(),
        consequence: String::new(),
        decision: Decision::Rejected,
        requested_at_ms: 0,
        decided_at_ms: Some(1),
        policy: None,
    }));
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    assert_eq!(r.messages.len(), 3);
    assert!(r.messages[0].text().contains("we said hello"));
    assert!(r.messages[0].text().ends_with("write it"));
    let last = r.messages.last().unwrap();
    assert!(last.text().contains("rejected notes.txt"), "{last:?}");
}

#[test]
fn a_corrupt_assistant_message_is_a_projection_error_not_a_panic() {
    let c = conv(vec![
        user(1, "x"),
        msg(2, MessageRole::Assistant, "{\"role\": 7}".into()),
    ]);
    let e = rebuild(&c, &SearchResults::default()).unwrap_err();
    assert_eq!(e.stage(), crate::contract::Stage::Projection);
}

#[test]
fn run_scoped_ids_are_stored_but_the_model_gets_its_own_ids_back() {
    let mut c = conv(vec![
        user(1, "hi"),
        assistant(2, &[("call_0", "read_file"), ("call_1", "execute")]),
        result(
            3,
            "r1:call_0",
            "read_file",
            CallStatus::Ok,
            Some("file text"),
        ),
    ]);
    c.run.scoped_call_ids = true;
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    let results = results_of(&r.messages[2]);
    assert_eq!(results.len(), 2);
    // The stored result is matched through its scoped id and named by the provider's id; the
    // call with no stored result is answered as interrupted, under its provider id too.
    assert_eq!(results[0].0, "call_0");
    assert_eq!(
        results[0].1,
        &[ResultBlock::Text {
            text: "file text".into()
        }]
    );
    assert_eq!((results[1].0, results[1].2), ("call_1", true));
    // A legacy run (stored before schema 5) matches provider ids as stored.
    c.run.scoped_call_ids = false;
    let r = rebuild(&c, &SearchResults::default()).unwrap();
    let results = results_of(&r.messages[2]);
    assert!(results.iter().all(|(_, _, err)| *err), "{results:?}");
}

/// A result's stored images follow its text as image blocks; a compacted or dropped text takes
/// its images with it, and a failed call sends none.
#[test]
fn stored_images_follow_the_text_unless_compaction_replaced_it() {
    let images = json!([{"media_type": "image/png", "data": "iVBORw0KGgo=", "width": 2,
        "height": 1, "source_width": 2, "source_height": 1}])
    .to_string();
    let with = |state: CompactionState, status: CallStatus| {
        let mut r = result(
            3,
            "a",
            "read_file",
            status,
            Some("[image 1: image/png, 2x1]"),
        );
        if let Some(l) = r.result.as_mut() {
            l.compaction_state = state;
            l.model_images = Some(images.clone());
        }
        let c = conv(vec![
            user(1, "look"),
            assistant(2, &[("a", "read_file")]),
            r,
        ]);
        let rebuilt = rebuild(&c, &SearchResults::default()).unwrap();
        results_of(&rebuilt.messages[2])[0].1.to_vec()
    };
    let text = ResultBlock::Text {
        text: "[image 1: image/png, 2x1]".into(),
    };
    let image = ResultBlock::Image {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    assert_eq!(
        with(CompactionState::None, CallStatus::Ok),
        vec![text.clone(), image]
    );
    assert_eq!(
        with(CompactionState::Compacted, CallStatus::Ok),
        vec![text.clone()]
    );
    assert_eq!(with(CompactionState::Dropped, CallStatus::Ok).len(), 1);
    assert_eq!(with(CompactionState::None, CallStatus::Error).len(), 1);
}
