//! Terminal escaping of raw bytes in one pass: bytes in, escaped bytes out, no intermediate
//! `String`, no lossy decode followed by a second scan. The output is byte for byte what
//! `block(&String::from_utf8_lossy(bytes))` gives (a property test checks it on random bytes and
//! random splits), so a terminal client can print a command's raw output without decoding it.

const HEX: &[u8; 16] = b"0123456789abcdef";
const REPLACEMENT: [u8; 3] = [0xef, 0xbf, 0xbd];

/// What one byte becomes when it is decided alone: `len` bytes of `out` (printable ASCII, `\n`
/// and `\t` as themselves, other ASCII escaped, bytes that can never start a UTF-8 sequence as
/// U+FFFD). `lead`: a byte that starts a multi-byte sequence; followed by a continuation byte
/// (`10xxxxxx`) it is decided with the bytes after it (`slow`), otherwise it is invalid alone and
/// its entry (U+FFFD) applies.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Entry {
    out: [u8; 4],
    len: u8,
    lead: bool,
    slow: bool,
    /// With a continuation byte after it, this lead byte makes a whole 2-byte character that is
    /// always safe (C3..DF but D8, DB, DC: U+00C0..U+07FF without the format characters
    /// U+0600..U+0605, U+061C, U+06DD, U+070F): copied as is.
    two: bool,
}

/// Indexed by a byte and whether the next byte is a continuation byte (`byte << 1 | cont`): one
/// table lookup, one 4-byte copy and one branch per byte, and that branch (`slow`: a lead byte
/// followed by a continuation byte) is taken for about 1 byte in 20 of random data. Two branches
/// (lead? continuation?) would each go either way about every other byte, and mispredict so.
static TABLE: [Entry; 512] = {
    let mut t = [Entry {
        out: [0; 4],
        len: 0,
        lead: false,
        slow: false,
        two: false,
    }; 512];
    let mut i = 0;
    while i < 512 {
        let b = (i >> 1) as u8;
        let mut e = match b {
            0x20..=0x7e | b'\n' | b'\t' => Entry {
                out: [b, 0, 0, 0],
                len: 1,
                lead: false,
                slow: false,
                two: false,
            },
            b'\r' => Entry {
                out: [b'\\', b'r', 0, 0],
                len: 2,
                lead: false,
                slow: false,
                two: false,
            },
            0x1b => Entry {
                out: [b'\\', b'e', 0, 0],
                len: 2,
                lead: false,
                slow: false,
                two: false,
            },
            0x00..=0x7f => Entry {
                out: [b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]],
                len: 4,
                lead: false,
                slow: false,
                two: false,
            },
            _ => Entry {
                out: [REPLACEMENT[0], REPLACEMENT[1], REPLACEMENT[2], 0],
                len: 3,
                lead: matches!(b, 0xc2..=0xf4),
                slow: false,
                two: false,
            },
        };
        e.slow = e.lead && i & 1 == 1;
        e.two = e.slow && matches!(b, 0xc3..=0xdf) && !matches!(b, 0xd8 | 0xdb | 0xdc);
        t[i] = e;
        i += 1;
    }
    t
};

/// Length of the UTF-8 sequence `bytes[0]` starts and how many of its bytes are present and
/// valid so far, following the rules of `str::from_utf8` (shortest form, no surrogates, at most
/// U+10FFFF). `Seq::Invalid(n)`: the first `n` bytes (at least 1) are a maximal invalid prefix,
/// replaced by one U+FFFD as `String::from_utf8_lossy` does; `Seq::Incomplete`: a valid prefix cut
/// by the end of `bytes`.
#[derive(Debug, PartialEq, Eq)]
enum Seq {
    Valid(usize),
    Invalid(usize),
    Incomplete,
}

