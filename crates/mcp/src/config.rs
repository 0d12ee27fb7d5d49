//! MCP server configuration in the ecosystem's common format:
//!
//! ```json
//! { "mcpServers": {
//!     "files":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!                 "env": { "KEY": "value" }, "cwd": "optional/dir" },
//!     "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ..." } },
//!     "slow":   { "command": "slow-server", "timeouts": { "connect": 60, "call": 600 }, "enabled": false },
//!     "mine":   { "command": "my-server", "trustAnnotations": true }
//! } }
//! ```
//!
//! `trustAnnotations: true` lets the server's tool annotations (`readOnlyHint`, ...) lower the
//! risk of its tools; without it they can only raise it (see [`crate::risk`]). A project's own
//! `mcp.json` may set it too: project files take effect only once the person trusts the project.
//!
//! `type` is optional (`"stdio"`, `"http"` or `"streamable-http"`); without it, `command` means
//! stdio and `url` means streamable HTTP. `timeouts` are seconds (see [`Timeouts`] for defaults).
//!
//! Files: the project's `.aibuddy/mcp.json` and the user data dir's `mcp.json`; a project entry
//! replaces the user entry of the same name. A bad entry yields a [`ConfigError`] naming the file,
//! the server and the field; the other entries still load. Parsing is pure; only
//! [`load_server_configs`] reads files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

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
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
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
        }
    }
}

/// A problem in a configuration file. Display: `<file>: server "<name>": field "<field>": <msg>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ConfigError {
    pub file: PathBuf,
    pub server: Option<String>,
    pub field: Option<String>,
    pub message: String,
}

impl ConfigError {
    fn describe(&self) -> String {
        let mut out = format!("{}", self.file.display());
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

struct Ctx<'a> {
    file: &'a Path,
    server: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_path_buf(),
            server: Some(self.server.to_owned()),
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn string_field(
    ctx: &Ctx,
    obj: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, ConfigError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ctx.err(field, "must not be empty")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ctx.err(
            field,
            format!("expected a string, found {}", type_name(other)),
        )),
    }
}

