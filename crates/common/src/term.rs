//! Terminal-safe text. Every untrusted string (tool targets, diffs, tool and server text, error
//! messages, stored output) goes through one of these before it reaches a terminal, so no escape
//! sequence, carriage return or bidirectional override can redraw or hide what the person reads.
//!
//! Escaped, in a visible and unambiguous form:
//! - C0 controls (U+0000..U+001F) except, in [`block`], `\n` and `\t`; `\r` is always escaped;
//! - DEL (U+007F) and the C1 controls (U+0080..U+009F; U+009B is a one-byte CSI);
//! - bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069), U+061C, U+200E/F
//!   ("Trojan Source"), and the line/paragraph separators U+2028/U+2029;
//! - every other Unicode format character (Cf: zero-width space and joiners U+200B..U+200D, word
//!   joiner U+2060, U+FEFF, soft hyphen U+00AD, ...) and the TAG block U+E0000..U+E007F
//!   ([`is_format`]): invisible text must not hide in an error, a log line or a rejection.
//!
//! An escaped character is shown as a code: `\n`, `\r`, `\t`, `\e`, `\xNN` below U+0100,
//! `\u{200b}` / `\u{e0041}` above.
//!
//! What a person is asked to approve is shown stricter still, by [`reveal`] (the `reveal` module):
//! line breaks visible, every invisible or format character (zero-width, TAG, variation selectors,
//! non-ASCII spaces) as a code such as `<U+200B>`, visible non-ASCII characters marked.

use std::borrow::Cow;

mod bytes;
mod reveal;
pub use bytes::{BlockBytes, block_bytes_into};
pub use reveal::{
    DisplaySegment, code_of, is_format, is_hidden, non_ascii, reveal, reveal_text, segments_text,
};

/// Whether `c` must never reach a terminal as is (newline and tab included): controls, bidi
/// controls, separators, format (Cf) and TAG characters.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || is_format(c)
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Whether the byte `b` starts or continues a character that may need escaping: ASCII controls
/// and DEL, and every non-ASCII byte (decided per character). Printable ASCII never does.
fn needs_look(b: u8) -> bool {
    !(0x20..0x7f).contains(&b)
}

fn escape_with(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    use std::fmt::Write as _;
    let unsafe_here = |c: char| is_unsafe(c) && !keep(c);
    let Some((first, _)) = s.char_indices().find(|&(_, c)| unsafe_here(c)) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    // Safe text is copied in runs (one slice copy per run, not one push per character); only
    // characters that may be unsafe are decoded and looked at.
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = first;
    while i < bytes.len() {
        if !needs_look(bytes[i]) {
            i += 1;
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let len = c.len_utf8();
        if !unsafe_here(c) {
            i += len;
            continue;
        }
        out.push_str(&s[run..i]);
        // Writing into a String cannot fail; no allocation per escaped character.
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            '\u{1b}' => out.write_str("\\e"),
            c if (c as u32) < 0x100 => {
                // Binary output is mostly escapes: two hex digits pushed without fmt machinery.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let v = c as usize;
                out.push_str("\\x");
                out.push(char::from(HEX[v >> 4]));
                out.push(char::from(HEX[v & 0xf]));
                Ok(())
            }
            c => write!(out, "\\u{{{:04x}}}", c as u32),
        };
        i += len;
        run = i;
    }
    out.push_str(&s[run..]);
    Cow::Owned(out)
}

/// One line: every unsafe character escaped, newlines and tabs included.
pub fn line(s: &str) -> Cow<'_, str> {
    escape_with(s, |_| false)
}

/// A block of lines (diffs, output, multi-line messages): `\n` and `\t` kept, everything else
/// unsafe escaped (`\r` included, so a line cannot be overwritten in place).
pub fn block(s: &str) -> Cow<'_, str> {
    escape_with(s, |c| c == '\n' || c == '\t')
}

/// Bytes that may not be UTF-8 (raw command output): decoded lossily, then [`block`].
pub fn bytes_block(b: &[u8]) -> String {
    block(&String::from_utf8_lossy(b)).into_owned()
}

/// Serialized JSON made terminal-safe without changing its meaning: serde escapes only C0
/// controls, `"` and `\\` inside strings, so C1 controls, DEL, bidi overrides, U+2028/U+2029 and
/// format characters would reach a terminal raw. Each becomes a `\\u` escape of four hex digits (a surrogate pair
/// above the BMP, as JSON spells those; they can only occur inside strings); newlines and tabs,
/// JSON whitespace, stay.
pub fn json(serialized: &str) -> Cow<'_, str> {
    if !serialized
        .chars()
        .any(|c| is_unsafe(c) && c != '\n' && c != '\t')
    {
        return Cow::Borrowed(serialized);
    }
    let mut out = String::with_capacity(serialized.len() + 16);
    for c in serialized.chars() {
        if is_unsafe(c) && c != '\n' && c != '\t' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`bytes_block`] over a stream of chunks (raw output of any size, read piece by piece): a UTF-8
/// sequence split between two chunks is decoded whole, not as two replacement characters.
#[derive(Debug, Default)]
pub struct BlockStream {
    pending: Vec<u8>,
}

