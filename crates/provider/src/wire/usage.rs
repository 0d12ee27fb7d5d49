//! Token usage as each format reports it: one reader over a per-format map of field paths (the
//! three formats name the same four counts differently).

use serde_json::Value;

use super::u64_at;
use crate::event::Usage;

/// Where one format keeps each count inside its `usage` object (`None`: not reported).
pub(crate) struct UsageFields {
    pub input: &'static [&'static str],
    pub output: &'static [&'static str],
    pub cache_read: Option<&'static [&'static str]>,
    pub cache_write: Option<&'static [&'static str]>,
}

/// Anthropic Messages (`message_start.message.usage`, `message_delta.usage`).
pub(crate) const ANTHROPIC: UsageFields = UsageFields {
    input: &["input_tokens"],
    output: &["output_tokens"],
    cache_read: Some(&["cache_read_input_tokens"]),
    cache_write: Some(&["cache_creation_input_tokens"]),
};

/// OpenAI Responses (`response.completed.response.usage`).
pub(crate) const RESPONSES: UsageFields = UsageFields {
    input: &["input_tokens"],
    output: &["output_tokens"],
    cache_read: Some(&["input_tokens_details", "cached_tokens"]),
    cache_write: None,
};

/// Chat Completions (the last chunk's `usage` with `stream_options.include_usage`).
pub(crate) const CHAT: UsageFields = UsageFields {
    input: &["prompt_tokens"],
    output: &["completion_tokens"],
    cache_read: Some(&["prompt_tokens_details", "cached_tokens"]),
    cache_write: None,
};

/// The counts of a `usage` object (absent object or fields: zero).
pub(crate) fn usage_of(u: Option<&Value>, f: &UsageFields) -> Usage {
    let Some(u) = u else {
        return Usage::default();
    };
    let opt = |p: Option<&[&str]>| p.map_or(0, |p| u64_at(u, p));
    Usage {
        input_tokens: u64_at(u, f.input),
        output_tokens: u64_at(u, f.output),
        cache_read_tokens: opt(f.cache_read),
        cache_write_tokens: opt(f.cache_write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_format_reads_its_own_field_names() {
        let a = json!({"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 2});
        assert_eq!(
            usage_of(Some(&a), &ANTHROPIC),
            Usage {
                input_tokens: 5,
                output_tokens: 7,
                cache_read_tokens: 3,
                cache_write_tokens: 2
            }
        );
        let r = json!({"input_tokens": 11, "output_tokens": 13,
            "input_tokens_details": {"cached_tokens": 4}});
        assert_eq!(
            usage_of(Some(&r), &RESPONSES),
            Usage {
                input_tokens: 11,
                output_tokens: 13,
                cache_read_tokens: 4,
                cache_write_tokens: 0
            }
        );
        let c = json!({"prompt_tokens": 17, "completion_tokens": 19,
            "prompt_tokens_details": {"cached_tokens": 6}});
        assert_eq!(
            usage_of(Some(&c), &CHAT),
            Usage {
                input_tokens: 17,
                output_tokens: 19,
                cache_read_tokens: 6,
                cache_write_tokens: 0
            }
        );
        // Another format's names read as nothing, not as a wrong count.
        assert_eq!(usage_of(Some(&c), &ANTHROPIC), Usage::default());
    }

    #[test]
    fn absent_or_malformed_usage_is_zero() {
        assert_eq!(usage_of(None, &ANTHROPIC), Usage::default());
        assert_eq!(usage_of(Some(&Value::Null), &CHAT), Usage::default());
        let odd = json!({"input_tokens": "many", "output_tokens": -1,
            "input_tokens_details": []});
        assert_eq!(usage_of(Some(&odd), &RESPONSES), Usage::default());
    }
}
