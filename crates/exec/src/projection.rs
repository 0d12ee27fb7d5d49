//! The model projection of an outcome: a pure function capped at [`MODEL_CHAR_CAP`] characters.
//!
//! Format (fixed; lines in this order, optional ones marked `?`):
//!
//! ```text
//! exit: code 1                    (or: exit: signal 9 (SIGKILL))
//! status: completed               (or: timed out / cancelled)
//! duration_ms: 1532
//! output_bytes: 10485760 (stdout 10485760, stderr 0)
//! protected: removed ...; restored ... ?  only when the command created or changed a protected path
//! omitted_middle_bytes: 10420000  ?  only when something was cut
//! note: ...                       ?  only when something was cut
//! --- output ---
//! <head>
//! [... 10420000 bytes omitted ...] ?  only when something was cut
//! <tail>
//! --- end of output ---
//! ```
//!
//! The output text is stdout and stderr interleaved as read. Decoding is lossy UTF-8 (invalid bytes
//! become U+FFFD, text is never cut inside a character); ANSI CSI sequences are removed; `\r\n`
//! becomes `\n`; a lone `\r` (progress bars) rewinds to the start of its line, as a terminal shows it;
//! other control characters (NUL, binary) become U+FFFD. `omitted_middle_bytes` counts raw bytes.

use crate::outcome::{ExecOutcome, Termination};

/// Maximum characters of the model projection (header included).
pub const MODEL_CHAR_CAP: usize = 30_000;

/// Builds the model text for `outcome`, at most [`MODEL_CHAR_CAP`] characters.
pub fn project_for_model(outcome: &ExecOutcome) -> String {
    project_with_cap(outcome, MODEL_CHAR_CAP)
}

/// The model text and how many output bytes it leaves out (the middle cut of the capture buffers
/// plus whatever the character cap cut further), so display fields agree with what the model saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelText {
    pub text: String,
    pub omitted_bytes: u64,
    /// Byte offset in the combined output (the spool) where the omitted bytes begin: they are
    /// `omitted_from..omitted_from + omitted_bytes`. Zero when nothing was cut.
    pub omitted_from: u64,
}

/// [`project_for_model`] with the omitted byte count.
pub fn model_text(outcome: &ExecOutcome) -> ModelText {
    project_detailed(outcome, MODEL_CHAR_CAP)
}

/// [`model_text`] with another cap (a caller that appends its own lines to a cut text keeps
/// room for them).
pub fn model_text_with_cap(outcome: &ExecOutcome, cap: usize) -> ModelText {
    project_detailed(outcome, cap)
}

/// As [`project_for_model`] with another cap (at least a few hundred characters are needed for
/// any output to show).
pub fn project_with_cap(outcome: &ExecOutcome, cap: usize) -> String {
    project_detailed(outcome, cap).text
}

fn project_detailed(outcome: &ExecOutcome, cap: usize) -> ModelText {
    let exit = match outcome.termination {
        Termination::Exited { code } => format!("code {code}"),
        Termination::Signaled { signal } => format!("signal {signal} ({})", signal_name(signal)),
    };
    let status = if outcome.cancelled {
        "cancelled"
    } else if outcome.timed_out {
        "timed out"
    } else {
        "completed"
    };
    let mut header = format!(
        "exit: {exit}\nstatus: {status}\nduration_ms: {}\noutput_bytes: {} (stdout {}, stderr {})\n",
        outcome.duration.as_millis(),
        outcome.total_bytes(),
        outcome.stdout.total_bytes,
        outcome.stderr.total_bytes
    );
    header.push_str(&protected_line(&outcome.protected));
    const OPEN: &str = "--- output ---\n";
    const CLOSE: &str = "\n--- end of output ---";
    // Room reserved for the omitted-bytes line, the note and the marker (numbers up to 20 digits).
    const CUT_RESERVE: usize = 260;
    let fixed = header.chars().count() + OPEN.len() + CLOSE.len();
    let budget = cap.saturating_sub(fixed + CUT_RESERVE);

    let body = cut_body(
        &outcome.head,
        outcome.omitted_middle_bytes,
        &outcome.tail,
        budget,
    );
    let mut out = header;
    if body.omitted > 0 {
        out.push_str(&format!(
            "omitted_middle_bytes: {}\nnote: output was cut; narrow the command (grep, head, tail) or redirect it to a file in the project and read slices\n",
            body.omitted
        ));
    }
    out.push_str(OPEN);
    out.push_str(&body.head);
    if body.omitted > 0 {
        if !body.head.is_empty() && !body.head.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[... {} bytes omitted ...]\n", body.omitted));
    }
    out.push_str(&body.tail);
    out.push_str(CLOSE);
    if out.chars().count() > cap {
        // Only reachable with absurdly small caps; never cut inside a character.
        out = out.chars().take(cap).collect();
    }
    ModelText {
        text: out,
        omitted_bytes: body.omitted,
        omitted_from: if body.omitted > 0 { body.from } else { 0 },
    }
}