impl BlockStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// The escaped text of everything decodable so far; an incomplete trailing sequence waits.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let mut text = String::new();
        let mut start = 0;
        loop {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    text.push_str(s);
                    start = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = start + e.valid_up_to();
                    text.push_str(&String::from_utf8_lossy(&self.pending[start..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            start = valid + bad;
                        }
                        None => {
                            start = valid;
                            break;
                        }
                    }
                }
            }
        }
        self.pending.drain(..start);
        block(&text).into_owned()
    }

    /// Whatever is left (an incomplete sequence at the very end), escaped.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        bytes_block(&rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(
            line("ls -la ünïcode"),
            Cow::Borrowed("ls -la ünïcode")
        ));
        assert!(matches!(block("a\n\tb"), Cow::Borrowed("a\n\tb")));
    }

    #[test]
    fn the_spoofed_prompt_of_issue_9_is_visible() {
        let target = "echo EVIL > x #\u{1b}[2K\r  target: ls -la";
        let shown = line(target);
        assert_eq!(shown, "echo EVIL > x #\\e[2K\\r  target: ls -la");
        assert!(!shown.contains('\u{1b}') && !shown.contains('\r'));
    }

    #[test]
    fn block_keeps_newlines_and_tabs_only() {
        assert_eq!(block("a\r\nb\t\u{7}c\u{9b}2J"), "a\\r\nb\t\\x07c\\x9b2J");
        assert_eq!(line("a\nb"), "a\\nb");
    }

    #[test]
    fn bidi_overrides_and_separators_are_escaped() {
        assert_eq!(
            line("x\u{202e}y\u{2066}z\u{2028}"),
            "x\\u{202e}y\\u{2066}z\\u{2028}"
        );
    }

    /// Issue 22: format (Cf), bidi and TAG characters in an error, a log line or the rejection
    /// line are visible codes, never raw; other non-ASCII text stays as it is.
    #[test]
    fn format_and_tag_characters_are_shown_as_codes() {
        let hidden = "rm\u{200B} -rf\u{2060} src\u{FEFF}\u{E0041}\u{E007F}\u{00AD}\u{202E}";
        assert_eq!(
            line(hidden),
            "rm\\u{200b} -rf\\u{2060} src\\u{feff}\\u{e0041}\\u{e007f}\\xad\\u{202e}"
        );
        assert_eq!(block("a\u{200D}b\n\u{E0020}c"), "a\\u{200d}b\n\\u{e0020}c");
        assert!(matches!(line("ünïcode ＃ 日本 é😀"), Cow::Borrowed(_)));
        assert_eq!(json("\"\u{E0041}\""), "\"\\udb40\\udc41\"");
        let v: serde_json::Value = serde_json::from_str(&json("\"x\u{E0041}\u{200B}\"")).unwrap();
        assert_eq!(v, "x\u{E0041}\u{200B}");
    }

    /// The byte path (`BlockBytes`, raw command output) escapes exactly what `block` escapes, for
    /// every character there is.
    #[test]
    fn the_byte_path_agrees_with_block_on_every_character() {
        let mut buf = [0u8; 4];
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let s: &str = c.encode_utf8(&mut buf);
            // Followed by a plain byte, so the table's two-byte shortcut is taken where it applies.
            let text = format!("{s}x");
            let mut out = Vec::new();
            block_bytes_into(&mut out, text.as_bytes());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                block(&text),
                "U+{:04X}",
                c as u32
            );
            assert!(!is_format(c) || is_unsafe(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn every_output_char_is_safe() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(!line(&all).chars().any(is_unsafe));
        assert!(
            !block(&all)
                .chars()
                .any(|c| is_unsafe(c) && c != '\n' && c != '\t')
        );
        assert_eq!(bytes_block(b"ok\xff\x1b"), "ok\u{fffd}\\e");
    }

    #[test]
    fn a_stream_decodes_sequences_split_between_chunks() {
        let text = "é\u{1b}[2Jok\r\n€";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut s = BlockStream::new();
            let mut out = s.push(&bytes[..cut]);
            out.push_str(&s.push(&bytes[cut..]));
            out.push_str(&s.finish());
            assert_eq!(out, block(text), "cut at {cut}");
        }
        let mut s = BlockStream::new();
        let mut out = s.push(b"a\xffb\xe2\x82");
        out.push_str(&s.finish());
        assert_eq!(out, "a\u{fffd}b\u{fffd}");
        let mut byte_by_byte = BlockStream::new();
        let mut out: String = "x\u{9b}y"
            .bytes()
            .map(|b| byte_by_byte.push(&[b]))
            .collect();
        out.push_str(&byte_by_byte.finish());
        assert_eq!(out, "x\\x9by");
    }

    #[test]
    fn json_keeps_its_meaning_and_loses_raw_controls() {
        let serialized = "{\n  \"d\": \"a\u{202e}b\u{9b}c\u{7f}\u{2028}\"\n}";
        assert_eq!(
            json(serialized),
            "{\n  \"d\": \"a\\u202eb\\u009bc\\u007f\\u2028\"\n}"
        );
        assert!(matches!(json("{\"a\": \"\\u001b\"}"), Cow::Borrowed(_)));
    }
}
