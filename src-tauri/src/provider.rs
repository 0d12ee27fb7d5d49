//! The model provider of a run started from the window: the settings' `providers` entry the UI
//! names (or `providers.default`), with an optional model override, the base URL overrides and keys
//! from the environment or the keyring, exactly as `aibuddy run` resolves them. The UI names an
//! entry of the person's settings; it never supplies a URL or a key.

use aibuddy::app::App;
use aibuddy_provider::{
    BaseUrlOverrides, HttpProvider, KeyStore, ProviderEntry, ProviderError, ProvidersConfig,
};

use crate::error::{CommandError, ErrorCode};

/// `config` with `model` applied to the entry `name` (or the default entry) names (pure). Applied
/// before resolution, so the presentation and context window follow the model actually used.
/// Same rule as the CLI's `--model`.
pub fn with_model(
    config: &ProvidersConfig,
    name: Option<&str>,
    model: Option<&str>,
) -> ProvidersConfig {
    let mut config = config.clone();
    let Some(model) = model.map(str::trim).filter(|m| !m.is_empty()) else {
        return config;
    };
    let target = match (name, config.default.as_deref()) {
        (Some(n), _) | (None, Some(n)) => Some(n.to_string()),
        (None, None) => (config.entries.len() == 1)
            .then(|| config.entries.keys().next().cloned())
            .flatten(),
    };
    let Some(target) = target else { return config };
    match config.entries.get_mut(&target) {
        Some(entry) => entry.model = model.to_string(),
        None => {
            config.entries.insert(
                target,
                ProviderEntry {
                    kind: None,
                    model: model.to_string(),
                    base_url: None,
                    tool_search: None,
                    stream: None,
                    context_window: None,
                },
            );
        }
    }
    config
}

/// A provider error as the UI receives it (stage named; the message never carries a key).
pub fn provider_error(e: ProviderError) -> CommandError {
    CommandError {
        code: ErrorCode::Run,
        stage: Some(aibuddy::agent::stage_of(e.stage())),
        message: e.to_string(),
    }
}

/// The provider of a run: entry `name` (default: the stored run's entry when continuing, else
/// `providers.default`), `model` overriding its model.
pub fn resolve(
    app: &App,
    name: Option<&str>,
    model: Option<&str>,
) -> Result<HttpProvider, CommandError> {
    let config = with_model(&app.settings.settings.providers, name, model);
    let route = config
        .resolve(name, &BaseUrlOverrides::from_env())
        .map_err(provider_error)?;
    let key = KeyStore::from_env().key_for_route(&route).map(|(k, _)| k);
    HttpProvider::new(route, key).map_err(provider_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_model_override_goes_into_the_used_entry() {
        let c: ProvidersConfig = serde_json::from_value(json!({
            "default": "anthropic",
            "anthropic": {"model": "claude-sonnet-4-6"},
            "local": {"kind": "openai-chat", "base_url": "http://x/v1", "model": "q"}
        }))
        .unwrap();
        let env = BaseUrlOverrides::default();
        let r = with_model(&c, None, Some("claude-haiku-4-5"))
            .resolve(None, &env)
            .unwrap();
        assert_eq!(r.model, "claude-haiku-4-5");
        let r = with_model(&c, Some("local"), Some("q2"))
            .resolve(Some("local"), &env)
            .unwrap();
        assert_eq!(r.model, "q2");
        assert_eq!(with_model(&c, None, Some("  ")), c);
        assert!(
            with_model(&ProvidersConfig::default(), None, Some("m"))
                .resolve(None, &env)
                .is_err()
        );
    }
}
