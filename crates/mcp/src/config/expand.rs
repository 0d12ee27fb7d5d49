//! `${VAR}` and `${VAR:-default}` in `mcp.json` values (pure).
//!
//! The convention of Claude Code's `.mcp.json`: `${VAR}` is the person's environment variable
//! `VAR`; `${VAR:-default}` is `VAR` when it is set and not empty, else `default` (the shell's
//! `:-`). A bare `$VAR` is literal text, as in Claude Code. `$${` is a literal `${` (the
//! escape of docker compose; Claude Code has none). A default is literal text up to the first
//! `}` (no nesting). Where Claude Code passes an unset `${VAR}` on as literal text, this is a
//! problem ([`ExpandError::Unset`]): the server would get a value nobody meant. A `${` without
//! its `}` or with a name that is not `[A-Za-z_][A-Za-z0-9_]*` is a problem too, never a panic.
//!
//! One name is not the person's environment: `${AIBUDDY_PROJECT_ROOT}` ([`PROJECT_ROOT_VAR`]) is
//! the canonical root of the open project, whatever the environment says ([`with_project_root`]).
//! It is how a user-level server is handed the project (a stdio server starts in an empty
//! directory of the data dir unless its entry names a `cwd`); the core counts such an entry as
//! reaching into the project (trust-gated like a project server).
//!
//! Expanded values may be secrets: callers log and show the template, never the result.

use std::path::Path;

/// `${AIBUDDY_PROJECT_ROOT}`: the open project's root (see [`with_project_root`]).
pub const PROJECT_ROOT_VAR: &str = "AIBUDDY_PROJECT_ROOT";

/// `lookup`, except that [`PROJECT_ROOT_VAR`] is `project_root` (never the environment's value;
/// unset when the root is not UTF-8). Pure.
pub fn with_project_root<'a>(
    project_root: &'a Path,
    lookup: &'a dyn Fn(&str) -> Option<String>,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        if name == PROJECT_ROOT_VAR {
            project_root.to_str().map(str::to_owned)
        } else {
            lookup(name)
        }
    }
}

/// Where `${VAR}` values come from when an entry is parsed.
#[derive(Clone, Copy)]
pub enum Vars<'a> {
    /// Keep the templates as written (checked for syntax, variables listed): what the trust
    /// prompt shows and what its digest covers.
    Keep,
    /// Expand with this lookup ([`process_env`] in production).
    From(&'a dyn Fn(&str) -> Option<String>),
}

impl std::fmt::Debug for Vars<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Vars::Keep => "Vars::Keep",
            Vars::From(_) => "Vars::From(..)",
        })
    }
}

/// The person's environment (a value that is not UTF-8 counts as unset).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text (escapes already undone).
    Text(String),
    /// A variable reference.
    Var(VarRef),
}

/// `${name}` or `${name:-default}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    pub name: String,
    pub default: Option<String>,
}

/// Why a template cannot be expanded. Messages name variables, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${` at char `at` (0-based) has no closing `}`.
    #[error("unterminated \"${{\" at character {}: close it with \"}}\" or write \"$${{\" for a literal \"${{\"", .at + 1)]
    Unterminated { at: usize },
    /// `${...}` at char `at` does not start with a valid variable name.
    #[error("invalid variable reference at character {}: expected ${{NAME}} or ${{NAME:-default}} with NAME made of letters, digits and _", .at + 1)]
    BadName { at: usize },
    /// `${name}` without a default and `name` is not set in the environment.
    #[error(
        "environment variable {name} is not set (and no default is given: ${{{name}:-default}})"
    )]
    Unset { name: String },
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits a template into text and references. Pure.
pub fn parse(template: &str) -> Result<Vec<Piece>, ExpandError> {
    let chars: Vec<char> = template.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '$' && next == Some('$') && chars.get(i + 2) == Some(&'{') {
            text.push_str("${");
            i += 3;
            continue;
        }
        if c != '$' || next != Some('{') {
            text.push(c);
            i += 1;
            continue;
        }
        let start = i;
        let Some(close) = chars[i + 2..].iter().position(|&c| c == '}') else {
            return Err(ExpandError::Unterminated { at: start });
        };
        let inner: String = chars[i + 2..i + 2 + close].iter().collect();
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default.to_owned())),
            None => (inner.as_str(), None),
        };
        if !is_name(name) {
            return Err(ExpandError::BadName { at: start });
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Var(VarRef {
            name: name.to_owned(),
            default,
        }));
        i += 2 + close + 1;
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// The variables a template reads, in order of appearance (repeats kept). Pure.
pub fn variables(template: &str) -> Result<Vec<VarRef>, ExpandError> {
    Ok(parse(template)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(v) => Some(v),
            Piece::Text(_) => None,
        })
        .collect())
}

