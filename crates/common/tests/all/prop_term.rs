//! Property tests of the terminal-safe text helpers: whatever the input, nothing unsafe reaches
//! the terminal (format and TAG characters included), safe text passes unchanged, and every unsafe
//! character stays visible.

use std::borrow::Cow;

use aibuddy_common::term::{block, bytes_block, is_unsafe, line};
use proptest::prelude::*;

/// Strings rich in what attackers use: C0/C1 controls, ESC sequences, bidi overrides, separators.
fn hostile_text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        any::<char>().prop_map(|c| c.to_string()),
        (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x').to_string()),
        (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap_or('x').to_string()),
        prop::sample::select(vec![
            "\u{1b}[2K\r",
            "\u{1b}]0;title\u{7}",
            "\u{9b}31m",
            "\u{202e}",
            "\u{2066}",
            "\u{2069}",
            "\u{200f}",
            "\u{061c}",
            "\u{2028}",
            "\u{2029}",
            "\u{200b}",
            "\u{2060}",
            "\u{feff}",
            "\u{00ad}",
            "\u{e0041}",
            "\u{e007f}",
            "＃",
            "\r\n",
            "\t",
            "target: ls -la",
            "\\e",
            "é😀",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn line_output_never_holds_an_unsafe_char(s in hostile_text()) {
        let out = line(&s);
        prop_assert!(!out.chars().any(is_unsafe), "{out:?}");
        // Nothing disappears: each unsafe input character becomes at least two visible ones.
        let unsafe_in = s.chars().filter(|c| is_unsafe(*c)).count();
        prop_assert!(out.chars().count() >= s.chars().count() + unsafe_in);
    }

    #[test]
    fn block_keeps_only_newline_and_tab(s in hostile_text()) {
        let out = block(&s);
        prop_assert!(!out.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t'), "{out:?}");
        prop_assert_eq!(out.matches('\n').count(), s.matches('\n').count());
        prop_assert!(!out.contains('\r'));
    }

    #[test]
    fn safe_text_is_borrowed_unchanged(s in any::<String>()) {
        let safe: String = s.chars().filter(|c| !is_unsafe(*c)).collect();
        prop_assert!(matches!(line(&safe), Cow::Borrowed(x) if x == safe));
        prop_assert!(matches!(block(&safe), Cow::Borrowed(x) if x == safe));
    }

    #[test]
    fn bytes_block_is_safe_for_any_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        let out = bytes_block(&b);
        prop_assert!(!out.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t'), "{out:?}");
    }
}
