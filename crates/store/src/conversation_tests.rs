//! Unit tests of the pure conversation rules (no database).

use super::*;
use crate::run_types::{RunRecord, Usage};
use crate::types::Decision;

fn msg(seq: i64, role: MessageRole, calls: &[&str], result_of: Option<&str>) -> MessageRecord {
    MessageRecord {
        message_id: format!("m{seq}"),
        run_id: "r".into(),
        seq,
        role,
        content: "{}".into(),
        provider_kind: None,
        created_at_ms: seq,
        usage: None,
        requested_calls: calls
            .iter()
            .map(|id| RequestedCall {
                tool_call_id: id.to_string(),
                tool: "read_file".into(),
            })
            .collect(),
        tool_call_id: result_of.map(str::to_string),
        result: None,
    }
}

/// 1 user, 2 assistant(a, b), 3 result a, 4 result b, 5 assistant, 6 user, 7 assistant(c), 8 result c
fn transcript() -> Vec<MessageRecord> {
    use MessageRole::*;
    vec![
        msg(1, User, &[], None),
        msg(2, Assistant, &["a", "b"], None),
        msg(3, Tool, &[], Some("a")),
        msg(4, Tool, &[], Some("b")),
        msg(5, Assistant, &[], None),
        msg(6, User, &[], None),
        msg(7, Assistant, &["c"], None),
        msg(8, Tool, &[], Some("c")),
    ]
}

fn summary(id: i64, from: i64, to: i64) -> SummaryRecord {
    SummaryRecord {
        summary_id: id,
        run_id: "r".into(),
        covers_from: from,
        covers_to: to,
        text: format!("summary {id}"),
        provider_kind: None,
        model: None,
        usage: None,
        created_at_ms: id,
    }
}

fn new_summary(from: i64, to: i64) -> NewSummary {
    NewSummary {
        covers_from: from,
        covers_to: to,
        text: "s".into(),
        provider_kind: None,
        model: None,
        usage: None,
    }
}

fn conversation(messages: Vec<MessageRecord>, summaries: Vec<SummaryRecord>) -> Conversation {
    Conversation {
        run: RunRecord {
            run_id: "r".into(),
            title: None,
            provider: None,
            model: None,
            presentation: None,
            status: None,
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
        },
        messages,
        summaries,
        interactions: Vec::new(),
    }
}

#[test]
fn messages_are_checked_for_json_roles_and_ids() {
    assert!(validate_message(&NewMessage::user_text("hi")).is_ok());
    assert!(validate_message(&NewMessage::tool_result("call_1")).is_ok());
    let mut bad = NewMessage::user_text("x");
    bad.content = "{not json".into();
    assert_eq!(validate_message(&bad).unwrap_err(), "content is not JSON");
    let mut user_calls = NewMessage::user_text("x");
    user_calls.requested_calls.push(RequestedCall {
        tool_call_id: "c".into(),
        tool: "t".into(),
    });
    assert!(validate_message(&user_calls).is_err());
    let mut orphan_tool = NewMessage::tool_result("c");
    orphan_tool.tool_call_id = None;
    assert!(validate_message(&orphan_tool).is_err());
    assert!(validate_message(&NewMessage::tool_result("../etc")).is_err());
    let twice = NewMessage::assistant(
        "anthropic",
        "[]".into(),
        None,
        vec![
            RequestedCall {
                tool_call_id: "c".into(),
                tool: "t".into(),
            },
            RequestedCall {
                tool_call_id: "c".into(),
                tool: "t".into(),
            },
        ],
    );
    assert!(validate_message(&twice).unwrap_err().contains("twice"));
}

#[test]
fn a_summary_never_splits_a_call_from_its_result() {
    let m = transcript();
    assert!(validate_summary(&m, &[], &new_summary(1, 4)).is_ok());
    assert!(validate_summary(&m, &[], &new_summary(1, 6)).is_ok());
    let split_after = validate_summary(&m, &[], &new_summary(1, 3)).unwrap_err();
    assert!(split_after.contains("b"), "{split_after}");
    let split_before = validate_summary(&m, &[], &new_summary(3, 6)).unwrap_err();
    assert!(split_before.contains("split"), "{split_before}");
    assert!(validate_summary(&m, &[], &new_summary(1, 9)).is_err());
    assert!(validate_summary(&m, &[], &new_summary(0, 2)).is_err());
    assert!(validate_summary(&m, &[], &new_summary(5, 4)).is_err());
    // A call whose result is not stored yet cannot be summarized.
    let pending = &m[..7];
    assert!(
        validate_summary(pending, &[], &new_summary(6, 7))
            .unwrap_err()
            .contains("no result")
    );
}

#[test]
fn summaries_contain_or_avoid_earlier_ones() {
    let m = transcript();
    let earlier = [summary(1, 1, 4)];
    assert!(validate_summary(&m, &earlier, &new_summary(1, 6)).is_ok());
    assert!(validate_summary(&m, &earlier, &new_summary(5, 6)).is_ok());
    assert!(validate_summary(&m, &[summary(1, 5, 6)], &new_summary(1, 5)).is_err());
}

#[test]
fn the_effective_context_puts_each_summary_in_place_of_its_range() {
    let conv = conversation(transcript(), vec![summary(1, 1, 4)]);
    let seqs: Vec<String> = conv
        .effective()
        .iter()
        .map(|i| match i {
            ContextItem::Message(m) => m.seq.to_string(),
            ContextItem::Summary(s) => format!("s{}", s.summary_id),
        })
        .collect();
    assert_eq!(seqs, ["s1", "5", "6", "7", "8"]);

    // A later, larger summary supersedes the earlier one; a disjoint one stays.
    let conv = conversation(
        transcript(),
        vec![summary(1, 1, 4), summary(2, 7, 8), summary(3, 1, 6)],
    );
    let seqs: Vec<String> = conv
        .effective()
        .iter()
        .map(|i| match i {
            ContextItem::Message(m) => m.seq.to_string(),
            ContextItem::Summary(s) => format!("s{}", s.summary_id),
        })
        .collect();
    assert_eq!(seqs, ["s3", "s2"]);
    assert_eq!(active_summaries(&conv.summaries).len(), 2);
}

#[test]
fn dangling_calls_are_requested_calls_without_a_result() {
    let mut m = transcript();
    m.truncate(3); // results of b and everything after are missing
    m.push(msg(4, MessageRole::Assistant, &["d"], None));
    let conv = conversation(m, Vec::new());
    let ids: Vec<&str> = conv
        .dangling_calls()
        .iter()
        .map(|c| c.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["b", "d"]);
}

#[test]
fn interactions_merge_by_completion_time() {
    let answer = |id: &str, at: i64| UserAnswer {
        tool_call_id: id.into(),
        run_id: Some("r".into()),
        question: serde_json::json!({"question": "?"}),
        answer: serde_json::json!("yes"),
        answered_at_ms: at,
    };
    let confirm = |id: &str, at: i64| ConfirmRecord {
        tool_call_id: id.into(),
        run_id: Some("r".into()),
        digest: "d".into(),
        target: "t".into(),
        scope: "s".into(),
        consequence: "c".into(),
        decision: Decision::Rejected,
        requested_at_ms: 0,
        decided_at_ms: Some(at),
        policy: None,
    };
    let merged = merge_interactions(
        vec![answer("a1", 10), answer("a2", 30)],
        vec![confirm("c1", 20), confirm("c2", 30)],
    );
    let ids: Vec<&str> = merged.iter().map(Interaction::tool_call_id).collect();
    assert_eq!(ids, ["a1", "c1", "a2", "c2"]);
}
