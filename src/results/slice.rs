//! Bounded text windows over raw output bytes (for `view_tool_call` and `aibuddy show`).

/// Text of `bytes` (read at byte `offset` of the raw output) cut to whole UTF-8 characters:
/// leading continuation bytes are skipped and a trailing incomplete character is left for the
/// next page. Returns the text and the raw-output offset where the next page starts. Bytes that
/// are not UTF-8 at all are decoded lossily (U+FFFD) and still advance.
pub fn utf8_window(bytes: &[u8], offset: u64) -> (String, u64) {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    let body = &bytes[skip..];
    let end = match std::str::from_utf8(body) {
        Ok(_) => body.len(),
        // An incomplete character at the very end: stop before it.
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => body.len(),
    };
    let end = if end == 0 && !body.is_empty() && body.len() < 4 {
        body.len()
    } else {
        end
    };
    let text = String::from_utf8_lossy(&body[..end]).into_owned();
    (text, offset + (skip + end) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_to_whole_characters() {
        let s = "aé€b".as_bytes(); // a(1) é(2) €(3) b(1)
        assert_eq!(utf8_window(&s[..4], 0), ("aé".to_string(), 3));
        // Starting inside é: its continuation byte is skipped.
        assert_eq!(utf8_window(&s[2..7], 2), ("€b".to_string(), 7));
    }

    #[test]
    fn binary_bytes_still_advance() {
        let (text, next) = utf8_window(&[0xff, 0xfe, b'a'], 10);
        assert_eq!(next, 13);
        assert!(text.ends_with('a'));
    }
}
