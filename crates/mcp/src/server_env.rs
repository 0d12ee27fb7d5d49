//! The environment of a stdio server: what the official MCP SDKs give a server by default, plus
//! what its config's `env` names. Nothing else of the client's environment (API keys, tokens,
//! cloud credentials) reaches a server the person did not hand it to. Pure.
//!
//! The default set is the SDKs' `DEFAULT_INHERITED_ENV_VARS` for POSIX (TypeScript
//! `getDefaultEnvironment`, Python `get_default_environment`), a list inspired by sudo's:
//! `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`; plus the locale (`LANG`, `LC_ALL`, `LC_*`)
//! so servers print and parse text the way the person's terminal does. Like the TypeScript SDK,
//! a value starting with `()` (an exported shell function) is not passed on.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Variables every stdio server inherits from the client when they are set.
pub const DEFAULT_INHERITED_ENV_VARS: [&str; 6] =
    ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Whether a variable of the client's environment is passed to servers by default.
pub fn is_inherited(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    DEFAULT_INHERITED_ENV_VARS.contains(&name) || name == "LANG" || name.starts_with("LC_")
}

/// The complete environment of a server: the inherited defaults found in `parent`, then every
/// `configured` entry (which wins over an inherited one of the same name). Sorted by name.
pub fn server_environment(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &BTreeMap<String, String>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = parent
        .into_iter()
        .filter(|(name, value)| is_inherited(name) && !value.as_encoded_bytes().starts_with(b"()"))
        .collect();
    for (name, value) in configured {
        env.insert(OsString::from(name), OsString::from(value));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_sdk_defaults_and_the_locale_are_inherited() {
        let parent = os(&[
            ("HOME", "/home/u"),
            ("PATH", "/usr/bin"),
            ("USER", "u"),
            ("LOGNAME", "u"),
            ("SHELL", "/bin/sh"),
            ("TERM", "xterm"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("LC_TIME", "de_DE.UTF-8"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("SECRET_TOKEN", "s3cr3t"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("LD_PRELOAD", "/evil.so"),
            ("PATHOLOGICAL", "x"),
        ]);
        let env = server_environment(parent, &BTreeMap::new());
        let names: Vec<&str> = env.keys().map(|k| k.to_str().unwrap()).collect();
        assert_eq!(
            names,
            vec![
                "HOME", "LANG", "LC_ALL", "LC_TIME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"
            ]
        );
    }

    #[test]
    fn configured_entries_are_added_and_win() {
        let parent = os(&[("PATH", "/usr/bin"), ("GITHUB_TOKEN", "from-parent")]);
        let configured = BTreeMap::from([
            ("GITHUB_TOKEN".to_string(), "from-config".to_string()),
            ("PATH".to_string(), "/opt/bin".to_string()),
        ]);
        let env = server_environment(parent, &configured);
        assert_eq!(env[OsStr::new("GITHUB_TOKEN")], "from-config");
        assert_eq!(env[OsStr::new("PATH")], "/opt/bin");
        assert_eq!(env.len(), 2);
    }

    #[test]
    fn shell_functions_are_not_passed_on() {
        let env = server_environment(
            os(&[("SHELL", "() { :; }; echo pwned"), ("HOME", "/h")]),
            &BTreeMap::new(),
        );
        assert!(!env.contains_key(OsStr::new("SHELL")));
        assert!(env.contains_key(OsStr::new("HOME")));
    }
}
