//! One server entry: decoded by serde derive ([`RawEntry`]) field by field from the located
//! document, so a problem names its field path and its place; then the checks types cannot say
//! (which transport, a URL's scheme, header syntax, timeout ranges).
//!
//! Fields are checked in a fixed order and the first problem is the entry's error (one error per
//! entry; the other entries still load). Transport fields are only read for their transport.
//! Unknown members are ignored (other tools' fields share these files). `${VAR}` expansion
//! ([`super::expand`]) happens in [`build`], per field, so an unset variable is a problem at
//! that field's place; `tools` is the per-tool allow/deny list ([`super::tool_filter`]);
//! `sandbox` (stdio only) is read apart ([`super::sandbox`]), its writable roots expanded here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aibuddy_common::located::{self, DecodeError, Entry, FieldPath, Node, PathSegment, Problem};
use serde::Deserialize;

use super::expand::{self, Vars};
use super::tool_filter::ToolFilter;
use super::types::{ConfigError, ConfigScope, ServerConfig, Timeouts, Transport};

/// A string, or a number or boolean kept as its JSON text (common in `env` blocks and `args`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(serde_json::Value::from(v).to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A server entry as written (every field optional; `null` counts as absent).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawEntry {
    command: Option<String>,
    url: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    args: Option<Vec<Scalar>>,
    env: Option<BTreeMap<String, Scalar>>,
    cwd: Option<String>,
    headers: Option<BTreeMap<String, Scalar>>,
    timeouts: Option<RawTimeouts>,
    enabled: Option<bool>,
    disabled: Option<bool>,
    #[serde(rename = "trustAnnotations")]
    trust_annotations: Option<bool>,
    tools: Option<RawTools>,
    /// Checked and read apart (`super::sandbox`): a boolean or an object.
    #[serde(skip)]
    sandbox: Option<super::sandbox::SandboxConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawTools {
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawTimeouts {
    connect: Option<f64>,
    call: Option<f64>,
}

/// Fields whose value must be an object (read into a struct).
const OBJECT_FIELDS: &[&str] = &["timeouts", "tools"];

/// Fields whose value must be a non-blank string.
const STRING_FIELDS: &[&str] = &["command", "url", "type", "cwd"];

/// What a field's problem says it expected, by field path (serde's own words elsewhere).
fn expected(path: &FieldPath, serde_expected: &str) -> String {
    let keys: Vec<&str> = path
        .0
        .iter()
        .map(|s| match s {
            PathSegment::Key(k) => k.as_str(),
            PathSegment::Index(_) => "[]",
        })
        .collect();
    let words = match keys.as_slice() {
        ["args"] => "an array of strings",
        ["env" | "headers"] => "an object of strings",
        ["timeouts"] => "an object",
        ["tools"] | ["tools", "[]", ..] => "an object with \"allow\" and/or \"deny\"",
        ["tools", _] => "an array of tool names",
        ["tools", _, _] => "a tool name",
        ["timeouts", _] => "a number of seconds",
        ["enabled" | "disabled" | "trustAnnotations"] => "a boolean",
        ["args" | "env" | "headers", _] => "a string",
        [field] if STRING_FIELDS.contains(field) => "a string",
        _ => return format!("expected {serde_expected}"),
    };
    format!("expected {words}")
}

/// Where errors about one entry point.
struct Ctx<'a, 'd> {
    file: &'a Path,
    server: &'a str,
    /// The entry's value.
    node: Node<'d>,
    /// The entry's key.
    at: Option<located::Position>,
}

impl Ctx<'_, '_> {
    fn err(&self, field: Option<&FieldPath>, message: impl Into<String>) -> ConfigError {
        let at = match field {
            Some(path) => self.node.find(path).map(|(_, at)| at).or(self.at),
            None => self.at,
        };
        ConfigError {
            file: self.file.to_path_buf(),
            line: at.map(|p| p.line),
            column: at.map(|p| p.column),
            server: Some(self.server.to_owned()),
            field: field.map(ToString::to_string),
            message: message.into(),
        }
    }

    fn field_err(&self, field: &str, message: impl Into<String>) -> ConfigError {
        self.err(Some(&FieldPath::default().child(field)), message)
    }

    fn decode_err(&self, e: &DecodeError) -> ConfigError {
        let message = match &e.problem {
            Problem::WrongType { expected: exp } => {
                let found = self
                    .node
                    .find(&e.path)
                    .map_or("another type", |(node, _)| node.kind().described());
                format!("{}, found {found}", expected(&e.path, exp))
            }
            Problem::UnknownField { .. } if e.path.to_string().starts_with("tools") => {
                "unknown member (expected \"allow\" or \"deny\")".to_string()
            }
            Problem::UnknownField { .. } => {
                "unknown timeout (expected \"connect\" or \"call\")".to_string()
            }
            other => other.serde_message(),
        };
        self.err(Some(&e.path), message)
    }
}

/// The members checked so far, decoded together at the end.
struct Checked<'d> {
    members: Vec<Entry<'d>>,
    all: Vec<Entry<'d>>,
}

