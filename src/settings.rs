//! Layered JSON settings: user level (`settings.json` in the data directory) under project level
//! (`.aibuddy/settings.json` in the project). Project values override user values field by field.
//!
//! Schema (every field optional; defaults shown):
//! ```json
//! {
//!   "tools":   { "enabled": ["filesystem", "execute", "view_tool_call", "tool_search", "view_skill",
//!                            "ask_user_question", "agent"],
//!                "disabled": [] },
//!   "sandbox": { "kind": "local", "container": { "engine": "unix://...", "image": "...", "workdir": "/workspace", "project": "bind" }, "daytona": { ... }, "e2b": { ... } },
//!   "confirm": { "auto_approve_writes": false },
//!   "approvals": { "mode": "ask",   // or "auto", "read-only": see docs/approvals.md
//!                  "rules": [{"command": "cargo test *", "decision": "allow"},
//!                            {"tool": "mcp__github__*", "decision": "ask"}] },
//!   "exec":    { "default_timeout_ms": 120000, "heartbeat_secs": 30,
//!                "network": true,   // or false, or {"allow": ["crates.io", "*.example.com", "localhost:5173"], "deny": [...]}
//!                "writable_roots": [], "env_include": [], "env_exclude": [],
//!                "expose_credentials": [], "max_processes": 4096, "namespaces": true,
//!                "protected_paths": [], "unprotected_paths": [] },
//!   "providers": { "default": "anthropic", "anthropic": { "model": "claude-sonnet-4-6" } },
//!   "agent":   { "compaction_threshold": 0.8, "keep_recent_turns": 2, "summary_model": null,
//!                "step_timeout_secs": 1800, "keepalive_timeout_secs": 900, "idle_timeout_secs": 90 },
//!   "checkpoints": { "max_file_bytes": 16777216 },  // files larger are not checkpointed
//!   "hooks": { "pre_tool_call": [{"match": "execute", "command": "./check.sh", "timeout_secs": 60}],
//!              "post_tool_call": [], "run_start": [], "run_end": [], "waiting_for_person": [] },
//!   "agents": { "profiles": { "reviewer": { "description": "...", "tools": ["read_file", "grep"],
//!                                           "prompt": "You review code; change nothing." } } }
//! }
//! ```
//! `tools.enabled` is the seed's `toolKeys`: the tool configs a run may use (MCP servers are
//! configured in `mcp.json`, their configs are keyed `mcp:<server>` and enabled unless listed in
//! `tools.disabled`). Unknown or ill-typed fields are reported with file, line, column and field
//! (every one, not just the first: [`parse`]); that field falls back to its default and the
//! problem stays visible in `aibuddy tools check` and the UI.
//!
//! Every key has one row in the field table ([`fields::FIELDS`]: authority rule, user-only,
//! editable in the window, page, meaning). The project file is untrusted: a field that widens
//! authority over the user level (see [`authority`]) applies only once the person trusts the project (`crate::trust`); until then it
//! is ignored with a problem line. `exec.writable_roots` are resolved at load ([`roots`]).

mod agents;
mod approvals;
mod authority;
pub mod fields;
mod hooks;
mod layer;
mod network;
mod parse;
mod roots;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

