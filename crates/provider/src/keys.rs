//! API keys: a type that never prints, and a store over the environment and the OS keyring.
//!
//! Backend choice (see `docs/providers.md`): on Linux kernel keyutils (`keys/linux.rs`, a child of this module): it needs no
//! D-Bus session or Secret Service daemon, so it works on headless Debian; entries live in the
//! user keyring (the same from every thread and process of the person) and the persistent keyring
//! (kernel-managed expiry, days by default); entries of earlier versions (the keyring crate's
//! session-keyring store) are still read. Where keyutils is unavailable (e.g. a container whose
//! seccomp profile blocks `keyctl`), the store reports [`KeyError::Unavailable`] and the
//! environment variables remain the way to provide a key.

#[cfg(target_os = "linux")]
mod linux;

use std::fmt;

use crate::kind::ProviderKind;

/// The keyring service name under which keys are stored (account = provider entry name).
pub const KEYRING_SERVICE: &str = "aibuddy";

/// A secret API key. `Debug`/`Display` are redacted and it has no `Serialize`: the only way out is
/// [`ApiKey::expose`], used by the HTTP layer to set the auth header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// `None` for an empty or whitespace-only value.
    pub fn new(value: impl Into<String>) -> Option<Self> {
        let v: String = value.into();
        let t = v.trim();
        if t.is_empty() {
            return None;
        }
        Some(Self(t.to_string()))
    }

    /// The secret, for an HTTP header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where a provider's key was found (for `auth status`; never the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Env,
    Keyring,
}

/// Key store failures; they never carry the secret (keyring's own errors can, so they are mapped
/// to text-free variants here).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the OS keyring is not available on this system")]
    Unavailable,
    #[error("the key is empty")]
    Empty,
    #[error("the OS keyring refused the operation")]
    Refused,
}

/// Keys from environment variables (given by the caller) and the OS keyring.
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    anthropic_env: Option<ApiKey>,
    openai_env: Option<ApiKey>,
    use_keyring: bool,
}

impl KeyStore {
    /// No environment, keyring on.
    pub fn new() -> Self {
        Self {
            anthropic_env: None,
            openai_env: None,
            use_keyring: true,
        }
    }

