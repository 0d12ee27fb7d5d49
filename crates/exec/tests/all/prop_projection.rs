//! Property tests of the execute projection (the model text of a command's output): at most
//! 30,000 characters, head and tail kept, and the omitted count exact, for outputs captured the
//! way the runner captures them (head buffer, tail ring, omitted middle).

use std::time::Duration;

use aibuddy_exec::{
    Confinement, DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES, ExecOutcome, MODEL_CHAR_CAP, StreamStats,
    Termination, model_text,
};
use proptest::prelude::*;

const OPEN: &str = "--- output ---\n";
const CLOSE: &str = "\n--- end of output ---";

/// What the runner keeps: the first `head` bytes, the last `tail` bytes after them, the gap.
fn outcome(data: &[u8], head: usize, tail: usize) -> ExecOutcome {
    let h = data[..head.min(data.len())].to_vec();
    let rest = &data[h.len()..];
    let t = rest[rest.len().saturating_sub(tail)..].to_vec();
    ExecOutcome {
        termination: Termination::Exited { code: 0 },
        duration: Duration::from_millis(5),
        timed_out: false,
        cancelled: false,
        killed_leftovers: false,
        omitted_middle_bytes: (rest.len() - t.len()) as u64,
        head: h,
        tail: t,
        stdout: StreamStats {
            total_bytes: data.len() as u64,
            spool_omitted_bytes: 0,
        },
        stderr: StreamStats::default(),
        spool: None,
        confinement: Confinement::Disabled,
        env_dropped: vec![],
        pgid: 1,
        network: None,
        protected: Default::default(),
        sync: None,
    }
}

/// Printable ASCII and newlines, repeated up to several times the cap.
fn plain_output() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(prop_oneof![8 => 0x20u8..0x7f, 1 => Just(b'\n')], 1..200),
        1usize..2000,
    )
        .prop_map(|(unit, n)| unit.repeat(n))
}

fn caps() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        Just((DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES)),
        (0usize..70_000, 0usize..70_000),
    ]
}

fn body(text: &str) -> &str {
    let start = text.find(OPEN).map(|i| i + OPEN.len()).unwrap_or(0);
    text[start..]
        .strip_suffix(CLOSE)
        .unwrap_or("<no closing line>")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Plain text can be checked byte for byte: prefix, suffix, exact omitted count.
    #[test]
    fn plain_output_is_head_and_tail_with_an_exact_count(data in plain_output(), (h, t) in caps()) {
        let o = outcome(&data, h, t);
        let m = model_text(&o);
        prop_assert!(m.text.chars().count() <= MODEL_CHAR_CAP);
        let b = body(&m.text);
        if m.omitted_bytes == 0 {
            prop_assert_eq!(b.as_bytes(), &data[..]);
            prop_assert!(!m.text.contains("omitted_middle_bytes"));
            return Ok(());
        }
        let marker = format!("[... {} bytes omitted ...]\n", m.omitted_bytes);
        let line = format!("\nomitted_middle_bytes: {}\n", m.omitted_bytes);
        prop_assert!(m.text.contains(&line));
        let cut = b.find(&marker).expect("marker");
        let (before, tail) = (&b[..cut], &b[cut + marker.len()..]);
        let mut heads = vec![before];
        if let Some(h) = before.strip_suffix('\n').filter(|h| !h.is_empty() && !h.ends_with('\n')) {
            heads.push(h);
        }
        prop_assert!(data.ends_with(tail.as_bytes()), "tail is a suffix");
        prop_assert!(
            heads.iter().any(|h| data.starts_with(h.as_bytes())
                && (h.len() + tail.len()) as u64 + m.omitted_bytes == data.len() as u64),
            "head is a prefix and shown + omitted = total"
        );
        prop_assert!(m.omitted_bytes >= o.omitted_middle_bytes);
        if !o.head.is_empty() {
            prop_assert!(!before.is_empty(), "head kept");
        }
        if !o.tail.is_empty() || o.omitted_middle_bytes == 0 {
            prop_assert!(!tail.is_empty(), "tail kept");
        }
    }

    /// Any bytes (invalid UTF-8, ANSI, NUL, CR): bounded, no control character, count in range.
    #[test]
    fn any_output_is_bounded_and_clean(
        unit in prop::collection::vec(any::<u8>(), 1..300),
        n in 1usize..1000,
        (h, t) in caps(),
    ) {
        let data = unit.repeat(n);
        let o = outcome(&data, h, t);
        let m = model_text(&o);
        prop_assert!(m.text.chars().count() <= MODEL_CHAR_CAP);
        prop_assert!(!m.text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        prop_assert!(m.omitted_bytes >= o.omitted_middle_bytes);
        prop_assert!(m.omitted_bytes <= data.len() as u64);
        let said = m.omitted_bytes > 0;
        prop_assert_eq!(m.text.contains("omitted_middle_bytes: "), said);
        prop_assert_eq!(m.text.contains(&format!("[... {} bytes omitted ...]", m.omitted_bytes)), said);
    }
}
