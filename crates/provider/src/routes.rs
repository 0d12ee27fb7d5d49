//! The route capability table, pure: which routes get native tool search, and model windows.

use crate::error::ProviderError;
use crate::kind::{ProviderKind, ToolSearchMode};
use crate::request::Presentation;

/// Whether `base_url` is the vendor's own API host.
pub fn is_first_party(kind: ProviderKind, base_url: &str) -> bool {
    let rest = base_url.strip_prefix("https://").unwrap_or_default();
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    match kind {
        ProviderKind::Anthropic => host == "api.anthropic.com",
        ProviderKind::OpenAiResponses => host == "api.openai.com",
        ProviderKind::OpenAiChat => false,
    }
}

/// (family, major, minor) of a Claude model id: `claude-sonnet-4-6`, `claude-sonnet-4-20250514`,
/// `claude-3-7-sonnet-20250219`. A date in the minor position means minor 0.
fn claude_version(model: &str) -> Option<(&'static str, u32, u32)> {
    let m = model.to_ascii_lowercase();
    let rest = m.strip_prefix("claude-")?;
    let family = ["opus", "sonnet", "haiku"]
        .into_iter()
        .find(|f| rest.split('-').any(|p| p == *f))?;
    let nums: Vec<u32> = rest
        .split('-')
        .filter_map(|p| p.parse::<u32>().ok())
        .collect();
    let major = *nums.first()?;
    let minor = nums.get(1).copied().filter(|n| *n < 100).unwrap_or(0);
    Some((family, major, minor))
}

/// (major, minor) of a `gpt-N[.M]` model id.
fn gpt_version(model: &str) -> Option<(u32, u32)> {
    let m = model.to_ascii_lowercase();
    let rest = m.strip_prefix("gpt-")?;
    let ver = rest.split('-').next()?;
    let mut it = ver.split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().map(|s| s.parse().ok()).unwrap_or(Some(0))?;
    Some((major, minor))
}

/// Native tool search on first-party routes: Anthropic Sonnet/Opus 4.5 and later (the newest API
/// page says Opus 4.1 and earlier lack it; conservative for Sonnet too), never Haiku; OpenAI
/// Responses gpt-5.4 and later except nano. Everything else uses activeTools.
pub fn supports_native_tool_search(kind: ProviderKind, model: &str) -> bool {
    match kind {
        ProviderKind::Anthropic => match claude_version(model) {
            Some(("haiku", ..)) | None => false,
            Some((_, major, minor)) => major > 4 || (major == 4 && minor >= 5),
        },
        ProviderKind::OpenAiResponses => {
            !model.to_ascii_lowercase().contains("nano")
                && gpt_version(model).is_some_and(|(ma, mi)| ma > 5 || (ma == 5 && mi >= 4))
        }
        ProviderKind::OpenAiChat => false,
    }
}

/// The presentation for a route. `native` on Chat Completions is a configuration error.
pub fn presentation(
    kind: ProviderKind,
    model: &str,
    first_party: bool,
    mode: ToolSearchMode,
) -> Result<Presentation, ProviderError> {
    match mode {
        ToolSearchMode::ActiveTools => Ok(Presentation::ActiveTools),
        ToolSearchMode::Native if kind == ProviderKind::OpenAiChat => Err(ProviderError::Config(
            "tool_search \"native\" is not available on openai-chat routes".into(),
        )),
        ToolSearchMode::Native => Ok(Presentation::Native),
        ToolSearchMode::Auto if first_party && supports_native_tool_search(kind, model) => {
            Ok(Presentation::Native)
        }
        ToolSearchMode::Auto => Ok(Presentation::ActiveTools),
    }
}

/// Context window in tokens, from a table (overridable per entry with `context_window`).
pub fn context_window(kind: ProviderKind, model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude-") {
        return 200_000;
    }
    if m.starts_with("gpt-4.1") {
        return 1_047_576;
    }
    if m.starts_with("gpt-4o") || m.starts_with("gpt-4-turbo") {
        return 128_000;
    }
    if m.starts_with("gpt-5") {
        return 400_000;
    }
    if m.starts_with("o3") || m.starts_with("o4") || m.starts_with("o1") {
        return 200_000;
    }
    match kind {
        ProviderKind::OpenAiChat => 32_768,
        _ => 128_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProviderKind::*;

    #[test]
    fn native_tool_search_table() {
        for m in [
            "claude-sonnet-4-6",
            "claude-opus-4-6",
            "claude-opus-4-5-20251101",
            "claude-sonnet-5",
        ] {
            assert!(supports_native_tool_search(Anthropic, m), "{m}");
        }
        for m in [
            "claude-haiku-4-5",
            "claude-3-7-sonnet-20250219",
            "claude-opus-4-1",
            "claude-sonnet-4-20250514",
            "llama3",
        ] {
            assert!(!supports_native_tool_search(Anthropic, m), "{m}");
        }
        for m in ["gpt-5.4", "gpt-5.4-mini", "gpt-5.5", "gpt-6"] {
            assert!(supports_native_tool_search(OpenAiResponses, m), "{m}");
        }
        for m in ["gpt-5.4-nano", "gpt-5", "gpt-5.1", "gpt-4.1", "o3"] {
            assert!(!supports_native_tool_search(OpenAiResponses, m), "{m}");
        }
        assert!(!supports_native_tool_search(OpenAiChat, "gpt-5.4"));
    }

    #[test]
    fn presentation_rules() {
        let p = |k, m, fp, mode| presentation(k, m, fp, mode).unwrap();
        assert_eq!(
            p(Anthropic, "claude-sonnet-4-6", true, ToolSearchMode::Auto),
            Presentation::Native
        );
        assert_eq!(
            p(Anthropic, "claude-sonnet-4-6", false, ToolSearchMode::Auto),
            Presentation::ActiveTools
        );
        assert_eq!(
            p(Anthropic, "claude-haiku-4-5", true, ToolSearchMode::Auto),
            Presentation::ActiveTools
        );
        assert_eq!(
            p(Anthropic, "claude-haiku-4-5", false, ToolSearchMode::Native),
            Presentation::Native
        );
        assert_eq!(
            p(
                OpenAiResponses,
                "gpt-5.4",
                true,
                ToolSearchMode::ActiveTools
            ),
            Presentation::ActiveTools
        );
        assert!(presentation(OpenAiChat, "x", false, ToolSearchMode::Native).is_err());
    }

    #[test]
    fn first_party_hosts() {
        assert!(is_first_party(Anthropic, "https://api.anthropic.com"));
        assert!(!is_first_party(
            Anthropic,
            "https://api.anthropic.com.evil.example"
        ));
        assert!(!is_first_party(Anthropic, "http://api.anthropic.com"));
        assert!(is_first_party(OpenAiResponses, "https://api.openai.com/v1"));
        assert!(!is_first_party(
            OpenAiResponses,
            "https://gateway.example/v1"
        ));
    }

    #[test]
    fn windows() {
        assert_eq!(context_window(Anthropic, "claude-sonnet-4-6"), 200_000);
        assert_eq!(context_window(OpenAiResponses, "gpt-5.4"), 400_000);
        assert_eq!(context_window(OpenAiChat, "qwen3:8b"), 32_768);
    }
}
