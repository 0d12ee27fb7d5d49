//! The provider/model picker's side of the shell: the configured `providers` entries of the open
//! project's settings (name, kind, model, the base URL's host, whether a key is present — never the
//! key, looked up as `aibuddy auth status` and a run do), the default entry, and the choice last
//! made in the picker for this project (kept in the recent-projects list).

use aibuddy_common::term::line;
use aibuddy_provider::config::resolve_entry;
use aibuddy_provider::{BaseUrlOverrides, KeyStore, ProvidersConfig};
use serde::Serialize;
use ts_rs::TS;

/// One configured provider entry as the picker shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderChoice {
    /// The entry's name under settings `providers` (what `start_run` takes as `provider`).
    pub name: String,
    /// `anthropic`, `openai-responses` or `openai-chat` (None when the entry does not resolve).
    pub kind: Option<String>,
    /// The entry's model.
    pub model: String,
    /// The host its requests go to (no scheme, path or credentials).
    pub host: Option<String>,
    /// A key for this entry is present (keyring or environment, as a run would send it).
    pub has_key: bool,
    /// Why the entry cannot be used as configured (escaped), if so.
    pub problem: Option<String>,
}

/// Every configured entry, the default and the last choice for this project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ProviderList {
    pub providers: Vec<ProviderChoice>,
    /// The entry a run uses when none is chosen (`providers.default`, or the only entry).
    pub default: Option<String>,
    /// The entry last chosen in the picker for this project (if it is still configured).
    pub chosen: Option<String>,
    /// The model override last chosen for this project.
    pub chosen_model: Option<String>,
}

/// The host of `url` (pure): `https://user:pw@api.example.com:8443/v1` -> `api.example.com:8443`.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then(|| line(host).into_owned())
}

/// The picker's list (pure but for the key lookup `has_key`).
pub fn list(
    config: &ProvidersConfig,
    env: &BaseUrlOverrides,
    has_key: impl Fn(&aibuddy_provider::config::Route) -> bool,
    chosen: Option<&str>,
    chosen_model: Option<&str>,
) -> ProviderList {
    let providers: Vec<ProviderChoice> = config
        .entries
        .iter()
        .map(|(name, entry)| match resolve_entry(name, entry, env) {
            Ok(route) => ProviderChoice {
                name: line(name).into_owned(),
                kind: Some(route.kind.as_str().to_string()),
                model: line(&route.model).into_owned(),
                host: host_of(&route.base_url),
                has_key: has_key(&route),
                problem: None,
            },
            Err(e) => ProviderChoice {
                name: line(name).into_owned(),
                kind: entry.kind.map(|k| k.as_str().to_string()),
                model: line(&entry.model).into_owned(),
                host: entry.base_url.as_deref().and_then(host_of),
                has_key: false,
                problem: Some(line(&e.to_string()).into_owned()),
            },
        })
        .collect();
    let default = match config.default.as_deref() {
        Some(d) => Some(d.to_string()),
        None if config.entries.len() == 1 => config.entries.keys().next().cloned(),
        None => None,
    };
    let chosen = chosen
        .filter(|c| config.entries.contains_key(*c))
        .map(str::to_string);
    ProviderList {
        providers,
        default,
        chosen,
        chosen_model: chosen_model
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string),
    }
}

/// The list for the open project's settings, keys looked up as a run would (env and keyring).
pub fn for_app(
    app: &aibuddy::app::App,
    chosen: Option<&str>,
    chosen_model: Option<&str>,
) -> ProviderList {
    let keys = KeyStore::from_env();
    list(
        &app.settings.settings.providers,
        &BaseUrlOverrides::from_env(),
        |route| keys.key_for_route(route).is_some(),
        chosen,
        chosen_model,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_without_scheme_path_or_credentials() {
        assert_eq!(
            host_of("https://user:pw@api.example.com:8443/v1").as_deref(),
            Some("api.example.com:8443")
        );
        assert_eq!(
            host_of("http://127.0.0.1:11434/v1").as_deref(),
            Some("127.0.0.1:11434")
        );
        assert_eq!(host_of("https://").as_deref(), None);
    }

    #[test]
    fn entries_default_and_a_stale_choice() {
        let c: ProvidersConfig = serde_json::from_value(serde_json::json!({
            "default": "local",
            "local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "q"},
            "broken": {"model": "m"}
        }))
        .unwrap();
        let got = list(
            &c,
            &BaseUrlOverrides::default(),
            |_| true,
            Some("gone"),
            Some(" "),
        );
        assert_eq!(got.default.as_deref(), Some("local"));
        assert_eq!(got.chosen, None);
        assert_eq!(got.chosen_model, None);
        let local = got.providers.iter().find(|p| p.name == "local").unwrap();
        assert_eq!(local.host.as_deref(), Some("127.0.0.1:9"));
        assert!(local.has_key && local.problem.is_none());
        let broken = got.providers.iter().find(|p| p.name == "broken").unwrap();
        assert!(!broken.has_key && broken.problem.is_some());
        let again = list(
            &c,
            &BaseUrlOverrides::default(),
            |_| false,
            Some("local"),
            Some("big"),
        );
        assert_eq!(again.chosen.as_deref(), Some("local"));
        assert_eq!(again.chosen_model.as_deref(), Some("big"));
    }
}