pub use agents::{
    AgentProfile, AgentsSettings, DEFAULT_MAX_CONCURRENT, MAX_MAX_CONCURRENT, valid_profile_name,
};
pub use approvals::{MODE_USER_ONLY, RULE_UNTRUSTED};
pub use authority::{
    Effect, decide as authority_decide, effect as authority_effect, effect_or_widens,
};
pub use fields::{AuthorityRule, FIELDS, FieldSpec, SettingsPage, UNPROTECTED_USER_ONLY};
pub use hooks::{
    DEFAULT_HOOK_TIMEOUT_SECS, HOOK_EVENTS, HookEntry, HookLevel, HooksSettings,
    MAX_HOOK_TIMEOUT_SECS,
};
pub use layer::{DATA_DIR_ROOT, LayerContext, SettingsText, USER_FILE_EXPOSED, layer};
pub use network::NetworkSetting;
pub(crate) use parse::clean;
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
    "ask_user_question",
    "agent",
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
    /// `local`, `container`, `daytona` or `e2b` (`daytona` and `e2b` do not run in this build).
    pub kind: String,
    #[ts(type = "unknown")]
    pub daytona: Option<Value>,
    #[ts(type = "unknown")]
    pub e2b: Option<Value>,
    /// `sandbox.kind: "container"`: `engine` (user level only), `image`, `workdir`, `project`
    /// (`aibuddy_sandbox::ContainerSettings`, checked when the file is read).
    #[ts(type = "unknown")]
    pub container: Option<Value>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            kind: "local".to_string(),
            daytona: None,
            e2b: None,
            container: None,
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
    /// Outbound network for commands, always through the allow-list proxy: `false` (none),
    /// `true` (the package registries of Rust, Node, Python, Go and Debian: see
    /// `aibuddy_netproxy::DEFAULT_ALLOW`), or `{"allow": [...], "deny": [...]}` (`host`,
    /// `*.suffix`, `*`, an IP address, optional `:port`; deny wins; `*` is every public host,
    /// never loopback or private addresses unless an entry names them, e.g. `localhost:5173`).
    #[ts(type = "boolean | { allow?: string[], deny?: string[] }")]
    pub network: NetworkSetting,
    /// Extra writable roots for commands (e.g. `~/.cargo`), shown in the confirm scope.
    pub writable_roots: Vec<String>,
    /// Environment variables passed even though their names look secret.
    pub env_include: Vec<String>,
    /// Environment variables never passed.
    pub env_exclude: Vec<String>,
    /// credential locations a command may read, e.g. `~/.aws`
    pub expose_credentials: Vec<String>,
    /// Processes (and threads) a command may have at once (`RLIMIT_NPROC`, 1 to 4,194,304); a
    /// fork beyond it fails. Not enforced by the kernel when the app runs as root.
    pub max_processes: u32,
    /// Commands run in their own namespaces (bubblewrap) where the host allows it; `false`: the
    /// Landlock-only path everywhere (weaker: no hidden credentials, protected paths restored
    /// after the command instead of refused).
    pub namespaces: bool,
    /// Paths relative to the project and to each writable root that commands may read but neither
    /// change nor create, added to the built-in ones (`.git/config`, `.git/hooks`, `.git/info`,
    /// `.git/commondir` of every git directory, `.aibuddy`, `.vscode`, `.idea`, `.envrc`,
    /// `.mcp.json`, `.claude`, `.codex`, `.cursor`: `aibuddy_exec::PROTECTED_PATHS`). A trailing
    /// `/` names a directory. A project may add entries.
    pub protected_paths: Vec<String>,
    /// Built-in protected paths that commands may change after all (e.g. `.idea`). It widens what
    /// a command may do, so only the user-level file may set it; a project's is ignored.
    pub unprotected_paths: Vec<String>,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            heartbeat_secs: 30,
            network: NetworkSetting::Registries,
            writable_roots: Vec::new(),
            env_include: Vec::new(),
            env_exclude: Vec::new(),
            expose_credentials: Vec::new(),
            max_processes: aibuddy_sandbox::aibuddy_exec::DEFAULT_MAX_PROCESSES,
            namespaces: true,
            protected_paths: Vec::new(),
            unprotected_paths: Vec::new(),
        }
    }
}

/// `tool_search` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct ToolSearchSettings {
    /// How long `tool_search` waits for MCP servers still connecting before it ranks
    /// (milliseconds); its result names the servers still unavailable after that.
    pub connect_wait_ms: u64,
}

impl Default for ToolSearchSettings {
    fn default() -> Self {
        Self {
            connect_wait_ms: 15_000,
        }
    }
}

/// Agent runs (`aibuddy run`): conversation compaction and summaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct AgentSettings {
    /// Compact the conversation when the next request would pass this share of the model's
    /// context window (0 < x <= 1). The window comes from the route table or
    /// `providers.NAME.context_window`.
    pub compaction_threshold: f64,
    /// Turns (a user text or a model step with its results) always kept verbatim at compaction.
    pub keep_recent_turns: u32,
    /// The model that writes summaries (conversation compaction and the `summarize`
    /// precompaction strategy), on the run's provider. Unset: the run's model.
    pub summary_model: Option<String>,
    /// The longest a step's model response may take (seconds, retries included; also bounds a
    /// compaction summary). 1 s to 24 h ([`MAX_AGENT_TIMEOUT_SECS`]); default 30 min.
    pub step_timeout_secs: u64,
    /// How long a step's stream may send only keep-alives (seconds) before it counts as stalled.
    /// 1 s to 24 h; default 15 min.
    pub keepalive_timeout_secs: u64,
    /// How long a step's stream may send nothing at all (seconds) before it counts as stalled.
    /// 1 s to 24 h; default 90 s.
    pub idle_timeout_secs: u64,
}

