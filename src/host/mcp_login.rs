//! MCP OAuth login: which server may be logged in to, and which authorization URL may be handed
//! to a browser (pure). `aibuddy mcp login` and the window's login both ask here.

use aibuddy_mcp::{ServerConfig, Transport};

use super::HostError;
use crate::contract::Stage;

/// The URL of remote server `server` as configured now, when the person may log in to it:
/// servers of an untrusted project are Authorization errors, unknown names and local (stdio)
/// servers Parameters errors.
pub fn login_url(
    servers: &[ServerConfig],
    untrusted: &[String],
    server: &str,
) -> Result<String, HostError> {
    if untrusted.iter().any(|n| n == server) {
        return Err(HostError::new(
            Stage::Authorization,
            format!(
                "server `{server}` comes from this project's mcp.json, which you have not trusted: trust the project first (`aibuddy trust`)"
            ),
        ));
    }
    let Some(config) = servers.iter().find(|s| s.name == server) else {
        return Err(HostError::new(
            Stage::Parameters,
            format!("no MCP server named `{server}`"),
        ));
    };
    match &config.transport {
        Transport::Http { url, .. } | Transport::Sse { url, .. } => Ok(url.clone()),
        _ => Err(HostError::new(
            Stage::Parameters,
            format!(
                "server `{server}` is a local (stdio) server: it takes its credentials from its env, not OAuth"
            ),
        )),
    }
}

/// Whether `url` may be handed to the browser (opened or printed for the person to open):
/// `https`, or `http` on a loopback host (a local authorization server). Anything else (`file:`,
/// `javascript:`, custom schemes that start other programs) comes from a server's untrusted
/// metadata and is refused.
pub fn browser_url_allowed(url: &str) -> Result<(), String> {
    let parsed =
        url::Url::parse(url).map_err(|_| "the authorization URL is not a URL".to_owned())?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let host = parsed.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(())
            } else {
                Err("the authorization URL is plain http to another machine: refused".into())
            }
        }
        other => Err(format!(
            "the authorization URL has scheme `{}`: only https is opened",
            other.chars().take(16).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_reaches_the_browser() {
        assert!(browser_url_allowed("https://auth.example/authorize?x=1").is_ok());
        assert!(browser_url_allowed("http://127.0.0.1:4000/authorize").is_ok());
        assert!(browser_url_allowed("http://localhost:4000/authorize").is_ok());
        assert!(browser_url_allowed("http://[::1]:4000/authorize").is_ok());
        for bad in [
            "http://auth.example/authorize",
            "http://10.0.0.1/authorize",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "vscode://x/y",
            "not a url",
        ] {
            assert!(browser_url_allowed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn untrusted_unknown_and_local_servers_are_refused_remote_ones_log_in() {
        let mut legacy = ServerConfig::http("legacy", "https://old.example/sse");
        legacy.transport = Transport::Sse {
            url: "https://old.example/sse".into(),
            headers: Default::default(),
        };
        let servers = vec![
            ServerConfig::http("remote", "https://mcp.example/mcp"),
            ServerConfig::stdio("local", "/bin/true", Vec::new()),
            legacy,
        ];
        let untrusted = vec!["proj".to_owned()];
        assert_eq!(
            login_url(&servers, &untrusted, "remote").unwrap(),
            "https://mcp.example/mcp"
        );
        assert_eq!(
            login_url(&servers, &untrusted, "legacy").unwrap(),
            "https://old.example/sse"
        );
        let e = login_url(&servers, &untrusted, "proj").unwrap_err();
        assert_eq!(e.stage, Stage::Authorization);
        assert!(e.message.contains("not trusted"), "{}", e.message);
        let e = login_url(&servers, &untrusted, "local").unwrap_err();
        assert_eq!(e.stage, Stage::Parameters);
        assert_eq!(
            login_url(&servers, &untrusted, "nope").unwrap_err().stage,
            Stage::Parameters
        );
    }
}