impl<'d> Checked<'d> {
    fn get(&self, key: &str) -> Option<&Entry<'d>> {
        self.all.iter().find(|e| e.key == key)
    }

    /// Decodes `key` (when given) on its own; keeps it when it fits.
    fn take(&mut self, ctx: &Ctx<'_, 'd>, key: &str) -> Result<(), ConfigError> {
        let Some(member) = self.get(key).cloned() else {
            return Ok(());
        };
        // serde reads a struct from an array too, by position (`"timeouts": [1e300]` would be
        // `connect`, unchecked): an object field takes an object and nothing else.
        if OBJECT_FIELDS.contains(&key) && matches!(member.value.kind(), located::Kind::Array) {
            let path = FieldPath::default().child(key);
            return Err(ctx.err(
                Some(&path),
                format!(
                    "{}, found {}",
                    expected(&path, "an object"),
                    member.value.kind().described()
                ),
            ));
        }
        let probe = located::object([(key, member.value.tree())]);
        if let Err(e) = located::decode::<RawEntry>(probe) {
            return Err(ctx.decode_err(&e));
        }
        if STRING_FIELDS.contains(&key)
            && member
                .value
                .json()
                .as_str()
                .is_some_and(|s| s.trim().is_empty())
        {
            return Err(ctx.field_err(key, "must not be empty"));
        }
        self.members.push(member);
        Ok(())
    }

    /// `timeouts`, member by member: an unknown timeout is reported first, then `connect`'s
    /// problem (type, then range), then `call`'s.
    fn take_timeouts(&mut self, ctx: &Ctx<'_, 'd>) -> Result<(), ConfigError> {
        let Some(member) = self.get("timeouts").cloned() else {
            return Ok(());
        };
        let Some(inner) = member.value.entries() else {
            return self.take(ctx, "timeouts");
        };
        let decoded: Vec<(&Entry<'d>, Option<DecodeError>)> = inner
            .iter()
            .map(|t| {
                let probe = located::object([(
                    "timeouts",
                    located::object([(t.key.as_str(), t.value.tree())]),
                )]);
                (t, located::decode::<RawEntry>(probe).err())
            })
            .collect();
        let unknown = decoded
            .iter()
            .filter_map(|(_, e)| e.as_ref())
            .find(|e| matches!(e.problem, Problem::UnknownField { .. }));
        if let Some(e) = unknown {
            return Err(ctx.decode_err(e));
        }
        for key in ["connect", "call"] {
            let Some((t, error)) = decoded.iter().find(|(t, _)| t.key == key) else {
                continue;
            };
            if let Some(e) = error {
                return Err(ctx.decode_err(e));
            }
            let value = t.value.json();
            if let Some(secs) = value.as_f64()
                && !(secs > 0.0 && secs.is_finite() && secs <= 86_400.0)
            {
                let field = FieldPath::default().child("timeouts").child(key);
                return Err(ctx.err(
                    Some(&field),
                    format!("expected seconds in (0, 86400], found {value}"),
                ));
            }
        }
        self.members.push(member);
        Ok(())
    }

    fn decode(&self, ctx: &Ctx<'_, 'd>) -> Result<RawEntry, ConfigError> {
        let all = located::object(
            self.members
                .iter()
                .map(|m| (m.key.as_str(), m.value.tree())),
        );
        located::decode::<RawEntry>(all).map_err(|e| ctx.decode_err(&e))
    }
}