/// Largest value of the `agent.*_timeout_secs` settings (24 h); the smallest is 1 s.
pub const MAX_AGENT_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// Default idle timeout of one streamed step.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Default bound on a stream that sends only keep-alives (ten idle timeouts).
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(900);
/// Default bound on the wall-clock time of one step's model response (all its attempts).
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30 * 60);

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            compaction_threshold: 0.8,
            keep_recent_turns: 2,
            summary_model: None,
            step_timeout_secs: DEFAULT_STEP_TIMEOUT.as_secs(),
            keepalive_timeout_secs: DEFAULT_KEEPALIVE_TIMEOUT.as_secs(),
            idle_timeout_secs: DEFAULT_IDLE_TIMEOUT.as_secs(),
        }
    }
}

/// `approvals`: how much the person is asked (see `crate::approvals` and `docs/approvals.md`).
/// The user level (and the person's per-project record, `crate::approvals::record`) chooses the
/// mode; a project's own file may only narrow it (`auto` -> `ask` -> `read-only`), may add `ask`
/// and `deny` rules at once, and `allow` rules only when trusted ([`approvals`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct ApprovalsSettings {
    /// `ask` (default), `auto` or `read-only`.
    pub mode: crate::approvals::ApprovalMode,
    /// Standing answers for commands and tools: user-level first, then the project's record,
    /// then the project file's (ask and deny; allow only when trusted).
    pub rules: Vec<crate::approvals::ApprovalRule>,
    /// The mode the project's own file narrows to, if any (a `--approvals` flag cannot undo it).
    #[serde(skip)]
    #[ts(skip)]
    pub project_narrows: Option<crate::approvals::ApprovalMode>,
    /// Whether the person chose a mode (in the user settings or for this project): when not,
    /// the first `aibuddy run` on a terminal asks.
    #[serde(skip)]
    #[ts(skip)]
    pub chosen: bool,
}

impl ApprovalsSettings {
    /// The mode for one invocation given by the person (`--approvals`), still narrowed by the
    /// project's own file.
    pub fn with_flag(&mut self, mode: crate::approvals::ApprovalMode) {
        self.mode = self.project_narrows.map_or(mode, |p| mode.strictest(p));
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
    /// Approval mode and rules.
    pub approvals: ApprovalsSettings,
    pub exec: ExecSettings,
    pub tool_search: ToolSearchSettings,
    /// Model providers for agent runs (`aibuddy run`): `default` plus named entries.
    #[ts(type = "Record<string, unknown>")]
    pub providers: aibuddy_provider::ProvidersConfig,
    /// Agent runs: compaction threshold, turns kept, summary model, time limits of a step.
    pub agent: AgentSettings,
    /// What a call's checkpoint covers (`docs/checkpoints.md`).
    pub checkpoints: CheckpointSettings,
    /// Commands run around tool calls and runs (`docs/hooks.md`): the user file's, then the
    /// project file's (only when trusted).
    pub hooks: HooksSettings,
    /// Subagent profiles of the `agent` tool (a project's only narrow: `settings/agents.rs`).
    pub agents: AgentsSettings,
}

/// The largest `checkpoints.max_file_bytes` accepted: 1 GiB.
pub const MAX_CHECKPOINT_FILE_BYTES: u64 = 1 << 30;

/// `checkpoints`: what the checkpoint of a call covers. A project's own file may raise the size
/// cap at once (more is protected) and lower it only when trusted ([`authority`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct CheckpointSettings {
    /// Files larger than this (bytes) are not checkpointed: every preview lists a change to one
    /// as skipped (`too_large`), and a rewind cannot put it back. 1 to 1 GiB; default 16 MiB.
    #[ts(type = "number")]
    pub max_file_bytes: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            max_file_bytes: aibuddy_checkpoint::DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// A problem found in a settings file. The field falls back to its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SettingsProblem {
    pub file: String,
    /// 1-based line of the field in the file, when it can be located.
    pub line: Option<u32>,
    /// 1-based column (in characters) of the field's key, or of the value at fault inside it.
    #[serde(default)]
    pub column: Option<u32>,
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
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{file}:{l}:{c}: `{field}`: {message}"),
            (Some(l), None) => write!(f, "{file}:{l}: `{field}`: {message}"),
            _ => write!(f, "{file}: `{field}`: {message}"),
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
    /// The project file's hooks as given, trusted or not (their scripts are pinned into the
    /// trust digest: `crate::trust`); they run only when in `settings.hooks`.
    pub project_hooks: HooksSettings,
}

/// Sandbox kinds a settings file may name (only `local` runs in this build; the others are
/// reported unavailable by the sandbox factory).
pub const SANDBOX_KINDS: &[&str] = &["local", "container", "daytona", "e2b"];

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
                column: None,
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
                column: None,
                field: "(file)".to_string(),
                message: format!("cannot be read: {e}"),
            }),
        ),
    }
}

#[cfg(test)]
mod tests;
