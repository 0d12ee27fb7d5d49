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
//!                "writable_roots": [], "env_include": [], "env_exclude": [],
//!                "expose_credentials": [] }
//! }
//! ```
//! `tools.enabled` is the seed's `toolKeys`: the tool configs a run may use (MCP servers are
//! configured in `mcp.json`, their configs are keyed `mcp:<server>` and enabled unless listed in
//! `tools.disabled`). Unknown or ill-typed fields are reported with file, line and field; that field
//! falls back to its default and the problem stays visible in `aibuddy tools check` and the UI.
//!
//! The project file is untrusted: a field that widens authority over the user level (see
//! [`authority`]) applies only once the person trusts the project (`crate::trust`); until then it
//! is ignored with a problem line. `exec.writable_roots` are resolved at load ([`roots`]).

mod authority;
mod layer;
mod roots;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

pub use authority::{Effect, effect as authority_effect, effect_or_widens};
pub use layer::{DATA_DIR_ROOT, LayerContext, SettingsText, USER_FILE_EXPOSED, layer};
pub use roots::{
    RootRefusal, RootsScope, normalize_lexically, real_path, resolve_root, resolve_roots,
};

/// The message of a project field left out because the project is not trusted.
pub const UNTRUSTED_IGNORED: &str = "ignored: the project is not trusted (run `aibuddy trust`)";

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
    /// credential locations a command may read, e.g. `~/.aws`
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

/// Escaped for a terminal: the field names a project's own keys, and every printer must be safe
/// even when it forgets to escape (`aibuddy tools list` printed these raw).
impl std::fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use aibuddy_common::term::line as safe;
        let (file, field, message) = (safe(&self.file), safe(&self.field), safe(&self.message));
        match self.line {
            Some(l) => write!(f, "{file}:{l}: `{field}`: {message}"),
            None => write!(f, "{file}: `{field}`: {message}"),
        }
    }
}

/// A project settings field that widens authority over the user level: what trusting the project
/// grants. `value` is the effective (resolved) value; remote sandbox settings show only their keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct WideningField {
    pub file: String,
    pub line: Option<u32>,
    /// Dotted field path, e.g. `exec.writable_roots`.
    pub field: String,
    #[ts(type = "unknown")]
    pub value: Value,
}

/// Settings together with the problems found while loading them.
#[derive(Debug, Clone, Default)]
pub struct LoadedSettings {
    pub settings: Settings,
    pub problems: Vec<SettingsProblem>,
    pub files: Vec<PathBuf>,
    /// The project fields that widen authority (applied only when the project is trusted).
    pub widening: Vec<WideningField>,
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
    // The value (quoted by serde) comes before serde's own ", expected ...": take the last one.
    let expected = serde_msg
        .rsplit_once(", expected ")
        .map(|(_, e)| e)
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

/// Read the user settings file (the person's own; missing is fine).
pub fn read_user(data_dir: &Path) -> (Option<SettingsText>, Option<SettingsProblem>) {
    let path = data_dir.join(USER_SETTINGS);
    match std::fs::read_to_string(&path) {
        Ok(text) => (
            Some(SettingsText {
                file: path.display().to_string(),
                text,
            }),
            None,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(e) => (
            None,
            Some(SettingsProblem {
                file: path.display().to_string(),
                line: None,
                field: "(file)".to_string(),
                message: format!("cannot be read: {e}"),
            }),
        ),
    }
}

/// Read and layer the user and project settings, gated by the project's trust (see
/// `crate::trust::load_project`, which reads the project file once for the digest and for this).
pub fn load(data_dir: &Path, project: &Path) -> LoadedSettings {
    crate::trust::load_project(project, data_dir).settings
}

#[cfg(test)]
mod tests;