/// Parses one server entry (pure). `at` is where its name stands in the file.
pub(super) fn parse_entry(
    file: &Path,
    scope: ConfigScope,
    name: &str,
    node: Node<'_>,
    at: Option<located::Position>,
    vars: Vars<'_>,
) -> Result<ServerConfig, ConfigError> {
    let ctx = Ctx {
        file,
        server: name,
        node,
        at,
    };
    if name.trim().is_empty() {
        return Err(ctx.err(None, "server name must not be empty"));
    }
    let Some(all) = node.entries() else {
        return Err(ctx.err(
            None,
            format!("expected an object, found {}", node.kind().described()),
        ));
    };
    let mut checked = Checked {
        members: Vec::new(),
        all,
    };
    checked.take(&ctx, "enabled")?;
    if checked.decode(&ctx)?.enabled.is_none() {
        checked.take(&ctx, "disabled")?;
    }
    for key in ["trustAnnotations", "tools", "command", "url", "type"] {
        checked.take(&ctx, key)?;
    }
    let head = checked.decode(&ctx)?;
    let kind = transport_kind(&ctx, &head)?;
    let stdio = kind == Kind::Stdio;
    let fields: &[&str] = if stdio {
        &["args", "env", "cwd"]
    } else {
        &["headers"]
    };
    if !stdio {
        check_url(&ctx, head.url.as_deref(), true)?;
    } else if head.command.is_none() {
        return Err(ctx.field_err("command", "missing: a stdio server needs a command"));
    }
    for key in fields {
        checked.take(&ctx, key)?;
    }
    if !stdio {
        check_headers(&ctx, checked.decode(&ctx)?.headers.as_ref())?;
    }
    checked.take_timeouts(&ctx)?;
    let mut raw = checked.decode(&ctx)?;
    if let Some(member) = checked.get("sandbox") {
        if !stdio {
            return Err(ctx.field_err(
                "sandbox",
                "only a stdio server can be sandboxed (a remote server runs elsewhere)",
            ));
        }
        raw.sandbox = super::sandbox::parse(&member.value.json())
            .map_err(|(path, message)| ctx.err(Some(&path), message))?;
    }
    build(&ctx, scope, raw, kind, vars)
}

/// Which transport an entry asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

/// Which transport the entry asks for.
fn transport_kind(ctx: &Ctx<'_, '_>, raw: &RawEntry) -> Result<Kind, ConfigError> {
    match (raw.kind.as_deref(), &raw.command, &raw.url) {
        (Some("stdio"), _, _) => Ok(Kind::Stdio),
        (Some("http" | "streamable-http" | "streamable_http" | "streamableHttp"), _, _) => {
            Ok(Kind::Http)
        }
        (Some("sse"), _, _) => Ok(Kind::Sse),
        // The value is not quoted: a problem message never repeats what a config holds.
        (Some(_), _, _) => Err(ctx.field_err(
            "type",
            "unknown transport (expected \"stdio\", \"http\" or \"sse\")",
        )),
        (None, Some(_), Some(_)) => Err(ctx.field_err(
            "url",
            "give either \"command\" (stdio) or \"url\" (http), not both",
        )),
        (None, Some(_), None) => Ok(Kind::Stdio),
        (None, None, Some(_)) => Ok(Kind::Http),
        (None, None, None) => Err(ctx.field_err(
            "command",
            "missing: give \"command\" (stdio) or \"url\" (http)",
        )),
    }
}

/// `template`: the URL may still hold `${VAR}` (its scheme is checked once expanded, unless the
/// scheme itself is written out).
fn check_url(ctx: &Ctx<'_, '_>, url: Option<&str>, template: bool) -> Result<(), ConfigError> {
    let Some(url) = url else {
        return Err(ctx.field_err("url", "missing: an http server needs a url"));
    };
    if template && url.starts_with("${") {
        return Ok(());
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        // The URL itself is not quoted: it may carry a token.
        return Err(ctx.field_err("url", "expected an http:// or https:// URL"));
    }
    Ok(())
}

fn check_headers(
    ctx: &Ctx<'_, '_>,
    headers: Option<&BTreeMap<String, Scalar>>,
) -> Result<(), ConfigError> {
    for (k, v) in headers.into_iter().flatten() {
        let field = FieldPath::default().child("headers").child(k);
        if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
            return Err(ctx.err(Some(&field), "not a valid HTTP header name"));
        }
        check_header_value(ctx, &field, &v.0)?;
    }
    Ok(())
}

fn check_header_value(
    ctx: &Ctx<'_, '_>,
    field: &FieldPath,
    value: &str,
) -> Result<(), ConfigError> {
    if http::HeaderValue::from_str(value).is_err() {
        return Err(ctx.err(Some(field), "not a valid HTTP header value"));
    }
    Ok(())
}

/// Expands the `${VAR}`s of the fields that take them, records the variables read, and
/// re-checks what expansion may have changed (a URL's scheme, header values). A problem names
/// the field and the variable, never a value.
struct Expander<'v> {
    vars: Vars<'v>,
    read: Vec<String>,
    values: Vec<String>,
}