/// The `protected:` line (empty when nothing was swept): at most 8 paths per list.
fn protected_line(p: &crate::protect::ProtectedReport) -> String {
    fn list(paths: &[std::path::PathBuf]) -> String {
        let mut s: Vec<String> = paths
            .iter()
            .take(8)
            .map(|p| p.display().to_string().chars().take(200).collect())
            .collect();
        if paths.len() > 8 {
            s.push(format!("and {} more", paths.len() - 8));
        }
        s.join(", ")
    }
    let mut parts = Vec::new();
    if !p.removed.is_empty() {
        parts.push(format!(
            "created by the command and removed after it: {}",
            list(&p.removed)
        ));
    }
    if !p.restored.is_empty() {
        parts.push(format!(
            "changed by the command and restored after it: {}",
            list(&p.restored)
        ));
    }
    if !p.unguarded.is_empty() {
        parts.push(format!(
            "too large to guard on this path: {}",
            list(&p.unguarded)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "protected: {} (protected paths are read-only to commands)\n",
        parts.join("; ")
    )
}

struct Body {
    head: String,
    tail: String,
    omitted: u64,
    /// Raw bytes of the output before the omitted part (the head shown).
    from: u64,
}

fn cut_body(head: &[u8], gap: u64, tail: &[u8], budget: usize) -> Body {
    let (head, tail): (std::borrow::Cow<[u8]>, &[u8]) = if gap == 0 {
        // Contiguous: decode as one text so a character split across the buffers survives.
        let mut all = head.to_vec();
        all.extend_from_slice(tail);
        (all.into(), &[])
    } else {
        (head.into(), tail)
    };
    let head_full = normalize(&head, usize::MAX);
    let tail_full = normalize(tail, usize::MAX);
    if gap == 0 && head_full.chars <= budget {
        return Body {
            head: head_full.text,
            tail: String::new(),
            omitted: 0,
            from: 0,
        };
    }
    if gap == 0 {
        // One buffer too long: keep its prefix and suffix.
        let h = normalize(&head, budget / 2);
        let rest = &head[h.raw_used..];
        let (t, start) = suffix(rest, budget - h.chars);
        return Body {
            from: h.raw_used as u64,
            head: h.text,
            tail: t,
            omitted: start as u64,
        };
    }
    // Not contiguous: the gap is omitted anyway. A head ending inside a character loses that
    // partial character (counted as omitted) rather than showing U+FFFD for a cut we made.
    let partial = incomplete_suffix_len(&head);
    let head = &head[..head.len() - partial];
    // Split the budget, giving unused room to the other side.
    let head_budget = (budget / 2).max(budget.saturating_sub(tail_full.chars));
    let h = normalize(head, head_budget);
    let head_cut = (head.len() - h.raw_used + partial) as u64;
    // A tail starting inside a character: skip the continuation bytes.
    let skip = tail
        .iter()
        .take(3)
        .take_while(|b| is_continuation(**b))
        .count();
    let (t, start) = suffix(&tail[skip..], budget - h.chars);
    Body {
        from: h.raw_used as u64,
        head: h.text,
        tail: t,
        omitted: head_cut + gap + (skip + start) as u64,
    }
}

/// Length of an incomplete (but so far valid) UTF-8 sequence at the end of `raw`.
fn incomplete_suffix_len(raw: &[u8]) -> usize {
    for back in 1..=3.min(raw.len()) {
        let b = raw[raw.len() - back];
        if is_continuation(b) {
            continue;
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

fn is_continuation(b: u8) -> bool {
    (0x80..0xC0).contains(&b)
}

/// The shortest suffix start (at a character boundary) whose normalized text fits `max_chars`.
fn suffix(raw: &[u8], max_chars: usize) -> (String, usize) {
    let fits = |s: usize| normalize(&raw[s..], usize::MAX).chars <= max_chars;
    let (mut lo, mut hi) = (0usize, raw.len());
    if fits(0) {
        hi = 0;
    } else {
        // Invariant: fits(hi), !fits(lo).
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { hi = mid } else { lo = mid }
        }
    }
    let mut start = hi;
    while start < raw.len() && is_continuation(raw[start]) && start - hi < 3 {
        start += 1;
    }
    (normalize(&raw[start..], usize::MAX).text, start)
}

struct Normalized {
    text: String,
    chars: usize,
    /// Raw bytes consumed to produce `text` (a prefix of the input).
    raw_used: usize,
}

/// Lossy, terminal-like decoding of `raw`, stopping before `max_chars` would be exceeded.
fn normalize(raw: &[u8], max_chars: usize) -> Normalized {
    let mut text = String::new();
    let mut chars = 0usize;
    // (byte length, char count) of `text` at the start of the current line.
    let mut line_start = (0usize, 0usize);
    let mut raw_used = 0usize;
    let mut pending_cr = false;
    let mut in_csi = false;
    let mut esc = false;
    for chunk in raw.utf8_chunks() {
        let valid = chunk.valid();
        for (i, c) in valid.char_indices() {
            let width = c.len_utf8();
            if pending_cr {
                pending_cr = false;
                if c != '\n' {
                    // Lone \r: the line is redrawn from its start.
                    text.truncate(line_start.0);
                    chars = line_start.1;
                }
            }
            let emitted: Option<char> = if in_csi {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    in_csi = false;
                }
                None
            } else if esc {
                esc = false;
                if c == '[' {
                    in_csi = true;
                }
                None
            } else {
                match c {
                    '\u{1b}' => {
                        esc = true;
                        None
                    }
                    '\r' => {
                        pending_cr = true;
                        None
                    }
                    '\n' | '\t' => Some(c),
                    c if c.is_control() => Some('\u{fffd}'),
                    c => Some(c),
                }
            };
            if let Some(e) = emitted {
                if chars + 1 > max_chars {
                    let _ = i;
                    return Normalized {
                        text,
                        chars,
                        raw_used,
                    };
                }
                text.push(e);
                chars += 1;
                if e == '\n' {
                    line_start = (text.len(), chars);
                }
            }
            raw_used += width;
        }
        let invalid = chunk.invalid();
        if !invalid.is_empty() {
            if chars + 1 > max_chars {
                return Normalized {
                    text,
                    chars,
                    raw_used,
                };
            }
            pending_cr = false;
            text.push('\u{fffd}');
            chars += 1;
            raw_used += invalid.len();
        }
    }
    Normalized {
        text,
        chars,
        raw_used,
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod model_text_tests {
    use super::*;

    #[test]
    fn omitted_bytes_match_the_text() {
        let short = outcome_for_test(b"hello\n");
        assert_eq!(model_text(&short).omitted_bytes, 0);
        // 200 KB contiguous in the head buffer alone: the character cap cuts it, not the capture.
        let big = outcome_for_test(&vec![b'x'; 200_000]);
        let m = model_text(&big);
        assert!(m.omitted_bytes > 0);
        assert!(
            m.text
                .contains(&format!("omitted_middle_bytes: {}", m.omitted_bytes))
        );
    }

    #[test]
    fn swept_protected_paths_get_one_bounded_header_line() {
        let mut o = outcome_for_test(b"ok\n");
        assert!(!project_for_model(&o).contains("protected:"));
        o.protected.removed = (0..20).map(|i| format!("/p/.x{i}").into()).collect();
        o.protected.restored = vec!["/p/.git/config".into()];
        let text = project_for_model(&o);
        let line = text.lines().find(|l| l.starts_with("protected: ")).unwrap();
        assert!(line.contains("/p/.x7, and 12 more"), "{line}");
        assert!(line.contains("changed by the command and restored after it: /p/.git/config"));
        assert!(text.ends_with("ok\n\n--- end of output ---"), "{text}");
    }

    #[test]
    fn the_omitted_range_is_exactly_the_bytes_not_shown() {
        // Distinct digits so a misplaced range shows; contiguous (one buffer) and with a capture
        // gap (small head and tail buffers).
        let data: Vec<u8> = (0..300_000u32).map(|i| b'0' + (i % 10) as u8).collect();
        for (head, tail) in [(1 << 20, 1 << 20), (8 * 1024, 8 * 1024)] {
            let o = super::tests::outcome_from(&data, head, tail);
            let m = model_text(&o);
            assert!(m.omitted_bytes > 0);
            let (from, to) = (
                m.omitted_from as usize,
                (m.omitted_from + m.omitted_bytes) as usize,
            );
            let start = m.text.find("--- output ---\n").unwrap() + 15;
            let end = m.text.rfind("\n--- end of output ---").unwrap();
            let body = m.text[start..end].replace(
                &format!("[... {} bytes omitted ...]\n", m.omitted_bytes),
                "",
            );
            let expected = format!(
                "{}\n{}",
                String::from_utf8_lossy(&data[..from]),
                String::from_utf8_lossy(&data[to..])
            );
            assert_eq!(body, expected, "head {head}");
        }
    }

    fn outcome_for_test(data: &[u8]) -> ExecOutcome {
        super::tests::outcome_from(data, 1 << 20, 1 << 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::HeadTail;
    use crate::outcome::{Confinement, StreamStats};
    use std::time::Duration;

    pub(super) fn outcome_from(data: &[u8], head: usize, tail: usize) -> ExecOutcome {
        let mut ht = HeadTail::new(head, tail);
        for c in data.chunks(4096) {
            ht.push(c);
        }
        let (head, tail, omitted) = ht.finish();
        ExecOutcome {
            termination: Termination::Exited { code: 0 },
            duration: Duration::from_millis(12),
            timed_out: false,
            cancelled: false,
            killed_leftovers: false,
            head,
            tail,
            omitted_middle_bytes: omitted,
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

    fn body(p: &str) -> &str {
        let start = p.find("--- output ---\n").unwrap() + "--- output ---\n".len();
        let end = p.rfind("\n--- end of output ---").unwrap();
        &p[start..end]
    }

    #[test]
    fn small_output_is_whole_and_format_is_fixed() {
        let o = outcome_from(b"hello\nworld\n", 64, 64);
        assert_eq!(
            project_for_model(&o),
            "exit: code 0\nstatus: completed\nduration_ms: 12\noutput_bytes: 12 (stdout 12, stderr 0)\n--- output ---\nhello\nworld\n\n--- end of output ---"
        );
    }

    #[test]
    fn ten_megabytes_are_capped_with_head_tail_and_omitted_count() {
        let mut data = b"FIRST LINE\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
        data.extend_from_slice(b"\nLAST LINE\n");
        let o = outcome_from(&data, 64 * 1024, 64 * 1024);
        let p = project_for_model(&o);
        assert!(p.chars().count() <= MODEL_CHAR_CAP);
        assert!(p.chars().count() > MODEL_CHAR_CAP - 400, "uses the budget");
        assert!(body(&p).starts_with("FIRST LINE\n"));
        assert!(body(&p).ends_with("LAST LINE\n"));
        let shown = body(&p).chars().filter(|c| *c == 'x').count() as u64;
        let omitted: u64 = p
            .lines()
            .find_map(|l| l.strip_prefix("omitted_middle_bytes: "))
            .unwrap()
            .parse()
            .unwrap();
        // Every raw byte is either shown or counted as omitted.
        assert_eq!(shown + omitted + 22, data.len() as u64);
        assert!(p.contains(&format!("[... {omitted} bytes omitted ...]")));
    }

    #[test]
    fn boundary_sizes_around_the_cap() {
        let cut = |n: usize| {
            let p = project_for_model(&outcome_from(&vec![b'a'; n], 1 << 16, 1 << 16));
            assert!(p.chars().count() <= MODEL_CHAR_CAP, "n={n}");
            let shown = body(&p).chars().filter(|c| *c == 'a').count();
            let omitted: usize = p
                .lines()
                .find_map(|l| l.strip_prefix("omitted_middle_bytes: "))
                .map_or(0, |v| v.parse().unwrap());
            assert_eq!(shown + omitted, n, "n={n}: every byte shown or counted");
            omitted > 0
        };
        // Largest size shown whole: found by bisection, then checked on both sides of the edge.
        let (mut lo, mut hi) = (0usize, MODEL_CHAR_CAP + 1);
        assert!(!cut(lo) && cut(hi));
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if cut(mid) { hi = mid } else { lo = mid }
        }
        assert!(lo > MODEL_CHAR_CAP - 400, "whole output up to {lo} chars");
        assert!(!cut(lo) && cut(lo + 1));
        for n in [
            lo - 1,
            lo,
            lo + 1,
            lo + 2,
            MODEL_CHAR_CAP,
            2 * MODEL_CHAR_CAP,
        ] {
            cut(n);
        }
        // Whole outputs of exactly the cap get cut too, within the cap.
        assert!(cut(MODEL_CHAR_CAP));
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        // 4-byte characters, with head/tail boundaries landing inside characters.
        let data = "😀".repeat(100_000);
        for (h, t) in [(65_537, 65_535), (10, 10), (65_538, 3)] {
            let o = outcome_from(data.as_bytes(), h, t);
            let p = project_for_model(&o);
            assert!(p.chars().count() <= MODEL_CHAR_CAP);
            let b = body(&p);
            assert!(!b.contains('\u{fffd}'), "h={h} t={t}");
        }
    }

    #[test]
    fn invalid_utf8_binary_and_controls_do_not_panic() {
        let mut data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
        data.extend_from_slice(b"\xff\xfe\xc3");
        let o = outcome_from(&data, 64 * 1024, 64 * 1024);
        let p = project_for_model(&o);
        assert!(p.chars().count() <= MODEL_CHAR_CAP);
        assert!(!p.contains('\0'));
    }

    #[test]
    fn carriage_return_progress_bars_show_their_final_state() {
        let o = outcome_from(b"start\n 10%\r 50%\r100%\ndone\r\nok", 64, 64);
        assert_eq!(body(&project_for_model(&o)), "start\n100%\ndone\nok");
    }

    #[test]
    fn ansi_colors_are_stripped_and_no_newline_output_is_cut() {
        let o = outcome_from(b"\x1b[31mred\x1b[0m plain", 64, 64);
        assert_eq!(body(&project_for_model(&o)), "red plain");
        let data = vec![b'z'; 1_000_000];
        let p = project_for_model(&outcome_from(&data, 1 << 16, 1 << 16));
        assert!(p.chars().count() <= MODEL_CHAR_CAP);
        assert!(p.contains("bytes omitted"));
    }

    #[test]
    fn signal_and_status_lines() {
        let mut o = outcome_from(b"", 64, 64);
        o.termination = Termination::Signaled { signal: 9 };
        o.timed_out = true;
        let p = project_for_model(&o);
        assert!(
            p.starts_with("exit: signal 9 (SIGKILL)\nstatus: timed out\n"),
            "{p}"
        );
        o.cancelled = true;
        assert!(project_for_model(&o).contains("status: cancelled"));
    }
}
