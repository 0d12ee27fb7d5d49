//! Pure reading of an authorization challenge out of a failed MCP request: rmcp reports a 401
//! (`AuthRequiredError`) or a 403 (`InsufficientScopeError`) deep in an error's source chain.

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

/// What the server asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// 401: no token or an invalid one; authorize (the header seeds discovery and scope).
    Unauthorized { www_authenticate: String },
    /// 403 `insufficient_scope`: step up to the scope named (when named).
    InsufficientScope {
        www_authenticate: String,
        scope: Option<String>,
    },
}

impl Challenge {
    /// The `WWW-Authenticate` header value the server sent.
    pub fn header(&self) -> &str {
        match self {
            Challenge::Unauthorized { www_authenticate }
            | Challenge::InsufficientScope {
                www_authenticate, ..
            } => www_authenticate,
        }
    }
}

/// The challenge anywhere in `error`'s source chain, if the failure was one.
pub fn find_challenge(error: &(dyn std::error::Error + 'static)) -> Option<Challenge> {
    let mut current = Some(error);
    while let Some(e) = current {
        // rmcp's initialize error keeps the transport error out of its source chain.
        if let Some(init) = e.downcast_ref::<ClientInitializeError>() {
            return match init {
                ClientInitializeError::TransportError { error, .. } => find_challenge(error),
                ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
                    find_challenge(fallback.as_ref())
                }
                _ => None,
            };
        }
        if let Some(a) = e.downcast_ref::<AuthRequiredError>() {
            return Some(Challenge::Unauthorized {
                www_authenticate: a.www_authenticate_header.clone(),
            });
        }
        if let Some(s) = e.downcast_ref::<InsufficientScopeError>() {
            return Some(Challenge::InsufficientScope {
                www_authenticate: s.www_authenticate_header.clone(),
                scope: s
                    .required_scope
                    .clone()
                    .or_else(|| scope_of(&s.www_authenticate_header)),
            });
        }
        current = e.source();
    }
    None
}

pub use crate::bearer::scope_of;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Box<dyn std::error::Error + Send + Sync>);

    #[test]
    fn a_401_deep_in_the_chain_is_found() {
        let inner = AuthRequiredError::new("Bearer resource_metadata=\"http://x/prm\"".into());
        let err = Outer(Box::new(Outer(Box::new(inner))));
        assert_eq!(
            find_challenge(&err),
            Some(Challenge::Unauthorized {
                www_authenticate: "Bearer resource_metadata=\"http://x/prm\"".into()
            })
        );
    }

    #[test]
    fn a_403_names_its_scope_from_the_header_when_rmcp_did_not() {
        let header = "Bearer error=\"insufficient_scope\", scope=\"mcp:basic mcp:write\"";
        let err = Outer(Box::new(InsufficientScopeError::new(header.into(), None)));
        match find_challenge(&err) {
            Some(Challenge::InsufficientScope { scope, .. }) => {
                assert_eq!(scope.as_deref(), Some("mcp:basic mcp:write"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn other_failures_are_no_challenge() {
        let err = Outer(Box::new(std::io::Error::other("refused")));
        assert_eq!(find_challenge(&err), None);
        assert_eq!(scope_of("Bearer realm=\"x\""), None);
    }
}
