//! Which environment variable names and values look like secrets: one rule for every crate
//! (the command environment filter, the trust prompt's shown values, MCP server environments).
//!
//! A name looks secret when (compared case-insensitively, words being the `_`-, `-`- or
//! `.`-separated parts of the name):
//! - it contains one of [`SECRET_MARKERS`] anywhere (`GITHUB_TOKEN`, `db_password`, `MONKEY`);
//! - one of its words matches a [`WORD_MARKERS`] entry: short markers match whole words (or a
//!   word's start or end where the entry says so), never substrings, so `PATH` survives while
//!   `GH_PAT` does not, and `GIT_AUTHOR_NAME` survives while `HF_AUTH` does not;
//!
//! and it is not one of [`NEVER_SECRET`] (`PWD`, `OLDPWD`, the `XDG_SESSION_*` descriptions).
//! A value looks secret when it carries URL credentials ([`has_url_credentials`]) or looks like
//! a token ([`value_looks_like_token`]). Pure.

/// Substrings (compared case-insensitively) that make a name look secret.
pub const SECRET_MARKERS: [&str; 8] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "COOKIE",
    "WEBHOOK",
];

/// A short marker matched against the words of a name.
#[derive(Debug, Clone, Copy)]
pub struct WordMarker {
    pub marker: &'static str,
    /// Also a word that begins with the marker (`CREDS` for `CRED`).
    pub starts: bool,
    /// Also a word that ends with the marker (`PGPASS` for `PASS`).
    pub ends: bool,
    /// Words that match by start or end but are not secret (`AUTHOR`).
    pub except: &'static [&'static str],
}

const fn word(marker: &'static str, starts: bool, ends: bool) -> WordMarker {
    WordMarker {
        marker,
        starts,
        ends,
        except: &[],
    }
}

/// Short markers, matched on whole words (see the module documentation).
pub const WORD_MARKERS: [WordMarker; 10] = [
    word("PASS", true, true), // PGPASS, MYSQL_PASS, PASSPHRASE
    word("PWD", false, true), // MYSQL_PWD, DBPWD (PWD, OLDPWD: NEVER_SECRET)
    WordMarker {
        marker: "AUTH",
        starts: true,
        ends: true,
        except: &["AUTHOR", "AUTHORS"],
    }, // HF_AUTH, NPM_CONFIG__AUTH, DOCKER_AUTH_CONFIG, OAUTH, SSH_AUTH_SOCK
    word("CRED", true, false), // CREDS, AWS_CREDS
    word("JWT", true, true),  // CI_JOB_JWT
    word("DSN", false, false), // SENTRY_DSN
    word("PAT", false, false), // GH_PAT (never PATH)
    word("SESSION", true, false), // SESSION_ID, DBUS_SESSION_BUS_ADDRESS
    word("PRIVATE", false, false), // PRIVATE_KEY_FILE, GIT_PRIVATE
    word("BEARER", true, false), // BEARER, BEARER_HEADER
];

/// Names that match a marker but describe the process, not a secret: always kept.
pub const NEVER_SECRET: [&str; 7] = [
    "PWD",
    "OLDPWD",
    "XDG_SESSION_ID",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "DESKTOP_SESSION",
];

/// Whether `name` looks like it holds a secret (see the module documentation).
pub fn name_looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if NEVER_SECRET.contains(&upper.as_str()) {
        return false;
    }
    if SECRET_MARKERS.iter().any(|m| upper.contains(m)) {
        return true;
    }
    upper
        .split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .any(|w| {
            WORD_MARKERS.iter().any(|m| {
                !m.except.contains(&w)
                    && (w == m.marker
                        || (m.starts && w.starts_with(m.marker))
                        || (m.ends && w.ends_with(m.marker)))
            })
        })
}

/// Whether `value` holds a URL with a password in its user information: `scheme://user:pass@`
/// or `scheme://:pass@` (any occurrence, so lists of URLs count too).
pub fn has_url_credentials(value: &[u8]) -> bool {
    let mut rest = value;
    while let Some(at) = find(rest, b"://") {
        let scheme_ok = at > 0
            && rest[..at]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count()
                > 0;
        let after = &rest[at + 3..];
        // The authority ends at the first '/', '?', '#' or whitespace; user information is what
        // comes before its last '@'.
        let end = after
            .iter()
            .position(|b| matches!(b, b'/' | b'?' | b'#') || b.is_ascii_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..end];
        if scheme_ok
            && let Some(at_sign) = authority.iter().rposition(|b| *b == b'@')
            && let Some(colon) = authority[..at_sign].iter().position(|b| *b == b':')
            && colon + 1 < at_sign
        {
            return true;
        }
        rest = after;
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether `value` looks like a token: 16+ characters without `/`, `\\` or spaces, letters and
/// digits mixed (`sk4f8a9b2c3d4e5f6g`; never a path).
pub fn value_looks_like_token(value: &str) -> bool {
    value.chars().count() >= 16
        && !value.contains(['/', ' ', '\\'])
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
}

/// Whether a variable should stay hidden wherever it is shown: its name looks secret, or its
/// value carries URL credentials or looks like a token.
pub fn variable_looks_secret(name: &str, value: &str) -> bool {
    name_looks_secret(name)
        || has_url_credentials(value.as_bytes())
        || value_looks_like_token(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_values_and_urls() {
        assert!(variable_looks_secret("API_KEY", "x"));
        assert!(variable_looks_secret("github_token", "x"));
        assert!(variable_looks_secret("BEARER", "x"));
        assert!(variable_looks_secret("X", "sk4f8a9b2c3d4e5f6g"));
        assert!(variable_looks_secret("DB", "postgres://u:p@h/db"));
        assert!(!variable_looks_secret("HOME", "/home/person/a1b2c3d4e5f6"));
        assert!(!variable_looks_secret("MODE", "fast"));
        assert!(!variable_looks_secret("GIT_AUTHOR_NAME", "Ada"));
    }
}
