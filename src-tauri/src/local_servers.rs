//! A first run that says what to do: whether any model is set up for the open project, and which
//! local OpenAI-compatible servers answer on their usual loopback ports (Ollama :11434, LM Studio
//! :1234, llama.cpp's server :8080), probed with `GET /v1/models` and a short timeout, only when
//! nothing is set up. The window offers the Providers page and, for a server that answered, to
//! use it (written to the person's own settings through `set_setting`, as the Providers page
//! writes). Model names come from a local process: bounded and escaped before they are shown.

use std::time::Duration;

use aibuddy_common::term::line;
use aibuddy_provider::config::resolve_entry;
use aibuddy_provider::{BaseUrlOverrides, KeyStore, ProvidersConfig, Route};
use serde::Serialize;
use tauri::State;
use ts_rs::TS;

use crate::error::CommandError;
use crate::state::ShellState;

/// How long one probe may take (connect and answer).
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(800);
/// The most bytes of a `/v1/models` answer read.
const MAX_BODY: usize = 256 * 1024;
/// The most model names kept per server, and characters per name.
const MAX_MODELS: usize = 50;
const MAX_NAME: usize = 200;

/// A local server to probe: the provider entry name it would get, what people call it, its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub id: &'static str,
    pub name: &'static str,
    pub port: u16,
}

/// The usual loopback ports of the local OpenAI-compatible servers people run.
pub const KNOWN: &[Target] = &[
    Target {
        id: "ollama",
        name: "Ollama",
        port: 11434,
    },
    Target {
        id: "lmstudio",
        name: "LM Studio",
        port: 1234,
    },
    Target {
        id: "llamacpp",
        name: "llama.cpp server",
        port: 8080,
    },
];

/// A local server that answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct LocalServer {
    /// The provider entry name to write (`ollama`, `lmstudio`, `llamacpp`).
    pub id: String,
    /// What people call it.
    pub name: String,
    /// `http://127.0.0.1:<port>/v1`.
    pub base_url: String,
    /// The models it lists (bounded, escaped); may be empty.
    pub models: Vec<String>,
}

/// What the run view says before the first run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ModelSetup {
    /// No provider entry can run: none configured and no key for the built-in `anthropic` entry,
    /// or every entry has a problem or is a vendor's API without a key.
    pub needs_setup: bool,
    /// Local servers that answered (probed only when `needs_setup`).
    pub local_servers: Vec<LocalServer>,
}

/// Whether nothing can run (see [`ModelSetup::needs_setup`]). Pure but for `has_key`.
pub fn needs_setup(
    config: &ProvidersConfig,
    env: &BaseUrlOverrides,
    has_key: impl Fn(&Route) -> bool,
) -> bool {
    if config.entries.is_empty() {
        let builtin = aibuddy_provider::ProviderEntry {
            kind: None,
            model: "default".into(),
            base_url: None,
            tool_search: None,
            stream: None,
            context_window: None,
            images: None,
        };
        return resolve_entry("anthropic", &builtin, env)
            .map_or(true, |r| r.first_party && !has_key(&r));
    }
    !config.entries.iter().any(|(name, entry)| {
        resolve_entry(name, entry, env).is_ok_and(|r| !r.first_party || has_key(&r))
    })
}

/// The model names of a `/v1/models` answer (`{"data": [{"id": ...}]}`), bounded and escaped;
/// `None` when it is not one. Pure.
pub fn parse_models(body: &[u8]) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let data = v.get("data")?.as_array()?;
    Some(
        data.iter()
            .filter_map(|m| m.get("id").and_then(serde_json::Value::as_str))
            .filter(|id| !id.trim().is_empty())
            .take(MAX_MODELS)
            .map(|id| line(&id.chars().take(MAX_NAME).collect::<String>()).into_owned())
            .collect(),
    )
}

async fn probe(client: &reqwest::Client, host: &str, t: Target) -> Option<LocalServer> {
    let base_url = format!("http://{host}:{}/v1", t.port);
    let mut resp = client.get(format!("{base_url}/models")).send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.ok()? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            return None;
        }
    }
    let models = parse_models(&body)?;
    Some(LocalServer {
        id: t.id.to_string(),
        name: t.name.to_string(),
        base_url,
        models,
    })
}

/// Probes `targets` on `host` (loopback) at once, each bounded by [`PROBE_TIMEOUT`]; the ones
/// that answered like an OpenAI-compatible server, in `targets` order. No proxy, no redirects.
pub async fn probe_all(host: &str, targets: &[Target]) -> Vec<LocalServer> {
    let Ok(client) = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT)
        .build()
    else {
        return Vec::new();
    };
    let mut set = tokio::task::JoinSet::new();
    for (i, t) in targets.iter().enumerate() {
        let (client, host, t) = (client.clone(), host.to_string(), *t);
        set.spawn(async move { (i, probe(&client, &host, t).await) });
    }
    let mut found: Vec<(usize, LocalServer)> = Vec::new();
    while let Some(joined) = set.join_next().await {
        if let Ok((i, Some(server))) = joined {
            found.push((i, server));
        }
    }
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(_, s)| s).collect()
}

/// Whether a model is set up for the open project and, if not, the local servers that answer.
#[tauri::command]
pub async fn model_setup(state: State<'_, ShellState>) -> Result<ModelSetup, CommandError> {
    let project = state.project()?;
    let keys = KeyStore::from_env();
    let needs = needs_setup(
        &project.app.settings.settings.providers,
        &BaseUrlOverrides::from_env(),
        |r| keys.key_for_route(r).is_some(),
    );
    let local_servers = if needs {
        probe_all("127.0.0.1", KNOWN).await
    } else {
        Vec::new()
    };
    Ok(ModelSetup {
        needs_setup: needs,
        local_servers,
    })
}
