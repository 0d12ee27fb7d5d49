//! `aibuddy auth set NAME` (a key from stdin into the OS keyring) and `aibuddy auth status
//! [--json]` (which providers have a key, and from where; never the key).

use std::io::Read;
use std::process::ExitCode;

use aibuddy::contract::Stage;
use aibuddy_common::term;
use aibuddy_provider::keys::{KeyError, keyring_get};
use aibuddy_provider::{KeySource, KeyStore, ProviderKind, ProvidersConfig};
use clap::Subcommand;
use serde::Serialize;

use super::print_json;
use aibuddy::app::AppOptions;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Store a provider's API key (read from stdin) in the OS keyring.
    Set {
        /// The provider entry name (`anthropic`, `openai`, or a name under settings `providers`).
        name: String,
    },
    /// Which providers have a key, and where it comes from (never the key).
    Status {
        #[arg(long)]
        json: bool,
    },
}

/// One provider's key status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyStatus {
    pub provider: String,
    pub kind: String,
    pub has_key: bool,
    /// `env` or `keyring` when `has_key`.
    pub source: Option<KeySource>,
    /// The environment variable this provider's kind reads.
    pub env_var: String,
}

/// The providers to report: `anthropic` and `openai` always, then every configured entry.
pub fn provider_kinds(config: &ProvidersConfig) -> Vec<(String, ProviderKind)> {
    let mut out = vec![
        ("anthropic".to_string(), ProviderKind::Anthropic),
        ("openai".to_string(), ProviderKind::OpenAiResponses),
    ];
    for (name, entry) in &config.entries {
        let kind = entry.kind.or(match name.as_str() {
            "anthropic" => Some(ProviderKind::Anthropic),
            "openai" => Some(ProviderKind::OpenAiResponses),
            _ => None,
        });
        let Some(kind) = kind else { continue };
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = kind,
            None => out.push((name.clone(), kind)),
        }
    }
    out
}

pub fn run(command: AuthCommand, opts: AppOptions) -> ExitCode {
    match command {
        AuthCommand::Set { name } => set(&name),
        AuthCommand::Status { json } => status(&opts, json),
    }
}

fn set(name: &str) -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("aibuddy: cannot read the key from stdin: {e} (stage Parameters)");
        return ExitCode::from(2);
    }
    if text.trim().is_empty() {
        eprintln!("aibuddy: no key on stdin (stage Parameters)");
        return ExitCode::from(2);
    }
    match aibuddy::host::provider_keys::store_key(name, &text) {
        Ok(_) => {
            eprintln!(
                "aibuddy: key for `{}` stored in the OS keyring",
                term::line(name)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "aibuddy: cannot store the key: {} (stage {})",
                term::line(&e.message),
                e.stage
            );
            ExitCode::from(if e.stage == Stage::Parameters { 2 } else { 1 })
        }
    }
}

fn status(opts: &AppOptions, json: bool) -> ExitCode {
    let loaded = aibuddy::trust::load_settings(&opts.data_dir, &opts.project);
    let store = KeyStore::from_env();
    let mut keyring_unavailable = false;
    let rows: Vec<KeyStatus> = provider_kinds(&loaded.settings.providers)
        .into_iter()
        .map(|(name, kind)| {
            if matches!(keyring_get(&name), Err(KeyError::Unavailable)) {
                keyring_unavailable = true;
            }
            let source = store.key_for(&name, kind).map(|(_, s)| s);
            KeyStatus {
                has_key: source.is_some(),
                source,
                kind: kind.as_str().to_string(),
                env_var: kind.key_env_var().to_string(),
                provider: name,
            }
        })
        .collect();
    if json {
        return print_json(&rows);
    }
    for r in &rows {
        let from = match r.source {
            Some(KeySource::Env) => format!("key from {}", r.env_var),
            Some(KeySource::Keyring) => "key from the OS keyring".to_string(),
            None => format!("no key (set {} or run `aibuddy auth set`)", r.env_var),
        };
        outln!("{}  {}  {}", term::line(&r.provider), r.kind, from);
    }
    if keyring_unavailable {
        eprintln!("aibuddy: the OS keyring is not available; only environment keys are used");
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_entries_join_the_two_vendors() {
        let c: ProvidersConfig = serde_json::from_value(serde_json::json!({
            "default": "local",
            "openai": {"kind": "openai-chat", "model": "m"},
            "local": {"kind": "openai-chat", "base_url": "http://x/v1", "model": "q"}
        }))
        .unwrap();
        let got = provider_kinds(&c);
        assert_eq!(
            got,
            vec![
                ("anthropic".into(), ProviderKind::Anthropic),
                ("openai".into(), ProviderKind::OpenAiChat),
                ("local".into(), ProviderKind::OpenAiChat),
            ]
        );
    }
}
