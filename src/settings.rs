//! Layered JSON settings: user level (`settings.json` in the data directory) under project level
//! (`.aibuddy/settings.json` in the project). Project values override user values field by field.
//!
//! Schema (every field optional; defaults shown):
//! ```json
//! {
//!   "tools":   { "enabled": ["filesystem", "execute", "view_tool_call", "tool_search", "view_skill"],
//!                "disabled": [] },
//!   "sandbox": { "kind": "local", "daytona": { ... }, "e2b": { ... } },
//!   "confirm": { "auto_approve_writes": false },
//!   "exec":    { "default_timeout_ms": 120000, "heartbeat_secs": 30, "network": true,
//!                "writable_roots": [], "env_include": [], "env_exclude": [] }
//! }
//! ```
//! `tools.enabled` is the seed's `toolKeys`: the tool configs a run may use (MCP servers are
//! configured in `mcp.json`, their configs are keyed `mcp:<server>` and enabled unless listed in
//! `tools.disabled`). Unknown or ill-typed fields are reported with file, line and field; that field
//! falls back to its default and the problem stays visible in `aibuddy tools check` and the UI.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

pub const PROJECT_SETTINGS: &str = ".aibuddy/settings.json";
pub const USER_SETTINGS: &str = "settings.json";

/// Config keys enabled when no settings say otherwise.
pub const DEFAULT_TOOL_KEYS: &[&str] = &[
    "filesystem",
    "execute",
    "view_tool_call",
    "tool_search",
    "view_skill",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct ToolsSettings {
    pub enabled: Vec<String>,
    pub disabled: Vec<String>,
}

impl Default for ToolsSettings {
    fn default() -> Self {
        Self {
            enabled: DEFAULT_TOOL_KEYS.iter().map(|s| s.to_string()).collect(),
            disabled: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct SandboxSettings {
    /// `local`, `daytona` or `e2b` (only `local` runs in this build).
    pub kind: String,
    #[ts(type = "unknown")]
    pub daytona: Option<Value>,
    #[ts(type = "unknown")]
    pub e2b: Option<Value>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            kind: "local".to_string(),
            daytona: None,
            e2b: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct ConfirmSettings {
    /// Approve `writes`-risk calls whose target lies inside the project root without asking.
    pub auto_approve_writes: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct ExecSettings {
    pub default_timeout_ms: u64,
    pub heartbeat_secs: u64,
    /// Outbound network for commands (enforced with Landlock network rules where supported).
    pub network: bool,
    /// Extra writable roots for commands (e.g. `~/.cargo`), shown in the confirm scope.
    pub writable_roots: Vec<String>,
    /// Environment variables passed even though their names look secret.
    pub env_include: Vec<String>,
    /// Environment variables never passed.
    pub env_exclude: Vec<String>,
    /// Credential locations a command may read, e.g. `~/.aws` (default: none; `~/.ssh`, `~/.aws`,
    /// `~/.gnupg`, `~/.config/gcloud`, keyrings... are hidden from commands otherwise).
    pub expose_credentials: Vec<String>,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            heartbeat_secs: 30,
            network: true,
            writable_roots: Vec::new(),
            env_include: Vec::new(),
            env_exclude: Vec::new(),
            expose_credentials: Vec::new(),
        }
    }
}

/// The effective settings of one project.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct Settings {
    pub tools: ToolsSettings,
    pub sandbox: SandboxSettings,
    pub confirm: ConfirmSettings,
    pub exec: ExecSettings,
}

/// A problem found in a settings file. The field falls back to its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SettingsProblem {
    pub file: String,
    /// 1-based line of the field in the file, when it can be located.
    pub line: Option<u32>,
    /// Dotted field path, e.g. `exec.heartbeat_secs`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: `{}`: {}", self.file, l, self.field, self.message),
            None => write!(f, "{}: `{}`: {}", self.file, self.field, self.message),
        }
    }
}

/// Settings together with the problems found while loading them.
#[derive(Debug, Clone, Default)]
pub struct LoadedSettings {
    pub settings: Settings,
    pub problems: Vec<SettingsProblem>,
    pub files: Vec<PathBuf>,
}

