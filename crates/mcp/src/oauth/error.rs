//! Failures of the OAuth flows, each naming the lifecycle [`Stage`] it belongs to.
//!
//! Messages never carry tokens, secrets or authorization codes: rmcp's errors describe
//! endpoints and reasons, and the flows below never format a credential into a message.

use aibuddy_common::Stage;
use rmcp::transport::auth::AuthError;

/// An OAuth step that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// Protected-resource or authorization-server metadata could not be found or is unusable
    /// (includes a protected resource naming another resource than the server's URL).
    #[error("authorization discovery failed: {0}")]
    Discovery(#[source] AuthError),
    /// The client could not be identified to the authorization server (registration,
    /// pre-registered credentials, client ID metadata document).
    #[error("client registration failed: {0}")]
    Registration(#[source] AuthError),
    /// The person (or the browser part) did not complete the authorization.
    #[error("authorization was not completed: {0}")]
    Authorization(String),
    /// The token endpoint refused the exchange.
    #[error("token request failed: {0}")]
    Token(#[source] AuthError),
    /// The server keeps asking for more scope than granted after the retry limit.
    #[error("the server still requires scope \"{required}\" after {attempts} authorizations")]
    ScopeRetryLimit { required: String, attempts: u32 },
    /// The loopback redirect listener could not be opened or read.
    #[error("redirect listener failed: {0}")]
    Listener(#[source] std::io::Error),
    /// The token vault (OS keyring) failed.
    #[error("token store failed: {0}")]
    Store(String),
}

impl OAuthError {
    /// The stage this failure belongs to.
    pub fn stage(&self) -> Stage {
        match self {
            OAuthError::Discovery(_) => Stage::Discovery,
            OAuthError::Registration(_)
            | OAuthError::Authorization(_)
            | OAuthError::Token(_)
            | OAuthError::ScopeRetryLimit { .. } => Stage::Authorization,
            OAuthError::Listener(_) | OAuthError::Store(_) => Stage::Execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_name_where_the_flow_failed() {
        assert_eq!(
            OAuthError::Discovery(AuthError::NoAuthorizationSupport).stage(),
            Stage::Discovery
        );
        assert_eq!(
            OAuthError::ScopeRetryLimit {
                required: "a".into(),
                attempts: 3
            }
            .stage(),
            Stage::Authorization
        );
        assert_eq!(OAuthError::Store("locked".into()).stage(), Stage::Execution);
    }
}
