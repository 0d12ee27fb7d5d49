//! What a person is asked to approve, shown verbatim: the one definition of how a confirm
//! target (a command, a path, a scope line, the model's words) is displayed, shared by the
//! window (as [`DisplaySegment`]s in the confirm request) and the CLI prompt ([`reveal_text`]), so
//! the two cannot disagree.
//!
//! Stricter than [`super::line`], which only keeps a terminal from being redrawn: here nothing
//! may look like something else.
//! - a line break is a visible `⏎` and a real break, never collapsed into a space;
//! - every character that is invisible or changes what is around it ([`is_hidden`]: controls,
//!   Unicode format characters (Cf: U+200B..U+200F, U+2060..U+2064, U+FEFF, U+00AD...), bidi
//!   overrides and isolates, the TAG block U+E0000..U+E007F, variation selectors, fillers, line and
//!   paragraph separators, every space but U+0020) is shown by its code, `<U+200B>`, `<TAB>`,
//!   `<CR>`, `<ESC>`;
//! - visible non-ASCII characters are kept but marked ([`DisplaySegment::NonAscii`]) and listed
//!   with their codes ([`non_ascii`]: `＃ U+FF03`), so a full-width `＃` is not read as `#`.

use serde::{Deserialize, Serialize};

/// One piece of a revealed string; the pieces in order are the whole string, nothing left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
pub enum DisplaySegment {
    /// Printable ASCII (U+0020..U+007E), shown as is.
    Text { text: String },
    /// Visible non-ASCII characters, shown as is and marked (they may look like ASCII).
    NonAscii { text: String },
    /// One character that would be invisible or act on its neighbours, shown by its code:
    /// `U+200B`, `TAB`, `CR`, `ESC`. Displayed as `<code>`.
    Code { code: String },
    /// A line feed: a visible `⏎` followed by a real line break.
    LineBreak,
}

/// Whether `c` is shown by its code rather than as itself: it is invisible, or it changes how the
/// characters around it look (direction, joining, tags), or it is a space other than U+0020.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || is_format(c)
        || matches!(
            c as u32,
            // The line/paragraph separators.
            0x2028..=0x2029
                // Invisible but not Cf: combining grapheme joiner, Hangul and Khmer fillers,
                // Mongolian free variation selectors, variation selectors, the object placeholder.
                | 0x034F
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180D
                | 0x180F
                | 0x3164
                | 0xFFA0
                | 0xFE00..=0xFE0F
                | 0xE0100..=0xE01EF
                | 0xFFFC
        )
}

/// Whether `c` is a Unicode format character (general category Cf, complete as of Unicode 15.1:
/// zero-width characters, bidi marks, overrides and isolates, U+FEFF, U+00AD...) or in the TAG
/// block (U+E0000..U+E007F, Cf and unassigned). Such a character is invisible or changes how its
/// neighbours look: [`super::line`] and [`super::block`] escape it too.
pub fn is_format(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE007F
    )
}

/// The code a hidden character is shown by (without the angle brackets).
pub fn code_of(c: char) -> String {
    match c {
        '\t' => "TAB".into(),
        '\r' => "CR".into(),
        '\u{1b}' => "ESC".into(),
        c => format!("U+{:04X}", c as u32),
    }
}

/// `s` as display segments (see the module docs). Concatenating the segments' text, with each
/// code decoded and each line break as `\n`, gives `s` back exactly.
pub fn reveal(s: &str) -> Vec<DisplaySegment> {
    let mut out: Vec<DisplaySegment> = Vec::new();
    for c in s.chars() {
        if c == '\n' {
            out.push(DisplaySegment::LineBreak);
        } else if is_hidden(c) {
            out.push(DisplaySegment::Code { code: code_of(c) });
        } else if c.is_ascii() {
            match out.last_mut() {
                Some(DisplaySegment::Text { text }) => text.push(c),
                _ => out.push(DisplaySegment::Text { text: c.into() }),
            }
        } else {
            match out.last_mut() {
                Some(DisplaySegment::NonAscii { text }) => text.push(c),
                _ => out.push(DisplaySegment::NonAscii { text: c.into() }),
            }
        }
    }
    out
}

/// The distinct visible non-ASCII characters of `s` with their codes, in order of first
/// appearance: `["＃ U+FF03"]`. Hidden characters are not listed (they are shown as codes).
pub fn non_ascii(s: &str) -> Vec<String> {
    let mut seen: Vec<char> = Vec::new();
    for c in s.chars() {
        if !c.is_ascii() && !is_hidden(c) && !seen.contains(&c) {
            seen.push(c);
        }
    }
    seen.into_iter()
        .map(|c| format!("{c} U+{:04X}", c as u32))
        .collect()
}

/// The plain-text form of [`reveal`] for a terminal: codes as `<U+200B>`, a line break as `⏎`,
/// a newline and `indent` (so the continuation lines up under the first line). Non-ASCII text is
/// kept (the caller adds the [`non_ascii`] note).
pub fn reveal_text(s: &str, indent: &str) -> String {
    segments_text(&reveal(s), indent)
}

