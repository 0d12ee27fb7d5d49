//! Typed provider errors, each with its lifecycle stage and a retry classification.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where in a call's lifecycle a failure belongs: the one `Stage` every crate uses.
pub use aibuddy_common::Stage;

/// What went wrong on the transport, without the underlying error's text (which may quote a URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    Connect,
    Timeout,
    /// The connection dropped mid-body (reset, early close).
    Body,
    Other,
}

/// Provider messages are untrusted text: they are bounded and terminal-escaped when the error is
/// built, so `Display` is safe to print.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider configuration: {0}")]
    Config(String),
    #[error(
        "no API key for provider {provider} (set {env_var} or run `aibuddy auth set {provider}`)"
    )]
    MissingKey { provider: String, env_var: String },
    #[error("key store: {0}")]
    KeyStore(String),
    #[error("request could not be built: {0}")]
    Request(String),
    #[error("provider returned HTTP {status}{}: {message}", error_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default())]
    Http {
        status: u16,
        /// The provider's error type (`overloaded_error`, `rate_limit_error`, ...), if any.
        error_type: Option<String>,
        /// The provider's own message (bounded).
        message: String,
        retry_after: Option<Duration>,
    },
    /// An error event inside a 200 stream (`event: error`, `response.failed`).
    #[error("provider stream error ({error_type}): {message}")]
    Stream { error_type: String, message: String },
    #[error("connection to the provider failed ({kind:?})")]
    Transport { kind: TransportKind },
    #[error("malformed provider response: {0}")]
    Protocol(String),
    #[error("cancelled")]
    Cancelled,
}

/// Longest provider message kept in an error.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// A provider-sourced string made safe to keep in an error: bounded to [`MAX_MESSAGE_CHARS`] and
/// terminal-escaped (one line), so printing an error can never reach a terminal raw.
pub(crate) fn bounded(message: &str) -> String {
    let mut s: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    if message.chars().nth(MAX_MESSAGE_CHARS).is_some() {
        s.push('…');
    }
    aibuddy_common::term::line(&s).into_owned()
}

impl ProviderError {
    pub fn stage(&self) -> Stage {
        match self {
            ProviderError::Config(_) | ProviderError::Request(_) => Stage::Parameters,
            ProviderError::MissingKey { .. } | ProviderError::KeyStore(_) => Stage::Authorization,
            ProviderError::Http { status, .. } => match status {
                401 | 403 => Stage::Authorization,
                400 | 404 | 409 | 413 | 422 => Stage::Parameters,
                _ => Stage::Execution,
            },
            ProviderError::Stream { .. }
            | ProviderError::Transport { .. }
            | ProviderError::Cancelled => Stage::Execution,
            ProviderError::Protocol(_) => Stage::Projection,
        }
    }

    /// 429, 5xx (and Anthropic's 529), `overloaded_error`/`rate_limit_error`/`api_error` stream
    /// events, and connection failures are worth retrying; other 4xx and everything else are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http {
                status, error_type, ..
            } => {
                *status == 408
                    || *status == 429
                    || *status >= 500
                    || error_type.as_deref().is_some_and(retryable_type)
            }
            ProviderError::Stream { error_type, .. } => retryable_type(error_type),
            ProviderError::Transport { .. } => true,
            _ => false,
        }
    }

    /// The provider's `retry-after`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn from_reqwest(e: &reqwest::Error) -> Self {
        let kind = if e.is_timeout() {
            TransportKind::Timeout
        } else if e.is_connect() {
            TransportKind::Connect
        } else if e.is_body() || e.is_decode() {
            TransportKind::Body
        } else {
            TransportKind::Other
        };
        ProviderError::Transport { kind }
    }
}

fn retryable_type(t: &str) -> bool {
    // A numeric code in a stream error (OpenRouter: `{"error":{"code":502,...}}`) is an HTTP status.
    if let Ok(status) = t.parse::<u16>() {
        return status == 408 || status == 429 || status >= 500;
    }
    matches!(
        t,
        "overloaded_error"
            | "rate_limit_error"
            | "api_error"
            | "server_error"
            | "rate_limit_exceeded"
            | "overloaded"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_text_is_bounded_and_terminal_safe() {
        let evil = "bad\x1b]0;pwned\x07\nnext";
        let b = bounded(evil);
        assert!(!b.contains('\x1b') && !b.contains('\n'), "{b:?}");
        let long = "x".repeat(MAX_MESSAGE_CHARS + 10);
        assert_eq!(bounded(&long).chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(bounded("fine"), "fine");
    }
}
