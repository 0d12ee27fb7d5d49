//! The configuration's types: what a parsed server entry is, and how problems are named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aibuddy_common::located::Position;
use serde::Serialize;

use super::tool_filter::ToolFilter;

/// Default time allowed to spawn/connect and finish the initialize handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time allowed for one `tools/call` before it is cancelled.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// File name inside the project's `.aibuddy/` folder and inside the user data dir.
pub const CONFIG_FILE_NAME: &str = "mcp.json";

/// Connection and call timeouts of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Timeouts {
    /// Spawn or connect, plus the initialize handshake. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect: Duration,
    /// One tool call, from request to result. Default [`DEFAULT_CALL_TIMEOUT`].
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            call: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint. When its `initialize` POST fails, the legacy HTTP+SSE
    /// transport is tried at the same URL (the spec's backwards compatibility).
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// A legacy HTTP+SSE endpoint (protocol 2024-11-05), chosen by `"type": "sse"`.
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// The URL and headers of an HTTP transport (streamable or legacy SSE).
    pub fn http_parts(&self) -> Option<(&str, &BTreeMap<String, String>)> {
        match self {
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                Some((url, headers))
            }
            Transport::Stdio { .. } => None,
        }
    }
}

/// Where a configuration entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigScope {
    User,
    Project,
    /// Built in code (tests, the CLI's `--mcp` flags, ...).
    Inline,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub timeouts: Timeouts,
    pub enabled: bool,
    pub scope: ConfigScope,
    /// The file the entry was read from (None for inline configs).
    pub source: Option<PathBuf>,
    /// `"trustAnnotations": true`: the person trusts this server's tool annotations, so a
    /// `readOnlyHint` may lower risk. Default false: annotations are untrusted hints.
    pub trust_annotations: bool,
    /// `"tools": {"allow": [...], "deny": [...]}`: which of its tools are offered.
    pub tools: ToolFilter,
    /// `"sandbox"` of a stdio server: run it under the confinement of commands
    /// ([`super::sandbox`]); `None`: unconfined (an HTTP server is never sandboxed).
    pub sandbox: Option<super::sandbox::SandboxConfig>,
    /// The environment variables its `command`, `args`, `env`, `url` and `headers` read through
    /// `${VAR}` / `${VAR:-default}` (sorted, each once). Their values are never kept here for
    /// showing: the fields hold the expanded values only when the entry was parsed with the
    /// environment ([`super::Vars::From`]), else the templates.
    pub variables: Vec<String>,
    /// The values those variables expanded to (never serialized): cut out of every failure
    /// reason and log line about the server ([`crate::redact::Redactor::for_config`]), so an
    /// expanded value is never logged; messages show the rest of the text.
    #[serde(skip)]
    pub expanded_values: Vec<String>,
}

impl ServerConfig {
    /// An inline stdio server with default timeouts.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        ServerConfig {
            name: name.into(),
            transport: Transport::Stdio {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
            timeouts: Timeouts::default(),
            enabled: true,
            scope: ConfigScope::Inline,
            source: None,
            trust_annotations: false,
            tools: ToolFilter::default(),
            sandbox: None,
            variables: Vec::new(),
            expanded_values: Vec::new(),
        }
    }

    /// An inline streamable HTTP server with default timeouts.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig {
            name: name.into(),
            transport: Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            timeouts: Timeouts::default(),
            enabled: true,
            scope: ConfigScope::Inline,
            source: None,
            trust_annotations: false,
            tools: ToolFilter::default(),
            sandbox: None,
            variables: Vec::new(),
            expanded_values: Vec::new(),
        }
    }
}

/// A problem in a configuration file.
/// Display: `<file>:<line>:<column>: server "<name>": field "<field>": <msg>` (the place when known).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line of the field at fault (or of the server's name), when known.
    pub line: Option<u32>,
    /// 1-based column (in characters) on that line.
    pub column: Option<u32>,
    pub server: Option<String>,
    pub field: Option<String>,
    pub message: String,
}

impl ConfigError {
    /// A problem with the whole file (cannot be read, not JSON, ...).
    pub fn file(file: &Path, at: Option<Position>, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            line: at.map(|p| p.line),
            column: at.map(|p| p.column),
            server: None,
            field: None,
            message: message.into(),
        }
    }

    fn describe(&self) -> String {
        let mut out = format!("{}", self.file.display());
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(column) = self.column {
                out.push_str(&format!(":{column}"));
            }
        }
        if let Some(server) = &self.server {
            out.push_str(&format!(": server \"{server}\""));
        }
        if let Some(field) = &self.field {
            out.push_str(&format!(": field \"{field}\""));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

/// Servers that parsed, and the errors of those that did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoadedConfigs {
    pub servers: Vec<ServerConfig>,
    pub errors: Vec<ConfigError>,
}
