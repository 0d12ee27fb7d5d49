//! The environment a container command gets (pure): the image's own, plus the variables of this
//! machine that the person named in `exec.env_include` (the local path's one rule,
//! `aibuddy_exec::env_decide_var`: kept as included, so never one the app always drops or one
//! `exec.env_exclude` names) and the request's `set` variables. Nothing else of this machine's
//! environment is passed: its `PATH`, `HOME` and the rest describe this machine, not the image,
//! and whatever looks secret stays out unless included.

use std::ffi::OsString;

use aibuddy_sandbox::aibuddy_exec::{EnvDecision, EnvPolicy, env_decide_var as decide_var};

/// `NAME=value` entries for the exec (names with `=` or a NUL and values with a NUL, which
/// cannot be passed, are left out, as are names and values that are not UTF-8).
pub fn passed_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    policy: &EnvPolicy,
) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let ok = |n: &str, v: &str| !n.is_empty() && !n.contains(['=', '\0']) && !v.contains('\0');
    let mut out: Vec<String> = vars
        .into_iter()
        .filter(|(n, v)| {
            decide_var(&n.to_string_lossy(), v.as_bytes(), policy) == EnvDecision::KeepIncluded
        })
        .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(n, v)| ok(n, v))
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    out.extend(
        policy
            .set
            .iter()
            .filter(|(n, v)| ok(n, v))
            .map(|(n, v)| format!("{n}={v}")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_included_variables_and_set_ones_pass() {
        let policy = EnvPolicy {
            include: vec!["GH_TOKEN".into(), "EDITOR".into(), "OPENAI_API_KEY".into()],
            exclude: vec!["EDITOR".into()],
            always_drop: vec!["OPENAI_API_KEY".into()],
            set: vec![
                ("LANG".into(), "C.UTF-8".into()),
                ("BAD=NAME".into(), "x".into()),
            ],
        };
        let vars = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/p"),
            ("GH_TOKEN", "ghp_1"),
            ("EDITOR", "vim"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "ghp_2"),
        ]
        .map(|(n, v)| (OsString::from(n), OsString::from(v)));
        assert_eq!(
            passed_env(vars, &policy),
            vec!["GH_TOKEN=ghp_1", "LANG=C.UTF-8"]
        );
    }
}
