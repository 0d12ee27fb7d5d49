//! Unit tests of the compaction decisions (no I/O).

use super::*;
use aibuddy_store::MessageRole::{Assistant, Tool, User};

fn user(seq: i64) -> TurnView {
    TurnView {
        seq,
        role: User,
        requested: Vec::new(),
        answers: None,
    }
}

fn step(seq: i64, calls: &[&str]) -> TurnView {
    TurnView {
        seq,
        role: Assistant,
        requested: calls.iter().map(|c| c.to_string()).collect(),
        answers: None,
    }
}

fn result(seq: i64, id: &str) -> TurnView {
    TurnView {
        seq,
        role: Tool,
        requested: Vec::new(),
        answers: Some(id.into()),
    }
}

fn summary(from: i64, to: i64) -> SummaryRecord {
    SummaryRecord {
        summary_id: to,
        run_id: "r".into(),
        covers_from: from,
        covers_to: to,
        text: "s".into(),
        provider_kind: None,
        model: None,
        usage: None,
        created_at_ms: 0,
    }
}

/// user, step(a,b), result a, result b, step(c), result c, step (final), user, step
fn run() -> Vec<TurnView> {
    vec![
        user(1),
        step(2, &["a", "b"]),
        result(3, "a"),
        result(4, "b"),
        step(5, &["c"]),
        result(6, "c"),
        step(7, &[]),
        user(8),
        step(9, &[]),
    ]
}

/// Every call requested in `0..=to` is answered in `0..=to`, and no call requested after is
/// answered before (pairs on one side of the cut).
fn pairs_intact(msgs: &[TurnView], cut: &Cut) {
    for m in msgs {
        for id in &m.requested {
            let answered = msgs
                .iter()
                .find(|r| r.answers.as_deref() == Some(id.as_str()));
            if let Some(r) = answered {
                assert_eq!(
                    m.seq <= cut.covers_to,
                    r.seq <= cut.covers_to,
                    "call {id} split by {cut:?}"
                );
            }
        }
    }
}

#[test]
fn cuts_at_a_turn_boundary_keeping_the_recent_turns() {
    let msgs = run();
    let cut = cut_point(&msgs, &[], 2).unwrap();
    // Kept: user(8), step(9).
    assert_eq!(
        cut,
        Cut {
            covers_from: 1,
            covers_to: 7
        }
    );
    let cut = cut_point(&msgs, &[], 4).unwrap();
    // Kept: step(5)+result(6), step(7), user(8), step(9).
    assert_eq!(cut.covers_to, 4);
    pairs_intact(&msgs, &cut);
}

#[test]
fn pairs_are_never_split_whatever_is_kept() {
    let msgs = run();
    for keep in 0..12 {
        if let Some(cut) = cut_point(&msgs, &[], keep) {
            pairs_intact(&msgs, &cut);
            let first_kept = msgs.iter().find(|m| m.seq > cut.covers_to).unwrap();
            assert_ne!(first_kept.role, Tool, "keep {keep}: starts with a result");
        }
    }
    // Results answered late (interleaved with a user message) still keep the pair together.
    let odd = vec![
        user(1),
        step(2, &["a"]),
        user(3),
        result(4, "a"),
        step(5, &[]),
        user(6),
        step(7, &[]),
    ];
    for keep in 1..6 {
        if let Some(cut) = cut_point(&odd, &[], keep) {
            pairs_intact(&odd, &cut);
            assert_ne!(cut.covers_to, 2);
            assert_ne!(cut.covers_to, 3);
        }
    }
}

#[test]
fn at_least_one_turn_is_kept() {
    let msgs = run();
    // keep 0 counts as 1: the last step stays.
    assert_eq!(cut_point(&msgs, &[], 0).unwrap().covers_to, 8);
    // Nothing to cut when everything is recent.
    assert_eq!(cut_point(&msgs, &[], 7), None);
    // Keeping all but the prompt would summarize no model step: nothing to do.
    assert_eq!(cut_point(&msgs, &[], 5), None);
    assert_eq!(cut_point(&[user(1)], &[], 1), None);
    assert_eq!(cut_point(&[], &[], 1), None);
}

#[test]
fn idempotent_and_contains_earlier_summaries() {
    let msgs = run();
    let cut = cut_point(&msgs, &[], 2).unwrap();
    // Applied: asking again gives nothing new.
    let applied = vec![summary(cut.covers_from, cut.covers_to)];
    assert_eq!(cut_point(&msgs, &applied, 2), None);
    // An earlier, smaller summary is contained by the next cut.
    let earlier = vec![summary(1, 4)];
    let next = cut_point(&msgs, &earlier, 2).unwrap();
    assert_eq!((next.covers_from, next.covers_to), (1, 7));
}

#[test]
fn estimate_uses_reported_usage_plus_appended_bytes() {
    let last = LastUsage {
        input_tokens: 1000,
        output_tokens: 50,
    };
    assert_eq!(estimate_next_tokens(Some(last), 30, 999_999), 1060);
    assert_eq!(estimate_next_tokens(Some(last), 31, 0), 1061);
    assert_eq!(estimate_next_tokens(None, 0, 3000), 1000);
    assert!(should_compact(801, 1000, 0.8));
    assert!(!should_compact(800, 1000, 0.8));
    assert!(!should_compact(5, 0, 0.8));
    assert!(!should_compact(999, 1000, f64::NAN));
    assert!(should_compact(1001, 1000, 7.0));
}

#[test]
fn prompt_tokens_count_anthropic_cache_apart_and_openai_cache_inside() {
    assert_eq!(prompt_tokens(Some("anthropic"), 10, 1000, 5), 1015);
    assert_eq!(prompt_tokens(Some("openai-chat"), 1010, 1000, 0), 1010);
    assert_eq!(prompt_tokens(Some("openai-responses"), 1010, 1000, 0), 1010);
    assert_eq!(prompt_tokens(None, 7, 3, 3), 7);
}