/// [`reveal_text`] of segments already revealed.
pub fn segments_text(segments: &[DisplaySegment], indent: &str) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            DisplaySegment::Text { text } | DisplaySegment::NonAscii { text } => out.push_str(text),
            DisplaySegment::Code { code } => {
                out.push('<');
                out.push_str(code);
                out.push('>');
            }
            DisplaySegment::LineBreak => {
                out.push_str("⏎\n");
                out.push_str(indent);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(t: &str) -> DisplaySegment {
        DisplaySegment::Text { text: t.into() }
    }
    fn code(c: &str) -> DisplaySegment {
        DisplaySegment::Code { code: c.into() }
    }

    /// The inverse of [`reveal`]: proves nothing is dropped or merged.
    fn unreveal(segments: &[DisplaySegment]) -> String {
        segments
            .iter()
            .map(|s| match s {
                DisplaySegment::Text { text } | DisplaySegment::NonAscii { text } => text.clone(),
                DisplaySegment::LineBreak => "\n".into(),
                DisplaySegment::Code { code } => match code.as_str() {
                    "TAB" => "\t".into(),
                    "CR" => "\r".into(),
                    "ESC" => "\u{1b}".into(),
                    c => {
                        let v = u32::from_str_radix(c.trim_start_matches("U+"), 16).unwrap();
                        char::from_u32(v).unwrap().to_string()
                    }
                },
            })
            .collect()
    }

    /// Issue 22: `echo cleaning` + newline + `rm -rf src` must not read as one echo.
    #[test]
    fn a_newline_is_a_visible_break() {
        let shown = reveal("echo cleaning\nrm -rf src");
        assert_eq!(
            shown,
            vec![
                text("echo cleaning"),
                DisplaySegment::LineBreak,
                text("rm -rf src")
            ]
        );
        assert_eq!(
            reveal_text("echo cleaning\nrm -rf src", "    "),
            "echo cleaning⏎\n    rm -rf src"
        );
    }

    #[test]
    fn zero_width_format_and_tag_characters_are_codes() {
        let s = "ls\u{200B} \u{2060}x\u{FEFF}\u{00AD}\u{202E}y\u{2066}\u{E0001}\u{E0072}\u{E007F}\t\r\u{1b}";
        assert_eq!(
            reveal_text(s, ""),
            "ls<U+200B> <U+2060>x<U+FEFF><U+00AD><U+202E>y<U+2066><U+E0001><U+E0072><U+E007F><TAB><CR><ESC>"
        );
        assert!(non_ascii(s).is_empty());
    }

    #[test]
    fn full_width_look_alikes_are_marked_and_listed() {
        let s = "echo hi ＃; touch x";
        assert_eq!(
            reveal(s),
            vec![
                text("echo hi "),
                DisplaySegment::NonAscii { text: "＃".into() },
                text("; touch x")
            ]
        );
        assert_eq!(non_ascii(s), vec!["＃ U+FF03"]);
        assert_eq!(non_ascii("é é ü\u{200B}"), vec!["é U+00E9", "ü U+00FC"]);
        // A no-break space looks like a space and is not one.
        assert_eq!(reveal_text("rm\u{A0}-rf", ""), "rm<U+00A0>-rf");
    }

    #[test]
    fn every_cf_and_bidi_character_below_the_tags_is_hidden() {
        for c in [
            '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{2061}', '\u{2064}',
            '\u{061C}', '\u{2028}', '\u{2029}', '\u{FE0F}', '\u{3164}',
        ] {
            assert!(is_hidden(c), "{:04X}", c as u32);
        }
        for c in ['a', ' ', '~', 'é', '＃', '€', '→'] {
            assert!(!is_hidden(c), "{c}");
        }
        assert_eq!(code(&code_of('\u{7f}')), code("U+007F"));
    }

    proptest! {
        /// The display form never carries a control, format, bidi or TAG character raw, and it is
        /// the whole string.
        #[test]
        fn the_display_form_never_holds_a_hidden_character(
            s in prop::collection::vec(
                prop_oneof![
                    any::<char>(),
                    prop::char::range('\u{0}', '\u{a0}'),
                    prop::char::range('\u{2000}', '\u{2070}'),
                    prop::char::range('\u{E0000}', '\u{E0080}'),
                    prop::sample::select(vec!['\u{FEFF}', '\u{00AD}', '\u{FF03}', '\u{FE0F}', '\u{1D173}']),
                ],
                0..40,
            ).prop_map(|v| v.into_iter().collect::<String>())
        ) {
            let segments = reveal(&s);
            prop_assert_eq!(unreveal(&segments), s.clone());
            for seg in &segments {
                match seg {
                    DisplaySegment::Text { text } => {
                        prop_assert!(!text.is_empty() && text.chars().all(|c| (' '..='~').contains(&c)));
                    }
                    DisplaySegment::NonAscii { text } => {
                        prop_assert!(!text.is_empty() && text.chars().all(|c| !c.is_ascii() && !is_hidden(c)));
                    }
                    DisplaySegment::Code { code } => {
                        prop_assert!(code.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
                    }
                    DisplaySegment::LineBreak => {}
                }
            }
            let shown = reveal_text(&s, "  ");
            prop_assert!(!shown.chars().any(|c| is_hidden(c) && c != '\n'), "{:?}", shown);
            prop_assert!(!shown.chars().any(|c| super::super::is_unsafe(c) && c != '\n'));
        }
    }
}
