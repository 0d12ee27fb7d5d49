//! Provider API keys in the OS keyring: the entry-name rule, storing and removing a key, and
//! where a key stands. `aibuddy auth set` and the window's Providers page both ask here. A key
//! is never logged, returned or written to a file.

use aibuddy_provider::keys::{ApiKey, KeyError, KeyStore, keyring_get};
use serde::Serialize;
use ts_rs::TS;

use super::HostError;
use crate::contract::Stage;

/// Longest provider entry name.
pub const MAX_ENTRY_NAME: usize = 64;

/// Where a provider entry's key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum KeyState {
    /// In the OS keyring under the entry's name.
    Set,
    NotSet,
    /// The OS keyring cannot be used here (the environment variables still work).
    KeyringUnavailable,
}

/// Whether `name` may name a provider entry (and so a keyring entry): 1-64 letters, digits,
/// `_`, `-` or `.`.
pub fn valid_entry_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ENTRY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn checked_name(name: &str) -> Result<(), HostError> {
    if valid_entry_name(name) {
        Ok(())
    } else {
        Err(HostError::new(
            Stage::Parameters,
            format!("a provider entry name is 1-{MAX_ENTRY_NAME} letters, digits, `_`, `-` or `.`"),
        ))
    }
}

fn keyring_error(e: KeyError) -> HostError {
    let message = match e {
        KeyError::Unavailable => "the OS keyring is not available on this system; set ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment instead".to_owned(),
        other => format!("cannot use the OS keyring: {other}"),
    };
    HostError::new(Stage::Execution, message)
}

/// Where the key of provider entry `name` stands in the keyring.
pub fn key_state(name: &str) -> KeyState {
    match keyring_get(name) {
        Ok(Some(_)) => KeyState::Set,
        Ok(None) => KeyState::NotSet,
        Err(KeyError::Unavailable) => KeyState::KeyringUnavailable,
        Err(_) => KeyState::NotSet,
    }
}

/// Stores `key` (surrounding whitespace dropped) for provider entry `name`, replacing any.
pub fn store_key(name: &str, key: &str) -> Result<KeyState, HostError> {
    checked_name(name)?;
    let key = ApiKey::new(key.trim())
        .ok_or_else(|| HostError::new(Stage::Parameters, "the key is empty"))?;
    KeyStore::new().set(name, &key).map_err(keyring_error)?;
    tracing::info!(provider = ?name, "provider key stored in the OS keyring");
    Ok(key_state(name))
}

/// Removes the keyring key of provider entry `name`.
pub fn remove_key(name: &str) -> Result<KeyState, HostError> {
    checked_name(name)?;
    KeyStore::new().delete(name).map_err(keyring_error)?;
    Ok(key_state(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert!(valid_entry_name("local-2.x") && valid_entry_name("openai_compat"));
        for bad in ["", "a/b", "a b", "../x", "ключ", &"a".repeat(65)] {
            assert!(!valid_entry_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_bad_name_or_an_empty_key_is_refused_at_parameters_before_the_keyring() {
        assert_eq!(store_key("a/b", "k").unwrap_err().stage, Stage::Parameters);
        assert_eq!(
            store_key("ok", "  \n").unwrap_err().stage,
            Stage::Parameters
        );
        assert_eq!(remove_key("").unwrap_err().stage, Stage::Parameters);
    }
}
