//! The environment policy as a pure decision: which variables reach the child.

use std::ffi::OsString;

use crate::request::EnvPolicy;

/// Substrings (compared case-insensitively) that make a name look secret.
pub const SECRET_MARKERS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// The decision for one variable name, with the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvDecision {
    DropAlways,
    DropExcluded,
    KeepIncluded,
    DropSecretLooking,
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

fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// Splits `vars` into the kept pairs and the sorted, deduplicated names dropped.
/// Non-UTF-8 names are judged on their lossy form; `TMPDIR` and `policy.set` are applied by the runner.
pub fn filter_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    policy: &EnvPolicy,
) -> (Vec<(OsString, OsString)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (name, value) in vars {
        let lossy = name.to_string_lossy().into_owned();
        if decide(&lossy, policy).keeps() {
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

    #[test]
    fn filter_reports_sorted_dropped_names() {
        let vars = [
            ("PATH", "/bin"),
            ("Z_TOKEN", "z"),
            ("A_SECRET", "a"),
            ("LANG", "C"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let (kept, dropped) = filter_env(vars, &EnvPolicy::default());
        assert_eq!(dropped, vec!["A_SECRET".to_string(), "Z_TOKEN".to_string()]);
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
    }
}
