//! Provider settings (`providers` in settings): the types and their pure resolution into a route.
//!
//! ```json
//! {"providers": {"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"},
//!   "openai": {"model": "gpt-5.4"},
//!   "local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:11434/v1", "model": "qwen3:8b"}}}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;
pub use crate::kind::{ProviderKind, ToolSearchMode};
use crate::request::Presentation;
use crate::routes;

/// One entry under `providers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// Required unless the entry is named `anthropic` or `openai`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ProviderKind>,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<ToolSearchMode>,
    /// `false` sends Chat Completions requests unstreamed (endpoints that break streaming with
    /// tools). Unset: stream, and fall back automatically on a recognisable failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Overrides the context window table for this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// `true`: the Chat Completions endpoint takes image input (`image_url` parts), so images
    /// of tool results follow the tool messages as a user message. Unset or `false`: they are
    /// described in text. Anthropic and Responses always take images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
}

/// The `providers` settings object: `default` plus named entries side by side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidersConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(flatten)]
    pub entries: BTreeMap<String, ProviderEntry>,
}

/// Base URLs from the environment (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`), passed in by the edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaseUrlOverrides {
    pub anthropic: Option<String>,
    pub openai: Option<String>,
}

impl BaseUrlOverrides {
    /// Reads the two variables; the only place this crate reads base URLs from the environment.
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self {
            anthropic: get("ANTHROPIC_BASE_URL"),
            openai: get("OPENAI_BASE_URL"),
        }
    }
}

pub const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";
pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// Where a route's base URL came from; decides whether an environment key may be sent there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseUrlFrom {
    /// The vendor's own API.
    Default,
    /// `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`, set by the person.
    Env,
    /// `providers.NAME.base_url` in settings.
    Settings,
}

/// A provider entry resolved into everything a run needs to talk to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// The entry's name (also the keyring account for its key).
    pub name: String,
    pub kind: ProviderKind,
    pub model: String,
    /// Without a trailing slash. Anthropic: without `/v1`; OpenAI: with it (the SDKs' conventions).
    pub base_url: String,
    /// No base URL was configured, or it is the vendor's own host.
    pub first_party: bool,
    pub base_url_from: BaseUrlFrom,
    pub presentation: Presentation,
    pub context_window: u64,
    pub stream: Option<bool>,
    /// Images of tool results are sent as image input (always on Anthropic and Responses; on
    /// Chat only when `providers.NAME.images` is `true`).
    pub images: bool,
}

impl ProvidersConfig {
    /// The entry a run uses: `name`, else `default`, else the only entry.
    pub fn resolve(
        &self,
        name: Option<&str>,
        env: &BaseUrlOverrides,
    ) -> Result<Route, ProviderError> {
        let name = match (name, self.default.as_deref()) {
            (Some(n), _) | (None, Some(n)) => n.to_string(),
            (None, None) if self.entries.len() == 1 => {
                self.entries.keys().next().cloned().unwrap_or_default()
            }
            (None, None) => {
                return Err(ProviderError::Config(
                    "no provider chosen: set providers.default or pass --provider".into(),
                ));
            }
        };
        let entry = self
            .entries
            .get(&name)
            .ok_or_else(|| ProviderError::Config(format!("providers.{name} is not configured")))?;
        resolve_entry(&name, entry, env)
    }
}