    /// Reads `ANTHROPIC_API_KEY` and `OPENAI_API_KEY`; the only place this crate reads keys from
    /// the environment.
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).ok().and_then(ApiKey::new);
        Self::new().with_env(get("ANTHROPIC_API_KEY"), get("OPENAI_API_KEY"))
    }

    pub fn with_env(mut self, anthropic: Option<ApiKey>, openai: Option<ApiKey>) -> Self {
        self.anthropic_env = anthropic;
        self.openai_env = openai;
        self
    }

    /// Turns the keyring off (tests, `--no-keyring` style edges).
    pub fn without_keyring(mut self) -> Self {
        self.use_keyring = false;
        self
    }

    /// The key for the entry `name` of `kind`: the keyring entry named for it first (so two
    /// OpenAI-compatible entries can hold different keys), then the kind's environment variable.
    pub fn key_for(&self, name: &str, kind: ProviderKind) -> Option<(ApiKey, KeySource)> {
        if self.use_keyring
            && let Ok(Some(k)) = keyring_get(name)
        {
            return Some((k, KeySource::Keyring));
        }
        let env = match kind {
            ProviderKind::Anthropic => self.anthropic_env.clone(),
            _ => self.openai_env.clone(),
        };
        env.map(|k| (k, KeySource::Env))
    }

    /// The key to send on `route`. An environment key (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) only
    /// goes to the vendor's own host or to the base URL the person set in the environment, never
    /// to a base URL from settings (which a project could point anywhere); a keyring key stored
    /// under the entry's name goes to that entry's base URL.
    pub fn key_for_route(&self, route: &crate::config::Route) -> Option<(ApiKey, KeySource)> {
        let (key, source) = self.key_for(&route.name, route.kind)?;
        let env_ok = route.first_party || route.base_url_from == crate::config::BaseUrlFrom::Env;
        if source == KeySource::Env && !env_ok {
            return None;
        }
        Some((key, source))
    }

    /// Stores a key in the keyring under `name` (for `aibuddy auth set NAME`).
    pub fn set(&self, name: &str, key: &ApiKey) -> Result<(), KeyError> {
        #[cfg(target_os = "linux")]
        return linux::set(KEYRING_SERVICE, name, key.expose());
        #[cfg(not(target_os = "linux"))]
        match entry(name)?.set_password(key.expose()) {
            Ok(()) => Ok(()),
            // keyutils reports a denied `add_key` (blocked syscall, no session keyring) as NoEntry.
            Err(keyring::Error::NoEntry) => Err(KeyError::Unavailable),
            Err(e) => Err(map_err(e)),
        }
    }

    /// Removes the keyring entry `name`; `Ok(false)` when there was none.
    pub fn delete(&self, name: &str) -> Result<bool, KeyError> {
        #[cfg(target_os = "linux")]
        return linux::delete(KEYRING_SERVICE, name);
        #[cfg(not(target_os = "linux"))]
        match entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(map_err(e)),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn entry(name: &str) -> Result<keyring::Entry, KeyError> {
    entry_in(KEYRING_SERVICE, name)
}

#[cfg(not(target_os = "linux"))]
fn entry_in(service: &str, account: &str) -> Result<keyring::Entry, KeyError> {
    keyring::Entry::new(service, account).map_err(map_err)
}

/// The keyring service of MCP servers' OAuth credentials (account = server name).
pub const MCP_TOKEN_SERVICE: &str = "aibuddy-mcp";

/// Another secret in the same OS keyring as provider keys (MCP OAuth credentials), under
/// (`service`, `account`); `Ok(None)` when absent. Errors never carry the secret.
pub fn secret_get(service: &str, account: &str) -> Result<Option<String>, KeyError> {
    #[cfg(target_os = "linux")]
    return linux::get(service, account);
    #[cfg(not(target_os = "linux"))]
    match entry_in(service, account)?.get_password() {
        Ok(v) => Ok(Some(v)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(map_err(e)),
    }
}

/// Stores a secret under (`service`, `account`), replacing any.
pub fn secret_set(service: &str, account: &str, value: &str) -> Result<(), KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty);
    }
    #[cfg(target_os = "linux")]
    return linux::set(service, account, value);
    #[cfg(not(target_os = "linux"))]
    match entry_in(service, account)?.set_password(value) {
        Ok(()) => Ok(()),
        Err(keyring::Error::NoEntry) => Err(KeyError::Unavailable),
        Err(e) => Err(map_err(e)),
    }
}

/// Removes the secret under (`service`, `account`); `Ok(false)` when there was none.
pub fn secret_delete(service: &str, account: &str) -> Result<bool, KeyError> {
    #[cfg(target_os = "linux")]
    return linux::delete(service, account);
    #[cfg(not(target_os = "linux"))]
    match entry_in(service, account)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(map_err(e)),
    }
}

/// Whether the OS keyring takes entries on this machine, probed below the store (Linux: the
/// keyutils syscalls; elsewhere assumed). Tests use it to accept a refused keyring only where the
/// platform refuses, so a broken store cannot pass as an absent one.
pub fn keyring_usable() -> bool {
    #[cfg(target_os = "linux")]
    return linux::usable();
    #[cfg(not(target_os = "linux"))]
    true
}