fn string_map(
    ctx: &Ctx,
    obj: &Map<String, Value>,
    field: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => {
            let mut out = BTreeMap::new();
            for (k, v) in map {
                match v {
                    Value::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    // Numbers and booleans in env blocks are common; keep their JSON text.
                    Value::Number(_) | Value::Bool(_) => {
                        out.insert(k.clone(), v.to_string());
                    }
                    other => {
                        return Err(ctx.err(
                            &format!("{field}.{k}"),
                            format!("expected a string, found {}", type_name(other)),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(other) => Err(ctx.err(
            field,
            format!("expected an object of strings, found {}", type_name(other)),
        )),
    }
}

fn seconds(
    ctx: &Ctx,
    obj: &Map<String, Value>,
    field: &str,
    path: &str,
) -> Result<Option<Duration>, ConfigError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(secs) if secs > 0.0 && secs.is_finite() && secs <= 86_400.0 => {
                Ok(Some(Duration::from_secs_f64(secs)))
            }
            _ => Err(ctx.err(path, format!("expected seconds in (0, 86400], found {n}"))),
        },
        Some(other) => Err(ctx.err(
            path,
            format!("expected a number of seconds, found {}", type_name(other)),
        )),
    }
}

fn parse_timeouts(ctx: &Ctx, obj: &Map<String, Value>) -> Result<Timeouts, ConfigError> {
    let mut timeouts = Timeouts::default();
    match obj.get("timeouts") {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            for key in t.keys() {
                if key != "connect" && key != "call" {
                    return Err(ctx.err(
                        &format!("timeouts.{key}"),
                        "unknown timeout (expected \"connect\" or \"call\")",
                    ));
                }
            }
            if let Some(d) = seconds(ctx, t, "connect", "timeouts.connect")? {
                timeouts.connect = d;
            }
            if let Some(d) = seconds(ctx, t, "call", "timeouts.call")? {
                timeouts.call = d;
            }
        }
        Some(other) => {
            return Err(ctx.err(
                "timeouts",
                format!("expected an object, found {}", type_name(other)),
            ));
        }
    }
    Ok(timeouts)
}

/// Parses one server entry. Pure.
pub fn parse_server_entry(
    file: &Path,
    scope: ConfigScope,
    name: &str,
    entry: &Value,
) -> Result<ServerConfig, ConfigError> {
    let ctx = Ctx { file, server: name };
    if name.trim().is_empty() {
        return Err(ConfigError {
            file: file.to_path_buf(),
            server: Some(name.to_owned()),
            field: None,
            message: "server name must not be empty".into(),
        });
    }
    let Value::Object(obj) = entry else {
        return Err(ConfigError {
            file: file.to_path_buf(),
            server: Some(name.to_owned()),
            field: None,
            message: format!("expected an object, found {}", type_name(entry)),
        });
    };
    let enabled = match (obj.get("enabled"), obj.get("disabled")) {
        (Some(Value::Bool(b)), _) => *b,
        (Some(other), _) if !other.is_null() => {
            return Err(ctx.err(
                "enabled",
                format!("expected a boolean, found {}", type_name(other)),
            ));
        }
        (_, Some(Value::Bool(d))) => !d,
        (_, Some(other)) if !other.is_null() => {
            return Err(ctx.err(
                "disabled",
                format!("expected a boolean, found {}", type_name(other)),
            ));
        }
        _ => true,
    };
    let trust_annotations = match obj.get("trustAnnotations") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ctx.err(
                "trustAnnotations",
                format!("expected a boolean, found {}", type_name(other)),
            ));
        }
    };
    let command = string_field(&ctx, obj, "command")?;
    let url = string_field(&ctx, obj, "url")?;
    let kind = string_field(&ctx, obj, "type")?;
    let kind = match (kind.as_deref(), &command, &url) {
        (Some("stdio"), _, _) => "stdio",
        (Some("http" | "streamable-http" | "streamable_http" | "streamableHttp"), _, _) => "http",
        (Some("sse"), _, _) => {
            return Err(ctx.err("type", "the legacy SSE transport is not supported; use the server's streamable HTTP endpoint"));
        }
        (Some(other), _, _) => {
            return Err(ctx.err(
                "type",
                format!("unknown transport \"{other}\" (expected \"stdio\" or \"http\")"),
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err(ctx.err(
                "url",
                "give either \"command\" (stdio) or \"url\" (http), not both",
            ));
        }
        (None, Some(_), None) => "stdio",
        (None, None, Some(_)) => "http",
        (None, None, None) => {
            return Err(ctx.err(
                "command",
                "missing: give \"command\" (stdio) or \"url\" (http)",
            ));
        }
    };
    let transport = if kind == "stdio" {
        let Some(command) = command else {
            return Err(ctx.err("command", "missing: a stdio server needs a command"));
        };
        let args = match obj.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut args = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => args.push(s.clone()),
                        Value::Number(_) | Value::Bool(_) => args.push(item.to_string()),
                        other => {
                            return Err(ctx.err(
                                &format!("args[{i}]"),
                                format!("expected a string, found {}", type_name(other)),
                            ));
                        }
                    }
                }
                args
            }
            Some(other) => {
                return Err(ctx.err(
                    "args",
                    format!("expected an array of strings, found {}", type_name(other)),
                ));
            }
        };
        let env = string_map(&ctx, obj, "env")?;
        let cwd = string_field(&ctx, obj, "cwd")?.map(PathBuf::from);
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        }
    } else {
        let Some(url) = url else {
            return Err(ctx.err("url", "missing: an http server needs a url"));
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            // The URL itself is not quoted: it may carry a token.
            return Err(ctx.err("url", "expected an http:// or https:// URL"));
        }
        let headers = string_map(&ctx, obj, "headers")?;
        for (k, v) in &headers {
            if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                return Err(ctx.err(&format!("headers.{k}"), "not a valid HTTP header name"));
            }
            if http::HeaderValue::from_str(v).is_err() {
                return Err(ctx.err(&format!("headers.{k}"), "not a valid HTTP header value"));
            }
        }
        Transport::Http { url, headers }
    };
    let timeouts = parse_timeouts(&ctx, obj)?;
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        timeouts,
        enabled,
        scope,
        source: Some(file.to_path_buf()),
        trust_annotations,
    })
}