/// Expands a template with `lookup` (the person's environment in production). Pure. The result
/// is never a template again: a value containing `${` is copied as is (no recursion).
pub fn expand(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(template.len());
    for piece in parse(template)? {
        match piece {
            Piece::Text(t) => out.push_str(&t),
            Piece::Var(v) => match (lookup(&v.name), v.default) {
                (Some(value), Some(default)) if value.is_empty() => out.push_str(&default),
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(&default),
                (None, None) => return Err(ExpandError::Unset { name: v.name }),
            },
        }
    }
    Ok(out)
}

/// Whether a template reads at least one variable. Pure.
pub fn contains_reference(template: &str) -> bool {
    variables(template).is_ok_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/p".into()),
            "EMPTY" => Some(String::new()),
            "TRICKY" => Some("${HOME}".into()),
            _ => None,
        }
    }

    #[test]
    fn references_defaults_and_literals() {
        assert_eq!(expand("${HOME}/bin", &env).unwrap(), "/home/p/bin");
        assert_eq!(expand("${NOPE:-x}-${HOME:-y}", &env).unwrap(), "x-/home/p");
        assert_eq!(
            expand("${EMPTY:-d}", &env).unwrap(),
            "d",
            "`:-` covers empty"
        );
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("${NOPE:-}", &env).unwrap(), "");
        assert_eq!(expand("$HOME $ {} $", &env).unwrap(), "$HOME $ {} $");
        assert_eq!(expand("$${HOME}", &env).unwrap(), "${HOME}");
        assert_eq!(
            expand("$$${HOME}", &env).unwrap(),
            "$${HOME}",
            "only `$${{` is an escape"
        );
        assert_eq!(
            expand("${TRICKY}", &env).unwrap(),
            "${HOME}",
            "no recursion"
        );
        assert_eq!(expand("${NOPE:-a:-b}", &env).unwrap(), "a:-b");
        assert_eq!(expand("é${HOME}ü", &env).unwrap(), "é/home/pü");
    }

    #[test]
    fn problems_are_errors_not_panics() {
        assert_eq!(
            expand("${NOPE}", &env),
            Err(ExpandError::Unset {
                name: "NOPE".into()
            })
        );
        assert_eq!(
            expand("ab${HOME", &env),
            Err(ExpandError::Unterminated { at: 2 })
        );
        assert_eq!(expand("${}", &env), Err(ExpandError::BadName { at: 0 }));
        assert_eq!(expand("x${1A}", &env), Err(ExpandError::BadName { at: 1 }));
        assert_eq!(expand("${A B}", &env), Err(ExpandError::BadName { at: 0 }));
        assert_eq!(expand("${", &env), Err(ExpandError::Unterminated { at: 0 }));
        let message = expand("${SECRET_TOKEN}", &env).unwrap_err().to_string();
        assert!(message.contains("SECRET_TOKEN is not set"), "{message}");
    }

    #[test]
    fn the_project_root_variable_is_the_project_not_the_environment() {
        let root = std::path::PathBuf::from("/work/proj");
        let lookup = |name: &str| match name {
            PROJECT_ROOT_VAR => Some("/elsewhere".to_string()),
            other => env(other),
        };
        let with = with_project_root(&root, &lookup);
        assert_eq!(
            expand("--repository=${AIBUDDY_PROJECT_ROOT}", &with).unwrap(),
            "--repository=/work/proj"
        );
        assert_eq!(expand("${HOME}", &with).unwrap(), "/home/p");
    }

    #[test]
    fn variables_are_listed_in_order() {
        let vars = variables("${A}:${B:-x}:$${C}:${A}").unwrap();
        let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, vec!["A", "B", "A"]);
        assert_eq!(vars[1].default.as_deref(), Some("x"));
        assert!(contains_reference("x${A}"));
        assert!(!contains_reference("$${A}"));
    }
}