/// `Ok(None)` when the keyring has no entry for `name`.
pub fn keyring_get(name: &str) -> Result<Option<ApiKey>, KeyError> {
    #[cfg(target_os = "linux")]
    return Ok(linux::get(KEYRING_SERVICE, name)?.and_then(ApiKey::new));
    #[cfg(not(target_os = "linux"))]
    match entry(name)?.get_password() {
        Ok(v) => Ok(ApiKey::new(v)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(map_err(e)),
    }
}

#[cfg(not(target_os = "linux"))]
fn map_err(e: keyring::Error) -> KeyError {
    // Never format `e`: `BadEncoding` carries the stored bytes.
    match e {
        keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_) => {
            KeyError::Unavailable
        }
        keyring::Error::Invalid(..) | keyring::Error::TooLong(..) => KeyError::Empty,
        _ => KeyError::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints() {
        let k = ApiKey::new("sk-secret-123").unwrap();
        assert_eq!(format!("{k}"), "<redacted>");
        assert!(!format!("{k:?}").contains("secret"));
        assert!(!format!("{:?}", Some(&k)).contains("secret"));
        assert_eq!(k.expose(), "sk-secret-123");
        assert!(ApiKey::new("  ").is_none());
    }

    #[test]
    fn env_keys_by_kind() {
        let s = KeyStore::new()
            .without_keyring()
            .with_env(ApiKey::new("a"), ApiKey::new("o"));
        assert_eq!(
            s.key_for("anthropic", ProviderKind::Anthropic)
                .unwrap()
                .0
                .expose(),
            "a"
        );
        assert_eq!(
            s.key_for("local", ProviderKind::OpenAiChat).unwrap().1,
            KeySource::Env
        );
        let empty = KeyStore::new().without_keyring();
        assert!(
            empty
                .key_for("openai", ProviderKind::OpenAiResponses)
                .is_none()
        );
    }

    #[test]
    fn env_keys_never_follow_a_settings_base_url() {
        use crate::config::{BaseUrlOverrides, ProvidersConfig};
        let s = KeyStore::new()
            .without_keyring()
            .with_env(ApiKey::new("a"), ApiKey::new("o"));
        let c: ProvidersConfig = serde_json::from_str(
            r#"{"openai": {"model": "gpt-5.4"}, "evil": {"kind": "openai-chat", "model": "m", "base_url": "https://collector.example/v1"},
                "same": {"kind": "openai-responses", "model": "m", "base_url": "https://api.openai.com/v1"}}"#,
        )
        .unwrap();
        let none = BaseUrlOverrides::default();
        assert!(
            s.key_for_route(&c.resolve(Some("openai"), &none).unwrap())
                .is_some()
        );
        assert!(
            s.key_for_route(&c.resolve(Some("same"), &none).unwrap())
                .is_some()
        );
        assert!(
            s.key_for_route(&c.resolve(Some("evil"), &none).unwrap())
                .is_none()
        );
        let env = BaseUrlOverrides {
            anthropic: None,
            openai: Some("http://127.0.0.1:8080/v1".into()),
        };
        let local: ProvidersConfig =
            serde_json::from_str(r#"{"local": {"kind": "openai-chat", "model": "m"}}"#).unwrap();
        let r = local.resolve(None, &env).unwrap();
        assert_eq!(r.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(s.key_for_route(&r).unwrap().0.expose(), "o");
    }

    /// Other secrets go through the same keyring: a round trip, or the same typed `Unavailable`.
    #[test]
    fn secrets_round_trip_or_typed_unavailable() {
        let account = format!("aibuddy-test-secret-{}", std::process::id());
        match secret_set(MCP_TOKEN_SERVICE, &account, "{\"token\":\"t-123\"}") {
            Ok(()) => {
                assert_eq!(
                    secret_get(MCP_TOKEN_SERVICE, &account),
                    Ok(Some("{\"token\":\"t-123\"}".into()))
                );
                assert_eq!(secret_get(KEYRING_SERVICE, &account), Ok(None));
                assert_eq!(secret_delete(MCP_TOKEN_SERVICE, &account), Ok(true));
                assert_eq!(secret_get(MCP_TOKEN_SERVICE, &account), Ok(None));
            }
            Err(e) => {
                assert!(!keyring_usable(), "the keyring works here: {e:?}");
                assert_eq!(e, KeyError::Unavailable, "unexpected keyring failure");
            }
        }
        assert_eq!(
            secret_set(MCP_TOKEN_SERVICE, &account, ""),
            Err(KeyError::Empty)
        );
    }

    /// The real OS keyring: a round trip where keyutils is usable; a typed `Unavailable` where the
    /// platform refuses (containers often block `keyctl`), never a panic or a leaked secret.
    #[test]
    fn keyring_round_trip_or_typed_unavailable() {
        let name = format!("aibuddy-test-{}", std::process::id());
        let store = KeyStore::new();
        let key = ApiKey::new("sk-keyring-test").unwrap();
        match store.set(&name, &key) {
            Ok(()) => {
                let (got, src) = store.key_for(&name, ProviderKind::OpenAiChat).unwrap();
                assert_eq!((got.expose(), src), ("sk-keyring-test", KeySource::Keyring));
                assert_eq!(store.delete(&name), Ok(true));
                assert_eq!(keyring_get(&name), Ok(None));
            }
            Err(e) => {
                assert!(!keyring_usable(), "the keyring works here: {e:?}");
                assert_eq!(e, KeyError::Unavailable, "unexpected keyring failure");
                assert!(!e.to_string().contains("sk-keyring-test"));
            }
        }
    }
}