fn sequence(bytes: &[u8]) -> Seq {
    let lead = bytes[0];
    let (len, lo, hi) = match lead {
        0xc2..=0xdf => (2, 0x80, 0xbf),
        0xe0 => (3, 0xa0, 0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80, 0xbf),
        0xed => (3, 0x80, 0x9f),
        0xf0 => (4, 0x90, 0xbf),
        0xf1..=0xf3 => (4, 0x80, 0xbf),
        0xf4 => (4, 0x80, 0x8f),
        _ => return Seq::Invalid(1),
    };
    for k in 1..len {
        let Some(&b) = bytes.get(k) else {
            return Seq::Incomplete;
        };
        let (lo, hi) = if k == 1 { (lo, hi) } else { (0x80, 0xbf) };
        if !(lo..=hi).contains(&b) {
            return Seq::Invalid(k);
        }
    }
    Seq::Valid(len)
}

/// Writes the escape of the valid sequence `seq` (2 to 4 bytes) at `dst[0..]`, or the sequence
/// itself when its character is safe; returns the bytes written (at most 9, and at most 4 per
/// byte of `seq`).
fn put_char(dst: &mut [u8], seq: &[u8]) -> usize {
    let c = match std::str::from_utf8(seq).ok().and_then(|s| s.chars().next()) {
        Some(c) => c,
        // Cannot happen for a sequence `sequence` called valid; replaced rather than trusted.
        None => {
            dst[..3].copy_from_slice(&REPLACEMENT);
            return 3;
        }
    };
    if !super::is_unsafe(c) {
        dst[..seq.len()].copy_from_slice(seq);
        return seq.len();
    }
    let v = c as u32;
    let hex = |shift: u32| HEX[((v >> shift) & 0xf) as usize];
    if v < 0x100 {
        dst[..4].copy_from_slice(&[b'\\', b'x', hex(4), hex(0)]);
        4
    } else if v <= 0xffff {
        // `\u{xxxx}`, as `block` writes it.
        dst[..8].copy_from_slice(&[b'\\', b'u', b'{', hex(12), hex(8), hex(4), hex(0), b'}']);
        8
    } else {
        // Above the BMP (TAG characters, a few other format characters, all below U+100000):
        // `\u{xxxxx}` from a 4-byte sequence, 9 bytes.
        dst[..9].copy_from_slice(&[
            b'\\',
            b'u',
            b'{',
            hex(16),
            hex(12),
            hex(8),
            hex(4),
            hex(0),
            b'}',
        ]);
        9
    }
}

/// Bytes per word of the fast path.
const WORD: usize = 8;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `v` that is zero, exactly (no carry crosses a byte).
#[inline(always)]
fn zero_bytes(v: u64) -> u64 {
    !(((v & LOW7) + LOW7) | v | LOW7)
}

/// The high bit of each byte of `w` that is not printable ASCII, `\n` or `\t`: the bytes that
/// need the table. Zero: the 8 bytes are copied as they are.
#[inline(always)]
fn unplain(w: u64) -> u64 {
    let low = w & LOW7;
    // Below 0x20: low + 0x60 stays under 0x80 (no carry out of the byte either way).
    let control = !(low + 0x60 * ONES)
        & HIGH
        & !(zero_bytes(w ^ (u64::from(b'\n') * ONES)) | zero_bytes(w ^ (u64::from(b'\t') * ONES)));
    // 0x7f (DEL): low + 1 reaches 0x80; 0x80 and above: the high bit itself.
    let del = (low + ONES) & HIGH;
    control | del | (w & HIGH)
}

/// The word at `bytes[i..i + 8]` (little-endian: byte `i` is the lowest).
#[inline(always)]
fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
    let w: [u8; WORD] = bytes.get(i..i + WORD)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// Length of the leading run of bytes that are copied as they are (printable ASCII, `\n`, `\t`),
/// 8 bytes at a time.
fn plain_prefix(bytes: &[u8]) -> usize {
    let mut i = 0;
    while let Some(w) = word_at(bytes, i) {
        let bad = unplain(w);
        if bad != 0 {
            return i + (bad.trailing_zeros() / 8) as usize;
        }
        i += WORD;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| !matches!(b, 0x20..=0x7e | b'\n' | b'\t'))
        .unwrap_or(bytes.len() - i)
}

