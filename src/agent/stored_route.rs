//! Which provider entry and model a run talks to (pure): settings, flags, and for a continued run
//! the provider and model stored with it. A continued run keeps its stored provider and model
//! unless `--provider` / `--model` say otherwise (the entry's current model may have changed since
//! the run started; the conversation was written with the stored one).

use aibuddy_provider::{BaseUrlOverrides, ProviderEntry, ProviderError, ProvidersConfig, Route};
use aibuddy_store::RunRecord;

/// `config` with `model` applied to the entry `name` (else `providers.default`, else the only
/// entry). Applied before resolution, so the presentation and the context window follow the
/// model actually used. An entry named `anthropic`/`openai` is created when missing.
pub fn with_model(
    config: &ProvidersConfig,
    name: Option<&str>,
    model: Option<&str>,
) -> ProvidersConfig {
    let mut config = config.clone();
    let Some(model) = model else { return config };
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
                    images: None,
                },
            );
        }
    }
    config
}

/// (provider entry name, model) for a run: the flags, and for a continued run (`stored`) its
/// stored provider (when settings still have that entry) and stored model (when the run stays on
/// its stored provider and no `--model` is given).
pub fn selection(
    config: &ProvidersConfig,
    stored: Option<&RunRecord>,
    flag_provider: Option<&str>,
    flag_model: Option<&str>,
) -> (Option<String>, Option<String>) {
    let stored_provider = stored
        .and_then(|r| r.provider.as_deref())
        .filter(|n| config.entries.contains_key(*n));
    let name = flag_provider.or(stored_provider).map(str::to_string);
    let same_provider = stored_provider.is_some() && name.as_deref() == stored_provider;
    let model = match flag_model {
        Some(m) => Some(m.to_string()),
        None if same_provider => stored.and_then(|r| r.model.clone()),
        None => None,
    };
    (name, model)
}

/// The route of a run (see [`selection`]).
pub fn route_for(
    config: &ProvidersConfig,
    stored: Option<&RunRecord>,
    flag_provider: Option<&str>,
    flag_model: Option<&str>,
    env: &BaseUrlOverrides,
) -> Result<Route, ProviderError> {
    let (name, model) = selection(config, stored, flag_provider, flag_model);
    with_model(config, name.as_deref(), model.as_deref()).resolve(name.as_deref(), env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> ProvidersConfig {
        serde_json::from_value(json!({
            "default": "anthropic",
            "anthropic": {"model": "claude-sonnet-4-6"},
            "local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:1/v1", "model": "q-new"}
        }))
        .unwrap()
    }

    fn stored(provider: &str, model: &str) -> RunRecord {
        RunRecord {
            run_id: "r".into(),
            title: None,
            provider: Some(provider.into()),
            model: Some(model.into()),
            presentation: None,
            status: Some(aibuddy_store::RunStatus::Interrupted),
            stage: None,
            error_message: None,
            started_at: String::new(),
            started_at_ms: 0,
            finished_at_ms: None,
            usage: Default::default(),
            steps: 0,
            tool_calls: 0,
            project_root: None,
            owner: None,
            scoped_call_ids: true,
            stop_reason: None,
            parent_run_id: None,
            parent_call_id: None,
            child_shape: None,
        }
    }

    #[test]
    fn a_continued_run_keeps_its_stored_provider_and_model() {
        let c = config();
        let env = BaseUrlOverrides::default();
        let run = stored("local", "q-old");
        let r = route_for(&c, Some(&run), None, None, &env).unwrap();
        assert_eq!((r.name.as_str(), r.model.as_str()), ("local", "q-old"));
        // --model wins; --provider picks that entry's own model.
        let r = route_for(&c, Some(&run), None, Some("q-flag"), &env).unwrap();
        assert_eq!(r.model, "q-flag");
        let r = route_for(&c, Some(&run), Some("anthropic"), None, &env).unwrap();
        assert_eq!(
            (r.name.as_str(), r.model.as_str()),
            ("anthropic", "claude-sonnet-4-6")
        );
        // Naming the stored provider explicitly still keeps the stored model.
        let r = route_for(&c, Some(&run), Some("local"), None, &env).unwrap();
        assert_eq!(r.model, "q-old");
        // An entry removed from settings: the default entry and its model.
        let gone = stored("vanished", "v1");
        let r = route_for(&c, Some(&gone), None, None, &env).unwrap();
        assert_eq!(
            (r.name.as_str(), r.model.as_str()),
            ("anthropic", "claude-sonnet-4-6")
        );
        // A new run: settings and flags only.
        let r = route_for(&c, None, None, None, &env).unwrap();
        assert_eq!(r.model, "claude-sonnet-4-6");
    }

    #[test]
    fn model_override_goes_into_the_used_entry() {
        let c = config();
        let env = BaseUrlOverrides::default();
        let r = with_model(&c, Some("local"), Some("q2"))
            .resolve(Some("local"), &env)
            .unwrap();
        assert_eq!(r.model, "q2");
        assert_eq!(with_model(&c, None, None), c);
        let empty = ProvidersConfig::default();
        let r = with_model(&empty, Some("openai"), Some("gpt-5.4"))
            .resolve(Some("openai"), &env)
            .unwrap();
        assert_eq!(r.model, "gpt-5.4");
    }
}
