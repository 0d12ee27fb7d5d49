//! `"sandbox"` of a stdio entry: the server runs under the confinement of commands (namespaces,
//! Landlock, the credential hide list, the syscall filter, protected paths), with its own
//! writable roots and network. Pure: the shape and its checks; starting it is `crate::stdio`
//! with `aibuddy_exec::spawn_server`.
//!
//! ```json
//! "sandbox": true
//! "sandbox": {"writable_roots": ["${AIBUDDY_PROJECT_ROOT}", "~/.cache/foo"],
//!             "network": false | true | {"allow": ["api.example.com"], "deny": []}}
//! ```
//!
//! - `true` (or `{}`): the defaults: nothing writable but the server's private `TMPDIR`, the rest
//!   of the system (the project included) readable except the hidden credentials and data dirs,
//!   no network at all.
//! - `false`: no sandbox (as if the member were absent).
//! - `writable_roots`: absolute paths, `~/...`, or `${VAR}` templates (`${AIBUDDY_PROJECT_ROOT}`
//!   for the open project), resolved through symbolic links when the server starts (a missing one
//!   is skipped with a log line). Protected paths inside them
//!   (`.git/config`, `.git/hooks`, `.aibuddy`, ...) stay read-only, as for commands.
//! - `network`: `false` (default, no egress), `true` (the default registries of `exec.network:
//!   true`), or `{"allow": [...], "deny": [...]}` in `exec.network`'s entry syntax (host,
//!   `*.suffix`, `*`, IP, optional `:port`; deny wins). A host on no list is refused: a server
//!   never asks the person.

use aibuddy_common::located::{FieldPath, PathSegment};
use aibuddy_exec::netproxy::{Entry, Policy};
use serde::Serialize;
use serde_json::Value;

/// A stdio server's `"sandbox"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SandboxConfig {
    /// As written (`${VAR}`s expanded when the entry was parsed with the environment; `~/` is
    /// resolved against the person's home when the server starts).
    pub writable_roots: Vec<String>,
    pub network: SandboxNetwork,
}

/// Where a sandboxed server may connect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum SandboxNetwork {
    /// No egress at all (the default).
    #[default]
    Off,
    /// `true`: the default registries (`exec.network: true`).
    Registries,
    /// The allow-list proxy with these lists.
    Lists {
        allow: Vec<String>,
        deny: Vec<String>,
    },
}

impl SandboxNetwork {
    /// Whether the server gets a proxy at all.
    pub fn is_on(&self) -> bool {
        !matches!(self, SandboxNetwork::Off)
    }

    /// The proxy's lists (entries were checked when parsed).
    pub fn policy(&self) -> Option<Policy> {
        match self {
            SandboxNetwork::Off => None,
            SandboxNetwork::Registries => Some(Policy::default_registries()),
            SandboxNetwork::Lists { allow, deny } => Some(Policy::from_lists(allow, deny).0),
        }
    }

    /// Short text for a status line: `off`, `default registries`, `allow: a, b; deny: c`.
    pub fn describe(&self) -> String {
        match self.policy() {
            None => "off".into(),
            Some(_) if matches!(self, SandboxNetwork::Registries) => "default registries".into(),
            Some(p) => p.describe(),
        }
    }
}

/// A problem in `"sandbox"`: the field path below the entry and what is wrong.
pub(crate) type Problem = (FieldPath, String);

fn at(path: &[&str]) -> FieldPath {
    let mut p = FieldPath::default();
    for key in path {
        p = p.child(key);
    }
    p
}

fn indexed(path: &[&str], i: usize) -> FieldPath {
    let mut p = at(path);
    p.0.push(PathSegment::Index(i));
    p
}

fn strings(value: &Value, path: &[&str], what: &str) -> Result<Vec<String>, Problem> {
    let Some(items) = value.as_array() else {
        return Err((at(path), format!("expected an array of {what}")));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) if !s.trim().is_empty() => out.push(s.to_owned()),
            Some(_) => return Err((indexed(path, i), "must not be empty".into())),
            None => return Err((indexed(path, i), format!("expected {what}"))),
        }
    }
    Ok(out)
}

