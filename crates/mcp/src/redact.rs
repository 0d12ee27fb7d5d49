//! Keeps configured values out of what the client prints and reports about a server.
//!
//! A server's `env` values, HTTP header values, long arguments and the secret parts of its URL
//! (user info, query values) are configuration the person wrote, and often tokens. Failure
//! reasons, log lines, stderr tails and error messages name the server, its command and the
//! *names* of variables, never those values: any text about a server passes through
//! [`Redactor::apply`] before it is logged, stored in a status or returned in an error. Pure.

use crate::config::{ServerConfig, Transport};

/// What replaces a configured value.
pub const REDACTED: &str = "[redacted]";
/// Shorter env/header values are not secrets worth hiding (`"1"`, `"true"`) and would mangle text.
const MIN_VALUE_CHARS: usize = 4;
/// Arguments are redacted from this length on (`stdio`, `-y`, `.` stay readable).
const MIN_ARG_CHARS: usize = 8;

/// The configured values of one server, to be cut out of any text about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so a value containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// The values of `config` worth hiding.
    pub fn for_config(config: &ServerConfig) -> Self {
        let mut secrets = Vec::new();
        match &config.transport {
            Transport::Stdio { args, env, .. } => {
                secrets.extend(env.values().filter(|v| long(v, MIN_VALUE_CHARS)).cloned());
                secrets.extend(args.iter().filter(|a| long(a, MIN_ARG_CHARS)).cloned());
                // `--token=abc...`: the value part alone may be quoted by the server.
                secrets.extend(
                    args.iter()
                        .filter_map(|a| a.split_once('=').map(|(_, v)| v))
                        .filter(|v| long(v, MIN_VALUE_CHARS))
                        .map(str::to_owned),
                );
            }
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                secrets.extend(
                    headers
                        .values()
                        .filter(|v| long(v, MIN_VALUE_CHARS))
                        .cloned(),
                );
                // `Bearer <token>`: the token alone may be quoted too.
                secrets.extend(
                    headers
                        .values()
                        .filter_map(|v| v.split_once(' ').map(|(_, t)| t.trim()))
                        .filter(|v| long(v, MIN_VALUE_CHARS))
                        .map(str::to_owned),
                );
                secrets.extend(url_secrets(url));
            }
        }
        // Whatever `${VAR}`s expanded to, wherever it ended up (a command path, a URL path).
        secrets.extend(config.expanded_values.iter().cloned());
        Self::new(secrets)
    }

    /// A redactor for explicit values (empty and very short ones are ignored).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|v| long(v, MIN_VALUE_CHARS))
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every configured value replaced by [`REDACTED`].
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }
}

fn long(value: &str, min: usize) -> bool {
    value.trim().chars().count() >= min
}

/// The user info and the query values of a URL (`https://user:pw@host/p?key=abc`). Pure.
fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        out.push(userinfo.to_owned());
        if let Some((_, password)) = userinfo.split_once(':') {
            out.push(password.to_owned());
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        out.push(query.to_owned());
        for pair in query.split('&') {
            if let Some((_, value)) = pair.split_once('=') {
                out.push(value.to_owned());
            }
        }
    }
    out.retain(|v| long(v, MIN_VALUE_CHARS));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_long_args_and_assignments_are_cut() {
        let mut config = ServerConfig::stdio(
            "s",
            "srv",
            vec![
                "stdio".into(),
                "--api-key=sk-ARGSECRET".into(),
                "tok-positional-123".into(),
            ],
        );
        if let Transport::Stdio { env, .. } = &mut config.transport {
            env.insert("TOKEN".into(), "ghp_ENVSECRET".into());
            env.insert("DEBUG".into(), "1".into());
        }
        let r = Redactor::for_config(&config);
        let text =
            "stdio started; token ghp_ENVSECRET; key sk-ARGSECRET; tok-positional-123; DEBUG=1";
        assert_eq!(
            r.apply(text),
            "stdio started; token [redacted]; key [redacted]; [redacted]; DEBUG=1"
        );
    }

    #[test]
    fn header_values_bearer_tokens_and_url_secrets_are_cut() {
        let mut config = ServerConfig::http(
            "h",
            "https://user:pa55word@example.com/mcp?key=QUERYSECRET&x=1",
        );
        if let Transport::Http { headers, .. } = &mut config.transport {
            headers.insert("Authorization".into(), "Bearer HEADERTOKEN".into());
        }
        let r = Redactor::for_config(&config);
        let out = r.apply(
            "error sending request for url (https://user:pa55word@example.com/mcp?key=QUERYSECRET&x=1): \
             auth HEADERTOKEN",
        );
        assert!(!out.contains("pa55word"), "{out}");
        assert!(!out.contains("QUERYSECRET"), "{out}");
        assert!(!out.contains("HEADERTOKEN"), "{out}");
        assert!(out.contains("example.com/mcp"), "{out}");
    }

    #[test]
    fn longer_values_win_and_short_ones_stay() {
        let r = Redactor::new(["abcd".to_string(), "abcdefgh".to_string(), "x".to_string()]);
        assert_eq!(r.apply("abcdefgh abcd x"), "[redacted] [redacted] x");
        assert_eq!(Redactor::default().apply("plain"), "plain");
    }

    #[test]
    fn expanded_variable_values_are_cut_wherever_they_landed() {
        let mut config = ServerConfig::http("h", "https://example.com/tok-PATHSECRET/mcp");
        config.expanded_values = vec!["tok-PATHSECRET".into(), "ab".into()];
        let r = Redactor::for_config(&config);
        let out = r.apply("cannot reach https://example.com/tok-PATHSECRET/mcp (ab)");
        assert_eq!(out, "cannot reach https://example.com/[redacted]/mcp (ab)");
    }
}