/// Decides the byte at `bytes[*i]`, which has a next byte, and the sequence it starts (one table
/// lookup and one 4-byte copy for all but a lead byte followed by a continuation byte); `false`:
/// a valid sequence cut by the end of `bytes` (nothing consumed).
#[inline(always)]
fn step(dst: &mut [u8], o: &mut usize, bytes: &[u8], i: &mut usize) -> bool {
    let cont = usize::from(bytes[*i + 1] & 0xc0 == 0x80);
    let e = TABLE[usize::from(bytes[*i]) << 1 | cont];
    if e.slow {
        if e.two {
            dst[*o..*o + 2].copy_from_slice(&bytes[*i..*i + 2]);
            *o += 2;
            *i += 2;
            return true;
        }
        let (written, consumed) = escape_sequence(&mut dst[*o..], &bytes[*i..]);
        if consumed == 0 {
            return false;
        }
        *o += written;
        *i += consumed;
        return true;
    }
    dst[*o..*o + 4].copy_from_slice(&e.out);
    *o += usize::from(e.len);
    *i += 1;
    true
}

/// Escapes `bytes` into `dst` (at least 4 bytes per input byte, plus 8); returns the bytes written
/// and how many bytes at the end form an incomplete (so far valid) sequence and were not consumed.
fn escape_slice(dst: &mut [u8], bytes: &[u8]) -> (usize, usize) {
    // Output never exceeds 4 bytes per input byte consumed (`\xNN` per byte; U+FFFD is 3 per
    // invalid byte or more; `\u{xxxx}` is 8 for a 3-byte character), so `o <= 4 * i` holds.
    let mut o = 0;
    let mut i = 0;
    // Word by word while a byte follows the word (the table decides a byte by the one after it):
    // a word of plain bytes is one 8-byte copy; any other word is decided byte by byte (a
    // sequence may run past the word's end: the next word starts after it).
    while i + WORD < bytes.len() {
        let Some(w) = word_at(bytes, i) else { break };
        // Binary output fails on the first test (a byte >= 0x80) at the cost of two instructions.
        if w & HIGH == 0 && unplain(w) == 0 {
            dst[o..o + WORD].copy_from_slice(&bytes[i..i + WORD]);
            o += WORD;
            i += WORD;
            continue;
        }
        // Binary or escaped text: the 8 bytes by the table, from the loaded word (constant
        // shifts, no per-byte bounds checks) until a lead byte followed by a continuation byte,
        // which `step` decides with the sequence rules.
        let next =
            zero_bytes((((w >> 8) | (u64::from(bytes[i + WORD]) << 56)) & (0xc0 * ONES)) ^ HIGH);
        let d = &mut dst[o..o + 4 * WORD + 4];
        let mut x = 0;
        let mut k = 0;
        while k < WORD {
            let b = (w >> (8 * k)) as u8;
            let cont = ((next >> (8 * k + 7)) & 1) as usize;
            let e = TABLE[usize::from(b) << 1 | cont];
            if e.slow {
                break;
            }
            d[x..x + 4].copy_from_slice(&e.out);
            x += usize::from(e.len);
            k += 1;
        }
        o += x;
        i += k;
        if k < WORD {
            let end = i - k + WORD;
            while i < end {
                if !step(dst, &mut o, bytes, &mut i) {
                    return (o, bytes.len() - i);
                }
            }
        }
    }
    // Every byte but the last has a next byte: a lead byte not followed by a continuation byte
    // is invalid alone (one U+FFFD, as `from_utf8_lossy` gives), so only a lead followed by a
    // continuation needs the sequence rules.
    while i + 1 < bytes.len() {
        if !step(dst, &mut o, bytes, &mut i) {
            return (o, bytes.len() - i);
        }
    }
    while i < bytes.len() {
        let e = TABLE[usize::from(bytes[i]) << 1];
        if !e.lead {
            dst[o..o + 4].copy_from_slice(&e.out);
            o += usize::from(e.len);
            i += 1;
            continue;
        }
        let (written, consumed) = escape_sequence(&mut dst[o..], &bytes[i..]);
        if consumed == 0 {
            return (o, bytes.len() - i);
        }
        o += written;
        i += consumed;
    }
    (o, 0)
}

