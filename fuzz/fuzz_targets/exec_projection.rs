//! The execute projection: `aibuddy_exec::model_text` / `project_for_model` over outputs captured
//! as the runner captures them (head buffer, tail ring, omitted middle), up to a few megabytes.
//!
//! Input: `mode, head_cap (2 bytes), tail_cap (2 bytes), repeat byte` then the output bytes, repeated
//! (so a small input becomes an output far over the cap). Mode bit 0 keeps only plain characters
//! (printable ASCII and newlines), for which the text shown can be compared byte for byte.
//! Invariants (all modes): never panics; at most 30,000 characters; the `omitted_middle_bytes`
//! line and the `[... N bytes omitted ...]` marker appear exactly when something was cut and both
//! say the exact `omitted_bytes`; it is at least the capture's own gap and at most the output size;
//! no control character but newline and tab. Plain mode, exactly: the text shown is a prefix of
//! the output, then (when cut) a suffix of it; shown + omitted = total bytes; when cut, both the head
//! and the tail are non-empty; when the output fits in the budget it is shown whole.
#![no_main]

use std::time::Duration;

use aibuddy_exec::{
    Confinement, ExecOutcome, MODEL_CHAR_CAP, StreamStats, Termination, model_text,
    project_for_model,
};
use libfuzzer_sys::fuzz_target;

const OPEN: &str = "--- output ---\n";
const CLOSE: &str = "\n--- end of output ---";

/// What the runner's HeadTail keeps of `data`: the first `head_cap` bytes, the last `tail_cap`
/// bytes after them, and the count of bytes in between.
fn capture(data: &[u8], head_cap: usize, tail_cap: usize) -> (Vec<u8>, Vec<u8>, u64) {
    let head = data[..head_cap.min(data.len())].to_vec();
    let rest = &data[head.len()..];
    let tail = rest[rest.len().saturating_sub(tail_cap)..].to_vec();
    let omitted = (rest.len() - tail.len()) as u64;
    (head, tail, omitted)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let mode = data[0];
    let head_cap = u16::from_le_bytes([data[1], data[2]]) as usize * 4;
    let tail_cap = u16::from_le_bytes([data[3], data[4]]) as usize * 4;
    let repeat = data[5] as usize + 1;
    let mut unit = data[6..].to_vec();
    let plain = mode & 1 == 1;
    if plain {
        for b in unit.iter_mut() {
            if !(*b == b'\n' || (0x20..0x7f).contains(b)) {
                *b = b'a' + (*b % 26);
            }
        }
    }
    let output: Vec<u8> = unit.repeat(repeat.min(4 * 1024 * 1024 / unit.len().max(1)));
    let (head, tail, gap) = capture(&output, head_cap, tail_cap);
    let split = (mode as usize >> 1) % 3;
    let (out_bytes, err_bytes) = match split {
        0 => (output.len() as u64, 0),
        1 => (0, output.len() as u64),
        _ => (
            output.len() as u64 / 2,
            output.len() as u64 - output.len() as u64 / 2,
        ),
    };
    let outcome = ExecOutcome {
        termination: if mode & 0x40 != 0 {
            Termination::Signaled {
                signal: i32::from(mode & 0x3f),
            }
        } else {
            Termination::Exited {
                code: i32::from(mode) - 128,
            }
        },
        duration: Duration::from_millis(u64::from(data[5]) * 1000),
        timed_out: mode & 0x20 != 0,
        cancelled: mode & 0x80 != 0,
        killed_leftovers: false,
        head,
        tail,
        omitted_middle_bytes: gap,
        stdout: StreamStats {
            total_bytes: out_bytes,
            spool_omitted_bytes: 0,
        },
        stderr: StreamStats {
            total_bytes: err_bytes,
            spool_omitted_bytes: 0,
        },
        spool: None,
        confinement: Confinement::Disabled,
        env_dropped: vec![],
        pgid: 1,
        network: None,
        protected: Default::default(),
        sync: None,
    };

    let m = model_text(&outcome);
    assert_eq!(project_for_model(&outcome), m.text);
    let chars = m.text.chars().count();
    assert!(chars <= MODEL_CHAR_CAP, "{chars} characters");
    assert!(
        !m.text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "control character in the model text"
    );
    let total = output.len() as u64;
    assert!(
        m.omitted_bytes >= gap && m.omitted_bytes <= total,
        "{} of {total}",
        m.omitted_bytes
    );
    let line = format!("\nomitted_middle_bytes: {}\n", m.omitted_bytes);
    let marker = format!("[... {} bytes omitted ...]\n", m.omitted_bytes);
    let start = m.text.find(OPEN).expect("output opening line") + OPEN.len();
    let header = &m.text[..start];
    let body = m.text[start..]
        .strip_suffix(CLOSE)
        .expect("output closing line");
    assert!(header.starts_with("exit: "), "{header}");
    assert!(
        header.contains(&format!("output_bytes: {total} ")),
        "{header}"
    );
    if m.omitted_bytes == 0 {
        assert!(!header.contains("omitted_middle_bytes"), "{header}");
        if plain {
            assert_eq!(
                body.as_bytes(),
                &output[..],
                "a whole output is shown whole"
            );
        }
        return;
    }
    assert!(header.contains(&line), "{header}");
    if !plain {
        return;
    }
    // Plain text: head is a prefix, tail a suffix, everything else counted exactly.
    let cut = body.find(&marker).expect("omitted marker");
    let before = &body[..cut];
    let shown_tail = &body[cut + marker.len()..];
    // The projection puts a newline before the marker when the head does not end with one, so a
    // head shown as "...\n" is either the output's own newline or that separator: try both.
    let mut heads = vec![before];
    if let Some(h) = before.strip_suffix('\n')
        && !h.is_empty()
        && !h.ends_with('\n')
    {
        heads.push(h);
    }
    assert!(
        output.ends_with(shown_tail.as_bytes()),
        "tail is not a suffix"
    );
    assert!(
        heads.iter().any(|h| output.starts_with(h.as_bytes())
            && h.len() as u64 + shown_tail.len() as u64 + m.omitted_bytes == total),
        "head is not a prefix, or shown + omitted != total"
    );
    if !outcome.head.is_empty() {
        assert!(!before.is_empty(), "the head is kept");
    }
    if !outcome.tail.is_empty() || gap == 0 {
        assert!(!shown_tail.is_empty(), "the tail is kept");
    }
});