/// Pure resolution of one entry.
pub fn resolve_entry(
    name: &str,
    entry: &ProviderEntry,
    env: &BaseUrlOverrides,
) -> Result<Route, ProviderError> {
    let kind = match (entry.kind, name) {
        (Some(k), _) => k,
        (None, "anthropic") => ProviderKind::Anthropic,
        (None, "openai") => ProviderKind::OpenAiResponses,
        (None, _) => {
            return Err(ProviderError::Config(format!(
                "providers.{name}.kind is required (anthropic, openai-responses or openai-chat)"
            )));
        }
    };
    if entry.model.trim().is_empty() {
        return Err(ProviderError::Config(format!(
            "providers.{name}.model is empty"
        )));
    }
    let env_url = match kind {
        ProviderKind::Anthropic => env.anthropic.as_deref(),
        _ => env.openai.as_deref(),
    };
    let configured = entry.base_url.as_deref().or(env_url);
    let base_url_from = match (entry.base_url.is_some(), env_url.is_some()) {
        (true, _) => BaseUrlFrom::Settings,
        (false, true) => BaseUrlFrom::Env,
        (false, false) => BaseUrlFrom::Default,
    };
    if let Some(url) = configured
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(ProviderError::Config(format!(
            "providers.{name}.base_url must start with http:// or https://"
        )));
    }
    let default_base = match kind {
        ProviderKind::Anthropic => ANTHROPIC_DEFAULT_BASE,
        _ => OPENAI_DEFAULT_BASE,
    };
    let base_url = configured
        .unwrap_or(default_base)
        .trim_end_matches('/')
        .to_string();
    let first_party = configured.is_none_or(|u| routes::is_first_party(kind, u));
    let mode = entry.tool_search.unwrap_or_default();
    let presentation = routes::presentation(kind, &entry.model, first_party, mode)?;
    Ok(Route {
        name: name.to_string(),
        kind,
        model: entry.model.clone(),
        base_url,
        first_party,
        base_url_from,
        presentation,
        context_window: entry
            .context_window
            .unwrap_or_else(|| routes::context_window(kind, &entry.model)),
        stream: entry.stream,
        images: match kind {
            ProviderKind::OpenAiChat => entry.images.unwrap_or(false),
            _ => true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE_EXAMPLE: &str = r#"{"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}, "openai": {"model": "gpt-5.4"}, "local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:11434/v1", "model": "qwen3:8b"}}"#;

    #[test]
    fn issue_example_parses_and_resolves() {
        let c: ProvidersConfig = serde_json::from_str(ISSUE_EXAMPLE).unwrap();
        assert_eq!(c.default.as_deref(), Some("anthropic"));
        assert_eq!(c.entries.len(), 3);
        let none = BaseUrlOverrides::default();
        let a = c.resolve(None, &none).unwrap();
        assert_eq!(
            (a.kind, a.presentation),
            (ProviderKind::Anthropic, Presentation::Native)
        );
        assert_eq!(a.base_url, "https://api.anthropic.com");
        let o = c.resolve(Some("openai"), &none).unwrap();
        assert_eq!(
            (o.kind, o.presentation),
            (ProviderKind::OpenAiResponses, Presentation::Native)
        );
        let l = c.resolve(Some("local"), &none).unwrap();
        assert_eq!(
            (l.kind, l.presentation),
            (ProviderKind::OpenAiChat, Presentation::ActiveTools)
        );
        assert_eq!(l.base_url, "http://127.0.0.1:11434/v1");
    }

    #[test]
    fn env_base_url_makes_anthropic_active_tools_unless_native_forced() {
        let c: ProvidersConfig = serde_json::from_str(ISSUE_EXAMPLE).unwrap();
        let env = BaseUrlOverrides {
            anthropic: Some("http://127.0.0.1:9/".into()),
            openai: None,
        };
        let a = c.resolve(None, &env).unwrap();
        assert_eq!(a.base_url, "http://127.0.0.1:9");
        assert!(!a.first_party);
        assert_eq!(a.presentation, Presentation::ActiveTools);
        let forced: ProvidersConfig = serde_json::from_str(
            r#"{"anthropic": {"model": "claude-sonnet-4-6", "tool_search": "native"}}"#,
        )
        .unwrap();
        assert_eq!(
            forced.resolve(None, &env).unwrap().presentation,
            Presentation::Native
        );
    }

    #[test]
    fn bad_entries_are_reported() {
        let unknown_field = serde_json::from_str::<ProvidersConfig>(
            r#"{"x": {"model": "m", "kind": "openai-chat", "colour": 1}}"#,
        );
        assert!(unknown_field.is_err());
        let c: ProvidersConfig = serde_json::from_str(r#"{"x": {"model": "m"}}"#).unwrap();
        let e = c.resolve(None, &BaseUrlOverrides::default()).unwrap_err();
        assert!(e.to_string().contains("providers.x.kind"), "{e}");
        let c: ProvidersConfig = serde_json::from_str(
            r#"{"x": {"model": "m", "kind": "openai-chat", "base_url": "ftp://h"}}"#,
        )
        .unwrap();
        assert!(c.resolve(Some("x"), &BaseUrlOverrides::default()).is_err());
        let c: ProvidersConfig = serde_json::from_str(
            r#"{"x": {"model": "m", "kind": "openai-chat", "tool_search": "native"}}"#,
        )
        .unwrap();
        assert!(c.resolve(Some("x"), &BaseUrlOverrides::default()).is_err());
        assert!(
            c.resolve(Some("nope"), &BaseUrlOverrides::default())
                .is_err()
        );
    }
}