/// Escapes the sequence a lead byte starts at `bytes[0]`: (bytes written, bytes consumed);
/// consumed 0: a valid prefix cut by the end of `bytes` (incomplete, to carry).
fn escape_sequence(dst: &mut [u8], bytes: &[u8]) -> (usize, usize) {
    let b = bytes[0];
    match sequence(bytes) {
        Seq::Valid(len) => {
            // Only C1 controls (C2 80..9F), bidi controls and format characters can be unsafe,
            // and those start with one of these lead bytes (`is_format`'s ranges); the rest of
            // non-ASCII text is copied as is.
            if matches!(
                b,
                0xc2 | 0xd8 | 0xdb | 0xdc | 0xe0 | 0xe1 | 0xe2 | 0xef | 0xf0 | 0xf3
            ) {
                (put_char(dst, &bytes[..len]), len)
            } else {
                dst[..len].copy_from_slice(&bytes[..len]);
                (len, len)
            }
        }
        Seq::Invalid(n) => {
            dst[..3].copy_from_slice(&REPLACEMENT);
            (3, n)
        }
        Seq::Incomplete => (0, 0),
    }
}

/// Escapes `bytes` onto the end of `out`; returns the length of the incomplete sequence left at
/// the end (0..=3), not consumed.
fn escape_into(out: &mut Vec<u8>, mut bytes: &[u8]) -> usize {
    // Text output is mostly printable ASCII, newlines and tabs: copy that leading run as is (one
    // scan, one copy); the table loop takes over at the first byte that is not.
    let run = plain_prefix(bytes);
    out.extend_from_slice(&bytes[..run]);
    bytes = &bytes[run..];
    if bytes.is_empty() {
        return 0;
    }
    let at = out.len();
    // Room for the worst case (plus 8 so the last 4- or 8-byte copy stays inside), then cut back.
    out.resize(at + bytes.len() * 4 + WORD, 0);
    let (written, tail) = escape_slice(&mut out[at..], bytes);
    out.truncate(at + written);
    tail
}

/// [`super::block`] of the lossy decoding of `bytes`, as bytes, appended to `out`, in one pass.
pub fn block_bytes_into(out: &mut Vec<u8>, bytes: &[u8]) {
    let tail = escape_into(out, bytes);
    if tail > 0 {
        // An incomplete sequence at the very end decodes to one U+FFFD.
        out.extend_from_slice(&REPLACEMENT);
    }
}

/// [`block_bytes_into`] over a stream of chunks: a UTF-8 sequence split between two chunks is
/// escaped whole (at most 3 bytes are carried). Concatenated, the outputs of `push` and `finish`
/// are `block_bytes_into` of the concatenated chunks.
#[derive(Debug, Default, Clone)]
pub struct BlockBytes {
    carry: Vec<u8>,
}