impl Expander<'_> {
    fn field(
        &mut self,
        ctx: &Ctx<'_, '_>,
        path: &FieldPath,
        template: String,
    ) -> Result<String, ConfigError> {
        let refs = expand::variables(&template).map_err(|e| ctx.err(Some(path), e.to_string()))?;
        match self.vars {
            Vars::Keep => {
                self.read.extend(refs.into_iter().map(|r| r.name));
                Ok(template)
            }
            Vars::From(lookup) => {
                for r in refs {
                    if let Some(value) = lookup(&r.name).filter(|v| !v.is_empty()) {
                        self.values.push(value);
                    }
                    self.read.push(r.name);
                }
                expand::expand(&template, lookup).map_err(|e| ctx.err(Some(path), e.to_string()))
            }
        }
    }

    fn map(
        &mut self,
        ctx: &Ctx<'_, '_>,
        key: &str,
        map: Option<BTreeMap<String, Scalar>>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut out = BTreeMap::new();
        for (k, v) in map.unwrap_or_default() {
            let path = FieldPath::default().child(key).child(&k);
            let value = self.field(ctx, &path, v.0)?;
            out.insert(k, value);
        }
        Ok(out)
    }
}

fn tool_filter(raw: Option<RawTools>) -> ToolFilter {
    let raw = raw.unwrap_or_default();
    ToolFilter {
        allow: raw.allow,
        deny: raw.deny.unwrap_or_default(),
    }
}

/// The checks types cannot say, and the [`ServerConfig`].
fn build(
    ctx: &Ctx<'_, '_>,
    scope: ConfigScope,
    raw: RawEntry,
    kind: Kind,
    vars: Vars<'_>,
) -> Result<ServerConfig, ConfigError> {
    let mut ex = Expander {
        vars,
        read: Vec::new(),
        values: Vec::new(),
    };
    let root = FieldPath::default();
    let transport = if kind == Kind::Stdio {
        let command = ex.field(ctx, &root.child("command"), raw.command.unwrap_or_default())?;
        let mut args = Vec::new();
        for (i, arg) in raw.args.unwrap_or_default().into_iter().enumerate() {
            let mut path = root.child("args");
            path.0.push(PathSegment::Index(i));
            args.push(ex.field(ctx, &path, arg.0)?);
        }
        if matches!(vars, Vars::From(_)) && command.trim().is_empty() {
            return Err(ctx.field_err("command", "is empty once its variables are expanded"));
        }
        Transport::Stdio {
            command,
            args,
            env: ex.map(ctx, "env", raw.env)?,
            cwd: raw.cwd.map(PathBuf::from),
        }
    } else {
        let url = ex.field(ctx, &root.child("url"), raw.url.unwrap_or_default())?;
        let headers = ex.map(ctx, "headers", raw.headers)?;
        if matches!(vars, Vars::From(_)) {
            check_url(ctx, Some(&url), false)?;
            for (k, v) in &headers {
                check_header_value(ctx, &root.child("headers").child(k), v)?;
            }
        }
        if kind == Kind::Sse {
            Transport::Sse { url, headers }
        } else {
            Transport::Http { url, headers }
        }
    };
    let sandbox = match raw.sandbox {
        Some(mut sandbox) => {
            for (i, given) in sandbox.writable_roots.iter_mut().enumerate() {
                let mut path = root.child("sandbox").child("writable_roots");
                path.0.push(PathSegment::Index(i));
                *given = ex.field(ctx, &path, std::mem::take(given))?;
                if matches!(vars, Vars::From(_)) || !given.contains("${") {
                    super::sandbox::check_root(given).map_err(|m| ctx.err(Some(&path), m))?;
                }
            }
            Some(sandbox)
        }
        None => None,
    };
    let mut variables = ex.read;
    variables.sort();
    variables.dedup();
    let expanded_values = ex.values;
    // Ranges were checked with the members (`take_timeouts`).
    let given = raw.timeouts.unwrap_or_default();
    let mut timeouts = Timeouts::default();
    let seconds = |secs: Option<f64>| secs.and_then(|s| Duration::try_from_secs_f64(s).ok());
    if let Some(connect) = seconds(given.connect) {
        timeouts.connect = connect;
    }
    if let Some(call) = seconds(given.call) {
        timeouts.call = call;
    }
    Ok(ServerConfig {
        name: ctx.server.to_owned(),
        transport,
        timeouts,
        enabled: raw
            .enabled
            .unwrap_or_else(|| !raw.disabled.unwrap_or(false)),
        scope,
        source: Some(ctx.file.to_path_buf()),
        trust_annotations: raw.trust_annotations.unwrap_or(false),
        tools: tool_filter(raw.tools),
        sandbox,
        variables,
        expanded_values,
    })
}
