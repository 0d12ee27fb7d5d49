//! One server entry: decoded by serde derive ([`RawEntry`]) field by field from the located
//! document, so a problem names its field path and its place; then the checks types cannot say
//! (which transport, a URL's scheme, header syntax, timeout ranges).
//!
//! Fields are checked in a fixed order and the first problem is the entry's error (one error per
//! entry; the other entries still load). Transport fields are only read for their transport.
//! Unknown members are ignored (other tools' fields share these files). Issue 14's `${VAR}`
//! expansion and per-tool allow/deny lists go into [`RawEntry`] and [`build`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aibuddy_common::located::{self, DecodeError, Entry, FieldPath, Node, PathSegment, Problem};
use serde::Deserialize;

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawTimeouts {
    connect: Option<f64>,
    call: Option<f64>,
}

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
    for key in ["trustAnnotations", "command", "url", "type"] {
        checked.take(&ctx, key)?;
    }
    let head = checked.decode(&ctx)?;
    let stdio = transport_kind(&ctx, &head)?;
    let fields: &[&str] = if stdio {
        &["args", "env", "cwd"]
    } else {
        &["headers"]
    };
    if !stdio {
        check_url(&ctx, head.url.as_deref())?;
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
    build(&ctx, scope, checked.decode(&ctx)?, stdio)
}

/// Whether the entry is a stdio server (else streamable HTTP).
fn transport_kind(ctx: &Ctx<'_, '_>, raw: &RawEntry) -> Result<bool, ConfigError> {
    match (raw.kind.as_deref(), &raw.command, &raw.url) {
        (Some("stdio"), _, _) => Ok(true),
        (Some("http" | "streamable-http" | "streamable_http" | "streamableHttp"), _, _) => {
            Ok(false)
        }
        (Some("sse"), _, _) => Err(ctx.field_err(
            "type",
            "the legacy SSE transport is not supported; use the server's streamable HTTP endpoint",
        )),
        // The value is not quoted: a problem message never repeats what a config holds.
        (Some(_), _, _) => {
            Err(ctx.field_err("type", "unknown transport (expected \"stdio\" or \"http\")"))
        }
        (None, Some(_), Some(_)) => Err(ctx.field_err(
            "url",
            "give either \"command\" (stdio) or \"url\" (http), not both",
        )),
        (None, Some(_), None) => Ok(true),
        (None, None, Some(_)) => Ok(false),
        (None, None, None) => Err(ctx.field_err(
            "command",
            "missing: give \"command\" (stdio) or \"url\" (http)",
        )),
    }
}

fn check_url(ctx: &Ctx<'_, '_>, url: Option<&str>) -> Result<(), ConfigError> {
    let Some(url) = url else {
        return Err(ctx.field_err("url", "missing: an http server needs a url"));
    };
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
        if http::HeaderValue::from_str(&v.0).is_err() {
            return Err(ctx.err(Some(&field), "not a valid HTTP header value"));
        }
    }
    Ok(())
}

fn strings(map: Option<BTreeMap<String, Scalar>>) -> BTreeMap<String, String> {
    map.unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect()
}

/// The checks types cannot say, and the [`ServerConfig`].
fn build(
    ctx: &Ctx<'_, '_>,
    scope: ConfigScope,
    raw: RawEntry,
    stdio: bool,
) -> Result<ServerConfig, ConfigError> {
    let transport = if stdio {
        Transport::Stdio {
            command: raw.command.unwrap_or_default(),
            args: raw
                .args
                .unwrap_or_default()
                .into_iter()
                .map(|a| a.0)
                .collect(),
            env: strings(raw.env),
            cwd: raw.cwd.map(PathBuf::from),
        }
    } else {
        Transport::Http {
            url: raw.url.unwrap_or_default(),
            headers: strings(raw.headers),
        }
    };
    // Ranges were checked with the members (`take_timeouts`).
    let given = raw.timeouts.unwrap_or_default();
    let mut timeouts = Timeouts::default();
    if let Some(secs) = given.connect {
        timeouts.connect = Duration::from_secs_f64(secs);
    }
    if let Some(secs) = given.call {
        timeouts.call = Duration::from_secs_f64(secs);
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
    })
}