/// Parses a whole `mcp.json` text. `file` is only used to name errors. Pure.
pub fn parse_config_text(file: &Path, scope: ConfigScope, text: &str) -> LoadedConfigs {
    let file_err = |message: String| LoadedConfigs {
        servers: Vec::new(),
        errors: vec![ConfigError {
            file: file.to_path_buf(),
            server: None,
            field: None,
            message,
        }],
    };
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return file_err(format!(
                "invalid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ));
        }
    };
    let Value::Object(root) = root else {
        return file_err(format!(
            "expected a JSON object with \"mcpServers\", found {}",
            type_name(&root)
        ));
    };
    let servers = match root.get("mcpServers") {
        None => return LoadedConfigs::default(),
        Some(Value::Object(servers)) => servers,
        Some(other) => {
            let mut out = file_err(format!("expected an object, found {}", type_name(other)));
            out.errors[0].field = Some("mcpServers".into());
            return out;
        }
    };
    let mut out = LoadedConfigs::default();
    for (name, entry) in servers {
        match parse_server_entry(file, scope, name, entry) {
            Ok(cfg) => out.servers.push(cfg),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// User entries first, then project entries replacing user entries of the same name. Pure.
/// A project entry that failed to parse still shadows the user entry of the same name: the
/// person meant to change that server, so silently running the old one would surprise them.
pub fn merge(user: LoadedConfigs, project: LoadedConfigs) -> LoadedConfigs {
    let mut by_name: BTreeMap<String, ServerConfig> = BTreeMap::new();
    for cfg in user.servers {
        by_name.insert(cfg.name.clone(), cfg);
    }
    for err in &project.errors {
        if let Some(server) = &err.server {
            by_name.remove(server);
        }
    }
    for cfg in project.servers {
        by_name.insert(cfg.name.clone(), cfg);
    }
    let mut errors = user.errors;
    errors.extend(project.errors);
    LoadedConfigs {
        servers: by_name.into_values().collect(),
        errors,
    }
}

/// `<project>/.aibuddy/mcp.json`.
pub fn project_config_path(project_root: &Path) -> PathBuf {
    project_root.join(".aibuddy").join(CONFIG_FILE_NAME)
}

/// `<user data dir>/mcp.json`.
pub fn user_config_path(user_data_dir: &Path) -> PathBuf {
    user_data_dir.join(CONFIG_FILE_NAME)
}

fn read_one(path: &Path, scope: ConfigScope) -> LoadedConfigs {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_config_text(path, scope, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LoadedConfigs::default(),
        Err(e) => LoadedConfigs {
            servers: Vec::new(),
            errors: vec![ConfigError {
                file: path.to_path_buf(),
                server: None,
                field: None,
                message: format!("cannot read: {e}"),
            }],
        },
    }
}

/// Reads the user file (if a data dir is given) and the project file, and merges them.
/// Missing files are not errors. Relative stdio `cwd`s resolve against the project root.
pub fn load_server_configs(project_root: &Path, user_data_dir: Option<&Path>) -> LoadedConfigs {
    let user = user_data_dir
        .map(|dir| read_one(&user_config_path(dir), ConfigScope::User))
        .unwrap_or_default();
    let project = read_one(&project_config_path(project_root), ConfigScope::Project);
    let mut merged = merge(user, project);
    for cfg in &mut merged.servers {
        if let Transport::Stdio { cwd: Some(cwd), .. } = &mut cfg.transport
            && cwd.is_relative()
        {
            *cwd = project_root.join(&*cwd);
        }
    }
    merged
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