fn network(value: &Value) -> Result<SandboxNetwork, Problem> {
    let path = ["sandbox", "network"];
    match value {
        Value::Bool(false) | Value::Null => Ok(SandboxNetwork::Off),
        Value::Bool(true) => Ok(SandboxNetwork::Registries),
        Value::Object(map) => {
            if let Some(k) = map.keys().find(|k| *k != "allow" && *k != "deny") {
                return Err((
                    at(&["sandbox", "network", k]),
                    "unknown member (expected \"allow\" or \"deny\")".into(),
                ));
            }
            let mut lists = [Vec::new(), Vec::new()];
            for (slot, key) in lists.iter_mut().zip(["allow", "deny"]) {
                let Some(v) = map.get(key) else { continue };
                let list_path = ["sandbox", "network", key];
                *slot = strings(v, &list_path, "network entries")?;
                for (i, entry) in slot.iter().enumerate() {
                    if let Err(e) = Entry::parse(entry) {
                        return Err((indexed(&list_path, i), e.0));
                    }
                }
            }
            let [allow, deny] = lists;
            Ok(SandboxNetwork::Lists { allow, deny })
        }
        _ => Err((
            at(&path),
            "expected a boolean or an object with \"allow\" and/or \"deny\"".into(),
        )),
    }
}

/// Reads `"sandbox"` (pure): `None` for `false`/`null`. `writable_roots` stay templates here
/// (the caller expands their `${VAR}`s).
pub(crate) fn parse(value: &Value) -> Result<Option<SandboxConfig>, Problem> {
    match value {
        Value::Bool(false) | Value::Null => Ok(None),
        Value::Bool(true) => Ok(Some(SandboxConfig::default())),
        Value::Object(map) => {
            if let Some(k) = map
                .keys()
                .find(|k| *k != "writable_roots" && *k != "network")
            {
                return Err((
                    at(&["sandbox", k]),
                    "unknown member (expected \"writable_roots\" or \"network\")".into(),
                ));
            }
            let writable_roots = match map.get("writable_roots") {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => strings(v, &["sandbox", "writable_roots"], "paths")?,
            };
            let network = match map.get("network") {
                None => SandboxNetwork::Off,
                Some(v) => network(v)?,
            };
            Ok(Some(SandboxConfig {
                writable_roots,
                network,
            }))
        }
        _ => Err((
            at(&["sandbox"]),
            "expected a boolean or an object with \"writable_roots\" and/or \"network\"".into(),
        )),
    }
}

/// A writable root once its variables are expanded: absolute, or `~` / `~/...`. Pure.
pub(crate) fn check_root(root: &str) -> Result<(), String> {
    if root == "~" || root.starts_with("~/") || std::path::Path::new(root).is_absolute() {
        Ok(())
    } else {
        Err("expected an absolute path, `~/...` or `${AIBUDDY_PROJECT_ROOT}`".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_parse_and_problems_name_their_field() {
        assert_eq!(parse(&json!(false)).unwrap(), None);
        assert_eq!(parse(&json!(true)).unwrap(), Some(SandboxConfig::default()));
        let full = parse(&json!({
            "writable_roots": ["${AIBUDDY_PROJECT_ROOT}", "~/.cache/x"],
            "network": {"allow": ["*.example.com:443"], "deny": ["bad.example.com"]}
        }))
        .unwrap()
        .unwrap();
        assert_eq!(full.writable_roots.len(), 2);
        assert!(full.network.is_on());
        assert!(full.network.describe().contains("*.example.com:443"));
        assert_eq!(
            parse(&json!({"network": true})).unwrap().unwrap().network,
            SandboxNetwork::Registries
        );
        let cases = [
            (json!("yes"), "sandbox"),
            (json!({"writeable": []}), "sandbox.writeable"),
            (json!({"writable_roots": "/x"}), "sandbox.writable_roots"),
            (json!({"writable_roots": [1]}), "sandbox.writable_roots[0]"),
            (json!({"network": "on"}), "sandbox.network"),
            (
                json!({"network": {"allow": ["a b"]}}),
                "sandbox.network.allow[0]",
            ),
            (json!({"network": {"ask": []}}), "sandbox.network.ask"),
        ];
        for (value, field) in cases {
            let (path, _) = parse(&value).unwrap_err();
            assert_eq!(path.to_string(), field, "{value}");
        }
        assert!(check_root("/abs").is_ok() && check_root("~/c").is_ok());
        assert!(check_root("relative").is_err());
    }
}