impl BlockBytes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the escape of everything decidable so far to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let mut rest = chunk;
        if !self.carry.is_empty() {
            // The carried sequence is resolved (completed or found invalid) within 4 more bytes;
            // a tail of at most 3 left in this window means the window reached the chunk's end
            // only when `k == chunk.len()`.
            let k = chunk.len().min(4);
            let mut small = std::mem::take(&mut self.carry);
            small.extend_from_slice(&chunk[..k]);
            let tail = escape_into(out, &small);
            if tail >= k {
                // Still incomplete, and all of the (short) chunk went into it.
                let start = small.len() - tail;
                small.drain(..start);
                self.carry = small;
                return;
            }
            // The window ended inside a new incomplete sequence that started in the chunk: start
            // over at its first byte.
            rest = &chunk[k.saturating_sub(tail)..];
        }
        let tail = escape_into(out, rest);
        self.carry.clear();
        self.carry.extend_from_slice(&rest[rest.len() - tail..]);
    }

    /// Appends what is left (an incomplete sequence at the very end: one U+FFFD).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let rest = std::mem::take(&mut self.carry);
        block_bytes_into(out, &rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(bytes: &[u8]) -> Vec<u8> {
        super::super::block(&String::from_utf8_lossy(bytes))
            .into_owned()
            .into_bytes()
    }

    fn escaped(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        block_bytes_into(&mut out, bytes);
        out
    }

    #[test]
    fn sequences_follow_from_utf8() {
        assert_eq!(sequence(b"\xc3\xa9"), Seq::Valid(2));
        assert_eq!(sequence(b"\xe0\x80"), Seq::Invalid(1));
        assert_eq!(sequence(b"\xed\xa0\x80"), Seq::Invalid(1));
        assert_eq!(sequence(b"\xe2\x82"), Seq::Incomplete);
        assert_eq!(sequence(b"\xe2\x82x"), Seq::Invalid(2));
        assert_eq!(sequence(b"\xf4\x90\x80\x80"), Seq::Invalid(1));
        assert_eq!(sequence(b"\xf0\x9f\x98\x80"), Seq::Valid(4));
        assert_eq!(sequence(b"\xff"), Seq::Invalid(1));
    }

    #[test]
    fn every_character_up_to_u_3000_and_every_byte_match_the_text_path() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert_eq!(escaped(all.as_bytes()), reference(all.as_bytes()));
        let bytes: Vec<u8> = (0..=255u8).collect();
        assert_eq!(escaped(&bytes), reference(&bytes));
        for b in 0..=255u8 {
            assert_eq!(escaped(&[b]), reference(&[b]), "byte {b:#x}");
        }
        let tricky = "a\u{61c}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2066}\u{2069}\u{9b}\u{85}é€😀\r\x1b\x7f";
        assert_eq!(escaped(tricky.as_bytes()), reference(tricky.as_bytes()));
    }

    #[test]
    fn every_pair_of_bytes_matches_the_text_path() {
        // Each pair twice: followed by a continuation byte and by a plain one (the fast loop
        // decides a byte by the one after it; the last byte is decided alone).
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                for c in [0x80u8, b'z'] {
                    let bytes = [a, b, c];
                    assert_eq!(escaped(&bytes), reference(&bytes), "{bytes:x?}");
                    assert_eq!(escaped(&bytes[..2]), reference(&bytes[..2]), "{bytes:x?}");
                }
            }
        }
    }

    #[test]
    fn the_word_test_flags_exactly_the_bytes_the_table_does_not_copy() {
        for lane in 0..WORD {
            for b in 0..=255u8 {
                let mut w = [b'a'; WORD];
                w[lane] = b;
                let plain = matches!(b, 0x20..=0x7e | b'\n' | b'\t');
                let bad = unplain(u64::from_le_bytes(w));
                let want = if plain { 0 } else { 0x80u64 << (8 * lane) };
                assert_eq!(bad, want, "byte {b:#x} in lane {lane}");
                assert_eq!(plain_prefix(&w), if plain { WORD } else { lane });
            }
        }
    }

    #[test]
    fn special_bytes_at_every_place_of_a_word_match_the_text_path() {
        // Plain runs around each hostile piece, the piece starting at every offset of a word and
        // straddling word ends; also after a non-plain word.
        let pieces: [&[u8]; 12] = [
            b"\r",
            b"\x1b[2J",
            b"\x7f",
            "é".as_bytes(),
            "😀".as_bytes(),
            "\u{202e}".as_bytes(),
            "\u{9b}".as_bytes(),
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xff\xfe",
            b"\xc3",
            b"\x00",
        ];
        for piece in pieces {
            for before in 0..=2 * WORD + 1 {
                for after in [0, 1, 7, 8, 9, 17] {
                    for lead in [&b"abc"[..], &b"\xff"[..]] {
                        let mut bytes = lead.to_vec();
                        bytes.extend(std::iter::repeat_n(b'x', before));
                        bytes.extend_from_slice(piece);
                        bytes.extend(std::iter::repeat_n(b'\n', after));
                        assert_eq!(escaped(&bytes), reference(&bytes), "{bytes:x?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_stream_split_anywhere_matches_the_whole() {
        let bytes = "é\u{1b}[2Jok\r\n€\u{202e}😀x\u{9b}".as_bytes();
        let mut all = bytes.to_vec();
        all.extend_from_slice(b"\xe2\x82 \xf0\x9f\x98");
        let want = reference(&all);
        for a in 0..=all.len() {
            for b in a..=all.len() {
                let mut s = BlockBytes::new();
                let mut out = Vec::new();
                s.push(&all[..a], &mut out);
                s.push(&all[a..b], &mut out);
                s.push(&all[b..], &mut out);
                s.finish(&mut out);
                assert_eq!(out, want, "cuts at {a} and {b}");
            }
        }
    }
}
