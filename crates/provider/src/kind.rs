//! The kinds a provider entry names: its wire format (`ProviderKind`) and its `tool_search`
//! override (`ToolSearchMode`). Data only, so settings (`config`), the route tables (`routes`)
//! and the wire formats can all name them without depending on each other.

use serde::{Deserialize, Serialize};

/// The wire format of a provider entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProviderKind {
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    #[serde(rename = "openai-chat")]
    OpenAiChat,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAiResponses => "openai-responses",
            ProviderKind::OpenAiChat => "openai-chat",
        }
    }

    /// The environment variable holding this kind's key.
    pub fn key_env_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            _ => "OPENAI_API_KEY",
        }
    }
}

/// The per-provider `tool_search` override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSearchMode {
    /// The route capability table decides.
    #[default]
    Auto,
    /// Provider-native deferral even where the table says no (local test servers, proxies that
    /// forward `tool_reference`).
    Native,
    /// Always the activeTools path.
    ActiveTools,
}
