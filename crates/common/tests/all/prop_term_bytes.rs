//! Property test of the one-pass byte escaper: on any bytes, split anywhere, it gives exactly what
//! the text path (`block` of the lossy decoding) gives, so a terminal client may print raw output
//! through it instead of decoding first.

use aibuddy_common::term::{BlockBytes, block, block_bytes_into};
use proptest::prelude::*;

/// Random bytes mixed with the pieces that matter: valid multi-byte characters (safe and unsafe),
/// truncated and overlong sequences, surrogates, C1 controls, escape sequences.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..16),
        any::<char>().prop_map(|c| c.to_string().into_bytes()),
        prop::sample::select(vec![
            "\u{1b}[2K\r".as_bytes(),
            "\u{9b}31m".as_bytes(),
            "\u{85}".as_bytes(),
            "\u{202e}".as_bytes(),
            "\u{2066}".as_bytes(),
            "\u{200f}".as_bytes(),
            "\u{061c}".as_bytes(),
            "\u{2028}".as_bytes(),
            "é😀€".as_bytes(),
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xc0\xaf",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xff\xfe",
            b"plain text\n\tmore",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

fn reference(bytes: &[u8]) -> Vec<u8> {
    block(&String::from_utf8_lossy(bytes))
        .into_owned()
        .into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn byte_escaper_equals_block_of_lossy_text(b in hostile_bytes()) {
        let mut out = Vec::new();
        block_bytes_into(&mut out, &b);
        prop_assert_eq!(out, reference(&b));
    }

    #[test]
    fn byte_escaper_on_uniform_random_bytes(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut out = Vec::new();
        block_bytes_into(&mut out, &b);
        prop_assert_eq!(out, reference(&b));
    }

    #[test]
    fn streamed_in_random_pieces_it_equals_the_whole(
        b in hostile_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(b.len() + 1)).collect();
        at.sort_unstable();
        let mut stream = BlockBytes::new();
        let mut out = Vec::new();
        let mut from = 0;
        for cut in at.into_iter().chain(std::iter::once(b.len())) {
            stream.push(&b[from..cut], &mut out);
            from = cut;
        }
        stream.finish(&mut out);
        prop_assert_eq!(out, reference(&b));
    }
}
