//! The environment policy as a pure decision: which variables reach the child.
//!
//! A name looks secret when (compared case-insensitively, words being the `_`-, `-`- or
//! `.`-separated parts of the name):
//! - it contains one of [`SECRET_MARKERS`] anywhere (`GITHUB_TOKEN`, `db_password`, `MONKEY`);
//! - one of its words matches a [`WORD_MARKERS`] entry: short markers match whole words (or a
//!   word's start or end where the entry says so), never substrings, so `PATH` survives while
//!   `GH_PAT` does not, and `GIT_AUTHOR_NAME` survives while `HF_AUTH` does not;
//!
//! and it is not one of [`NEVER_SECRET`] (`PWD`, `OLDPWD`, the `XDG_SESSION_*` descriptions).
//! A value that carries URL credentials (`scheme://user:pass@host`, `redis://:pass@host`) is
//! dropped whatever its name.

use std::ffi::OsString;

use crate::request::EnvPolicy;

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
pub const WORD_MARKERS: [WordMarker; 9] = [
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

/// The decision for one variable, with the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvDecision {
    DropAlways,
    DropExcluded,
    KeepIncluded,
    DropSecretLooking,
    /// The value carries URL credentials (`scheme://user:pass@`).
    DropUrlCredentials,
    Keep,
}

impl EnvDecision {
    pub fn keeps(self) -> bool {
        matches!(self, EnvDecision::KeepIncluded | EnvDecision::Keep)
    }
}

/// Decides one name; precedence: always_drop > exclude > include > secret-looking > keep.
pub fn decide(name: &str, policy: &EnvPolicy) -> EnvDecision {
    if policy.always_drop.iter().any(|n| n == name) {
        EnvDecision::DropAlways
    } else if policy.exclude.iter().any(|n| n == name) {
        EnvDecision::DropExcluded
    } else if policy.include.iter().any(|n| n == name) {
        EnvDecision::KeepIncluded
    } else if looks_secret(name) {
        EnvDecision::DropSecretLooking
    } else {
        EnvDecision::Keep
    }
}

/// Decides one variable: [`decide`] on the name, then a value carrying URL credentials is
/// dropped unless the name was included.
pub fn decide_var(name: &str, value: &[u8], policy: &EnvPolicy) -> EnvDecision {
    match decide(name, policy) {
        EnvDecision::Keep if has_url_credentials(value) => EnvDecision::DropUrlCredentials,
        d => d,
    }
}