type FieldCheck = fn(&Value) -> Result<(), String>;

fn check_section<T: serde::de::DeserializeOwned>(v: &Value) -> Result<(), String> {
    serde_json::from_value::<T>(v.clone())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

const SECTIONS: &[(&str, FieldCheck)] = &[
    ("tools", check_section::<ToolsSettings>),
    ("sandbox", check_section::<SandboxSettings>),
    ("confirm", check_section::<ConfirmSettings>),
    ("exec", check_section::<ExecSettings>),
];

/// Find the 1-based line of `"key"` in `text`, searching from byte `from`. Returns the line and the
/// byte offset just after the key, so nested keys are searched after their section.
fn locate_key(text: &str, key: &str, from: usize) -> Option<(u32, usize)> {
    let needle = format!("\"{key}\"");
    let start = from.min(text.len());
    let rel = text.get(start..)?.find(&needle)?;
    let at = start + rel;
    let line = text[..at].bytes().filter(|b| *b == b'\n').count() as u32 + 1;
    Some((line, at + needle.len()))
}

/// Clean one file's JSON: drop unknown and ill-typed fields (recording each), keep the rest.
fn sanitize(file: &str, text: &str, problems: &mut Vec<SettingsProblem>) -> Map<String, Value> {
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            problems.push(SettingsProblem {
                file: file.to_string(),
                line: Some(e.line() as u32),
                field: "(file)".to_string(),
                message: format!("not valid JSON: {e}; the whole file is ignored"),
            });
            return Map::new();
        }
    };
    let Value::Object(root) = root else {
        problems.push(SettingsProblem {
            file: file.to_string(),
            line: Some(1),
            field: "(file)".to_string(),
            message: "top level must be a JSON object; the whole file is ignored".to_string(),
        });
        return Map::new();
    };
    let mut clean = Map::new();
    for (section, value) in root {
        let Some((_, check)) = SECTIONS.iter().find(|(name, _)| *name == section) else {
            problems.push(SettingsProblem {
                file: file.to_string(),
                line: locate_key(text, &section, 0).map(|(l, _)| l),
                field: section.clone(),
                message: format!(
                    "unknown field (known: {})",
                    SECTIONS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
            continue;
        };
        let section_pos = locate_key(text, &section, 0);
        let Value::Object(fields) = value else {
            problems.push(SettingsProblem {
                file: file.to_string(),
                line: section_pos.map(|(l, _)| l),
                field: section.clone(),
                message: "must be an object".to_string(),
            });
            continue;
        };
        let mut kept = Map::new();
        for (field, fv) in fields {
            if let Some(message) = invalid_value(&section, &field, &fv) {
                problems.push(SettingsProblem {
                    file: file.to_string(),
                    line: locate_key(text, &field, section_pos.map_or(0, |(_, p)| p))
                        .map(|(l, _)| l),
                    field: format!("{section}.{field}"),
                    message,
                });
                continue;
            }
            let mut probe = Map::new();
            probe.insert(field.clone(), fv.clone());
            match check(&Value::Object(probe)) {
                Ok(()) => {
                    kept.insert(field, fv);
                }
                Err(msg) => {
                    let line =
                        locate_key(text, &field, section_pos.map_or(0, |(_, p)| p)).map(|(l, _)| l);
                    let message = if msg.starts_with("unknown field") {
                        msg.split(" at line").next().unwrap_or(&msg).to_string()
                    } else {
                        wrong_type_message(&fv, &msg)
                    };
                    problems.push(SettingsProblem {
                        file: file.to_string(),
                        line,
                        field: format!("{section}.{field}"),
                        message,
                    });
                }
            }
        }
        clean.insert(section, Value::Object(kept));
    }
    clean
}

/// The JSON type of a value, in words.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// "wrong type" without quoting the value: settings may hold secrets, and problems reach logs.
fn wrong_type_message(value: &Value, serde_msg: &str) -> String {
    let expected = serde_msg
        .split(", expected ")
        .nth(1)
        .map(|e| e.split(" at line").next().unwrap_or(e).trim())
        .filter(|e| !e.is_empty())
        .unwrap_or("another type");
    format!(
        "wrong type: found {}, expected {expected}; using the default",
        json_type(value)
    )
}

/// Values that have the right type but are not allowed.
fn invalid_value(section: &str, field: &str, value: &Value) -> Option<String> {
    match (section, field, value) {
        ("sandbox", "kind", Value::String(kind)) if !SANDBOX_KINDS.contains(&kind.as_str()) => {
            Some(format!(
                "unknown sandbox kind (known: {}); using the default `local`",
                SANDBOX_KINDS.join(", ")
            ))
        }
        _ => None,
    }
}

/// Sandbox kinds a settings file may name (only `local` runs in this build; the others are
/// reported unavailable by the sandbox factory).
pub const SANDBOX_KINDS: &[&str] = &["local", "daytona", "e2b"];

/// Problems with configured tool keys: keys that name no registered config. MCP keys
/// (`mcp:<server>`) are checked against `mcp.json` by the capability plane instead.
pub fn unknown_tool_keys(loaded: &LoadedSettings, known: &[&str]) -> Vec<SettingsProblem> {
    let s = &loaded.settings.tools;
    let mut out = Vec::new();
    for (list, keys) in [("enabled", &s.enabled), ("disabled", &s.disabled)] {
        for key in keys.iter() {
            if key.starts_with("mcp:") || known.contains(&key.as_str()) {
                continue;
            }
            out.push(SettingsProblem {
                file: loaded
                    .files
                    .last()
                    .map(|f| f.display().to_string())
                    .unwrap_or_else(|| "(defaults)".to_string()),
                line: None,
                field: format!("tools.{list}"),
                message: format!("`{key}` names no tool config (known: {})", known.join(", ")),
            });
        }
    }
    out
}

/// Merge `over` into `base` section by section, field by field.
fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (section, value) in over {
        match (base.get_mut(&section), value) {
            (Some(Value::Object(b)), Value::Object(o)) => {
                for (k, v) in o {
                    b.insert(k, v);
                }
            }
            (_, v) => {
                base.insert(section, v);
            }
        }
    }
}

/// Load settings from already-read file texts (pure; used by `load` and by tests).
pub fn layer(files: &[(String, String)]) -> LoadedSettings {
    let mut problems = Vec::new();
    let mut merged = Map::new();
    for (name, text) in files {
        let first = problems.len();
        let clean = sanitize(name, text, &mut problems);
        problems[first..].sort_by_key(|p| p.line.unwrap_or(u32::MAX));
        merge(&mut merged, clean);
    }
    let settings = match serde_json::from_value::<Settings>(Value::Object(merged)) {
        Ok(s) => s,
        Err(e) => {
            // Every field was checked on its own; a failure here means two layers combine badly.
            problems.push(SettingsProblem {
                file: files.last().map(|f| f.0.clone()).unwrap_or_default(),
                line: None,
                field: "(merged)".to_string(),
                message: format!("settings could not be combined: {e}; using defaults"),
            });
            Settings::default()
        }
    };
    LoadedSettings {
        settings,
        problems,
        files: Vec::new(),
    }
}

/// Read the user and project settings files (missing files are fine) and layer them.
pub fn load(data_dir: &Path, project: &Path) -> LoadedSettings {
    let candidates = [data_dir.join(USER_SETTINGS), project.join(PROJECT_SETTINGS)];
    let mut texts = Vec::new();
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for path in candidates {
        match std::fs::read_to_string(&path) {
            Ok(t) => {
                texts.push((path.display().to_string(), t));
                files.push(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => problems.push(SettingsProblem {
                file: path.display().to_string(),
                line: None,
                field: "(file)".to_string(),
                message: format!("cannot be read: {e}"),
            }),
        }
    }
    let mut loaded = layer(&texts);
    problems.append(&mut loaded.problems);
    loaded.problems = problems;
    loaded.files = files;
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn defaults_when_no_files() {
        let l = layer(&[]);
        assert_eq!(l.settings, Settings::default());
        assert!(l.problems.is_empty());
    }

    #[test]
    fn project_overrides_user_field_by_field() {
        let user = r#"{"exec": {"heartbeat_secs": 5, "network": false}, "confirm": {"auto_approve_writes": true}}"#;
        let project = r#"{"exec": {"heartbeat_secs": 7}}"#;
        let l = layer(&[
            ("user".into(), user.into()),
            ("project".into(), project.into()),
        ]);
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        assert_eq!(l.settings.exec.heartbeat_secs, 7);
        assert!(!l.settings.exec.network);
        assert!(l.settings.confirm.auto_approve_writes);
    }

    #[test]
    fn reports_unknown_and_ill_typed_fields_with_line() {
        let text = "{\n  \"exec\": {\n    \"heartbeat_secs\": \"often\",\n    \"bogus\": 1\n  },\n  \"nope\": {}\n}";
        let l = layer(&[("p.json".into(), text.into())]);
        assert_eq!(l.settings.exec.heartbeat_secs, 30, "falls back to default");
        let got: Vec<(String, Option<u32>)> = l
            .problems
            .iter()
            .map(|p| (p.field.clone(), p.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("exec.heartbeat_secs".to_string(), Some(3)),
                ("exec.bogus".to_string(), Some(4)),
                ("nope".to_string(), Some(6)),
            ]
        );
        assert!(l.problems[0].message.contains("wrong type"));
        assert!(l.problems[1].message.contains("unknown field"));
    }

    #[test]
    fn wrong_type_never_quotes_the_value() {
        let text = r#"{"exec": {"network": "sk-live-SECRET123"}, "sandbox": {"kind": 7}}"#;
        let l = layer(&[("p.json".into(), text.into())]);
        assert_eq!(l.problems.len(), 2);
        for p in &l.problems {
            assert!(!p.message.contains("SECRET"), "{}", p.message);
        }
        assert_eq!(
            l.problems[0].message,
            "wrong type: found a string, expected a boolean; using the default"
        );
        assert!(l.settings.exec.network);
    }

    #[test]
    fn unknown_sandbox_kind_is_reported_and_defaults_to_local() {
        let text = "{\n  \"sandbox\": {\n    \"kind\": \"docker\"\n  }\n}";
        let l = layer(&[("p.json".into(), text.into())]);
        assert_eq!(l.settings.sandbox.kind, "local");
        assert_eq!(l.problems.len(), 1);
        assert_eq!(l.problems[0].field, "sandbox.kind");
        assert_eq!(l.problems[0].line, Some(3));
        assert!(l.problems[0].message.contains("unknown sandbox kind"));
        let ok = layer(&[("p.json".into(), r#"{"sandbox": {"kind": "e2b"}}"#.into())]);
        assert!(ok.problems.is_empty());
        assert_eq!(ok.settings.sandbox.kind, "e2b");
    }

    #[test]
    fn unknown_tool_keys_are_problems() {
        let mut l = layer(&[(
            "p.json".into(),
            r#"{"tools": {"enabled": ["filesystm", "execute", "mcp:time"], "disabled": ["nope"]}}"#
                .into(),
        )]);
        l.files.push("p.json".into());
        let problems = unknown_tool_keys(&l, &["filesystem", "execute"]);
        let got: Vec<(&str, bool)> = problems
            .iter()
            .map(|p| {
                (
                    p.field.as_str(),
                    p.message.starts_with("`filesystm`") || p.message.starts_with("`nope`"),
                )
            })
            .collect();
        assert_eq!(got, vec![("tools.enabled", true), ("tools.disabled", true)]);
    }

    #[test]
    fn invalid_json_file_is_reported_and_ignored() {
        let l = layer(&[
            ("u.json".into(), r#"{"exec": {"heartbeat_secs": 9}}"#.into()),
            ("p.json".into(), "{ not json".into()),
        ]);
        assert_eq!(l.settings.exec.heartbeat_secs, 9);
        assert_eq!(l.problems.len(), 1);
        assert_eq!(l.problems[0].file, "p.json");
    }
}
