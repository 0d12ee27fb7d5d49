//! The bearer-token side both HTTP transports share with the authorization (`oauth`): the client
//! that carries a server's token, and the scope a `WWW-Authenticate` challenge names. Below
//! `oauth` and `sse`: the legacy SSE client sends tokens, and `oauth`'s login probes through it.

use rmcp::transport::auth::{AuthClient, WWWAuthenticateParams};

/// The HTTP client that carries MCP requests with the server's token.
pub type AuthorizedClient = AuthClient<reqwest::Client>;

/// The `scope` parameter of a `WWW-Authenticate: Bearer` header.
pub fn scope_of(www_authenticate: &str) -> Option<String> {
    let base = url::Url::parse("http://localhost/").ok()?;
    WWWAuthenticateParams::parse(www_authenticate, &base)
        .scope
        .filter(|s| !s.trim().is_empty())
}