/// Whether `name` looks like it holds a secret (see the module documentation).
pub fn looks_secret(name: &str) -> bool {
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

/// Splits `vars` into the kept pairs and the sorted, deduplicated names dropped.
/// Non-UTF-8 names are judged on their lossy form; `TMPDIR` and `policy.set` are applied by the runner.
pub fn filter_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    policy: &EnvPolicy,
) -> (Vec<(OsString, OsString)>, Vec<String>) {
    use std::os::unix::ffi::OsStrExt;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (name, value) in vars {
        let lossy = name.to_string_lossy().into_owned();
        if decide_var(&lossy, value.as_bytes(), policy).keeps() {
            kept.push((name, value));
        } else {
            dropped.push(lossy);
        }
    }
    dropped.sort();
    dropped.dedup();
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> EnvPolicy {
        EnvPolicy {
            include: vec![
                "GIT_TOKEN_HELPER".into(),
                "OPENAI_API_KEY".into(),
                "EDITOR".into(),
                "MY_PROXY".into(),
                "GH_PAT".into(),
            ],
            exclude: vec!["EDITOR".into(), "AWS_PROFILE".into()],
            always_drop: vec!["OPENAI_API_KEY".into()],
            set: vec![],
        }
    }

    #[test]
    fn precedence_table() {
        let p = policy();
        let table = [
            ("PATH", EnvDecision::Keep),
            ("HOME", EnvDecision::Keep),
            ("OPENAI_API_KEY", EnvDecision::DropAlways),
            ("EDITOR", EnvDecision::DropExcluded),
            ("AWS_PROFILE", EnvDecision::DropExcluded),
            ("GIT_TOKEN_HELPER", EnvDecision::KeepIncluded),
            ("GH_PAT", EnvDecision::KeepIncluded),
            ("GITHUB_TOKEN", EnvDecision::DropSecretLooking),
            ("db_password", EnvDecision::DropSecretLooking),
            ("MySecret", EnvDecision::DropSecretLooking),
            ("ssh_auth_key_file", EnvDecision::DropSecretLooking),
            ("MONKEY", EnvDecision::DropSecretLooking),
            ("TOKE", EnvDecision::Keep),
        ];
        for (name, want) in table {
            assert_eq!(decide(name, &p), want, "{name}");
        }
    }

    /// The names of the 2026-12-01 report, and the everyday names that must survive.
    #[test]
    fn secret_names_drop_and_everyday_names_survive() {
        let p = EnvPolicy::default();
        for name in [
            "MYSQL_PWD",
            "PGPASS",
            "PGPASSWORD",
            "GH_PAT",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "NPM_CONFIG__AUTH",
            "npm_config__auth",
            "DOCKER_AUTH_CONFIG",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "HF_AUTH",
            "SSH_AUTH_SOCK",
            "OAUTH_CLIENT",
            "AWS_CREDS",
            "GOOGLE_CREDENTIALS",
            "SESSION_ID",
            "DBUS_SESSION_BUS_ADDRESS",
            "HTTP_COOKIE",
            "COOKIEJAR",
            "REDIS_PASS",
            "PASSPHRASE",
            "GIT_PRIVATE",
        ] {
            assert_eq!(decide(name, &p), EnvDecision::DropSecretLooking, "{name}");
        }
        for name in [
            "PATH",
            "PWD",
            "OLDPWD",
            "HOME",
            "LANG",
            "LC_ALL",
            "TERM",
            "SHELL",
            "USER",
            "LOGNAME",
            "EDITOR",
            "TZ",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
            "XDG_RUNTIME_DIR",
            "XDG_SESSION_TYPE",
            "XDG_SESSION_ID",
            "XDG_SESSION_CLASS",
            "XDG_SESSION_DESKTOP",
            "XDG_CURRENT_DESKTOP",
            "DESKTOP_SESSION",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "CARGO_HOME",
            "RUSTUP_HOME",
            "PYTHONPATH",
            "LD_LIBRARY_PATH",
            "MANPATH",
            "PATHEXT",
            "DATABASE_URL", // judged by its value, see below
            "CI",
            "PAGER",
            "COLORTERM",
        ] {
            assert_eq!(decide(name, &p), EnvDecision::Keep, "{name}");
        }
    }

    #[test]
    fn url_credentials_in_values_drop_the_variable_unless_included() {
        let p = policy();
        let table: [(&str, &str, EnvDecision); 11] = [
            (
                "DATABASE_URL",
                "postgres://app:hunter2@db:5432/x",
                EnvDecision::DropUrlCredentials,
            ),
            (
                "REDIS_URL",
                "redis://:hunter2@cache:6379",
                EnvDecision::DropUrlCredentials,
            ),
            (
                "UPSTREAMS",
                "http://a, https://u:p@b.example/",
                EnvDecision::DropUrlCredentials,
            ),
            (
                "MY_PROXY",
                "http://u:p@proxy:3128",
                EnvDecision::KeepIncluded,
            ),
            ("HTTP_PROXY", "http://proxy:3128", EnvDecision::Keep),
            ("REPO", "ssh://git@github.com/x/y", EnvDecision::Keep),
            ("URLISH", "https://host/a:b@c", EnvDecision::Keep),
            ("NOSCHEME", "://u:p@host", EnvDecision::Keep),
            ("FTP_URL", "ftp://u:@host", EnvDecision::Keep),
            ("MAILTO", "user@example.com", EnvDecision::Keep),
            ("PATH", "/usr/bin:/bin", EnvDecision::Keep),
        ];
        for (name, value, want) in table {
            assert_eq!(
                decide_var(name, value.as_bytes(), &p),
                want,
                "{name}={value}"
            );
        }
    }

    #[test]
    fn filter_reports_sorted_dropped_names() {
        let vars = [
            ("PATH", "/bin"),
            ("Z_TOKEN", "z"),
            ("A_SECRET", "a"),
            ("LANG", "C"),
            ("DATABASE_URL", "mysql://root:pw@localhost/db"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let (kept, dropped) = filter_env(vars, &EnvPolicy::default());
        assert_eq!(
            dropped,
            vec![
                "A_SECRET".to_string(),
                "DATABASE_URL".to_string(),
                "Z_TOKEN".to_string()
            ]
        );
        assert_eq!(
            kept,
            vec![
                (OsString::from("PATH"), OsString::from("/bin")),
                (OsString::from("LANG"), OsString::from("C"))
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_names_do_not_panic() {
        use std::os::unix::ffi::OsStringExt;
        let name = OsString::from_vec(b"BAD\xffKEY".to_vec());
        let (kept, dropped) = filter_env([(name, OsString::from("v"))], &EnvPolicy::default());
        assert!(kept.is_empty());
        assert_eq!(dropped.len(), 1);
        let value = OsString::from_vec(b"x://u:\xff@h".to_vec());
        let (kept, _) = filter_env([(OsString::from("V"), value)], &EnvPolicy::default());
        assert!(kept.is_empty());
    }
}
