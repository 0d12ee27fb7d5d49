//! The environment policy as a pure decision: which variables reach the child. Which names and
//! values look secret is the one rule of `aibuddy_common::secrets` (a secret-looking name is
//! dropped unless included; a value that carries URL credentials, `scheme://user:pass@host`, is
//! dropped whatever its name).

use std::ffi::OsString;

pub use aibuddy_common::secrets::{has_url_credentials, name_looks_secret as looks_secret};

use crate::request::EnvPolicy;

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
