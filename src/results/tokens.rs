//! The token estimator used for the precompaction threshold.
//!
//! Rule: `ceil(ascii_chars / 4) + non_ascii_chars`. Four ASCII characters per token is the
//! published average for OpenAI's cl100k/o200k and Anthropic's tokenizers on English text and
//! code (code and JSON run a little denser, ~3.5); scripts outside ASCII (CJK, emoji, accented
//! text) take about one token per character or more, so each counts as a full token. The
//! estimate is cheap (one pass, no vocabulary), deterministic, and errs toward compacting early
//! for non-English output. It only decides *whether* to compact; nothing is cut by it.

/// A model projection of at least this many estimated tokens is precompacted.
pub const PRECOMPACTION_THRESHOLD: usize = 2_500;

/// Size (estimated tokens) a trim or summary aims for.
pub const TRIM_TARGET_TOKENS: usize = 1_000;

/// Estimated tokens of `text` (see the module docs for the rule).
pub fn estimate_tokens(text: &str) -> usize {
    let (mut ascii, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    ascii.div_ceil(4) + other
}

/// Characters of ASCII text that make about `tokens` tokens.
pub fn chars_for_tokens(tokens: usize) -> usize {
    tokens.saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_four_chars_per_token_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(
            estimate_tokens(&"x".repeat(10_000)),
            PRECOMPACTION_THRESHOLD
        );
    }

    #[test]
    fn non_ascii_characters_count_one_token_each() {
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens("héllo"), 2); // "hllo" -> 1, "é" -> 1
    }
}
