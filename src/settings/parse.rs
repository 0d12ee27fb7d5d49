//! One settings file, cleaned: parsed once with positions ([`aibuddy_common::located`]), each
//! field decoded on its own through the typed [`Settings`] so one bad field hides no other, every
//! problem recorded at its line and column. A field with a problem is left out (it falls back to
//! its default, or to the user level's value); the rest is kept as JSON for layering.
//!
//! Nothing here lists the sections or their fields: a field is known when [`Settings`] (serde
//! derive, `deny_unknown_fields`) decodes it. Adding a field is adding it to [`Settings`] and its
//! row to the field table ([`super::fields::FIELDS`], whose tests compare the two).

use std::collections::BTreeMap;

use aibuddy_common::located::{self, DecodeError, Entry, Position, Problem, object};
use aibuddy_sandbox::aibuddy_exec::{DEFAULT_MAX_PROCESSES, MAX_MAX_PROCESSES};
use serde_json::{Map, Value};

use super::{AgentSettings, MAX_AGENT_TIMEOUT_SECS, SANDBOX_KINDS, Settings, SettingsProblem};

/// A file's fields that decoded, and where each was given.
#[derive(Debug, Default)]
pub(crate) struct Cleaned {
    /// Section by section, field by field (JSON, as given).
    pub map: Map<String, Value>,
    /// Where each kept `(section, field)` was given (its key).
    pub positions: BTreeMap<(String, String), Position>,
}

impl Cleaned {
    /// Where `section.field` was given (its key).
    pub fn position(&self, section: &str, field: &str) -> Option<Position> {
        self.positions
            .get(&(section.to_string(), field.to_string()))
            .copied()
    }
}

fn problem(file: &str, at: Option<Position>, field: String, message: String) -> SettingsProblem {
    SettingsProblem {
        file: file.to_string(),
        line: at.map(|p| p.line),
        column: at.map(|p| p.column),
        field,
        message,
    }
}

/// Clean one file's text (pure). Problems come in file order.
pub(crate) fn clean(file: &str, text: &str, problems: &mut Vec<SettingsProblem>) -> Cleaned {
    let mut cleaned = Cleaned::default();
    let first = problems.len();
    let doc = match located::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            problems.push(problem(
                file,
                Some(e.position),
                "(file)".into(),
                format!("not valid JSON: {e}; the whole file is ignored"),
            ));
            return cleaned;
        }
    };
    let root = doc.root();
    let Some(sections) = root.entries() else {
        problems.push(problem(
            file,
            Some(root.position()),
            "(file)".into(),
            "top level must be a JSON object; the whole file is ignored".into(),
        ));
        return cleaned;
    };
    for section in &sections {
        clean_section(file, section, &mut cleaned, problems);
    }
    problems[first..].sort_by_key(|p| (p.line.unwrap_or(u32::MAX), p.column.unwrap_or(0)));
    cleaned
}

fn clean_section(
    file: &str,
    section: &Entry<'_>,
    cleaned: &mut Cleaned,
    problems: &mut Vec<SettingsProblem>,
) {
    let name = section.key.as_str();
    // An unknown section name first (the typed probe knows the sections).
    if let Err(e) = located::decode::<Settings>(object([(name, object([]))]))
        && matches!(e.problem, Problem::UnknownField { .. })
    {
        problems.push(section_problem(file, section, &e));
        return;
    }
    // Every section is an object (serde would read a struct from an array too: not here).
    let Some(fields) = section.value.entries() else {
        problems.push(problem(
            file,
            Some(section.position),
            name.to_string(),
            "must be an object".to_string(),
        ));
        return;
    };
    let mut kept = Map::new();
    for field in &fields {
        let key = field.key.as_str();
        let probe = object([(name, object([(key, field.value.tree())]))]);
        let result = located::decode::<Settings>(probe)
            .map_err(|e| field_problem(file, name, field, &e))
            .and_then(|_| {
                let value = field.value.json();
                match invalid_value(name, key, &value) {
                    Some(message) => Err(problem(
                        file,
                        Some(field.position),
                        format!("{name}.{key}"),
                        message,
                    )),
                    None => Ok(value),
                }
            });
        match result {
            Ok(value) => {
                kept.insert(key.to_string(), value);
                cleaned
                    .positions
                    .insert((name.to_string(), key.to_string()), field.position);
            }
            Err(p) => problems.push(p),
        }
    }
    cleaned.map.insert(name.to_string(), Value::Object(kept));
}

/// A section that is unknown or not an object.
fn section_problem(file: &str, section: &Entry<'_>, e: &DecodeError) -> SettingsProblem {
    let message = match &e.problem {
        Problem::UnknownField { known, .. } => {
            format!("unknown field (known: {})", known.join(", "))
        }
        Problem::WrongType { .. } => "must be an object".to_string(),
        other => other.serde_message(),
    };
    problem(file, Some(section.position), section.key.clone(), message)
}

/// A field that did not decode. The problem points at the exact value (an element of a list,
/// say), names the field that falls back, and never quotes a value: settings may hold secrets.
fn field_problem(file: &str, section: &str, field: &Entry<'_>, e: &DecodeError) -> SettingsProblem {
    let inner = e.path.skip(2);
    let (found, at) = match field.value.find(&inner) {
        Some((node, at)) if !inner.is_empty() => (node.kind(), at),
        _ => (field.value.kind(), field.position),
    };
    let message = match &e.problem {
        Problem::WrongType { expected } if inner.is_empty() => format!(
            "wrong type: found {}, expected {expected}; using the default",
            found.described()
        ),
        Problem::WrongType { expected } => format!(
            "wrong type at `{}`: found {}, expected {expected}; using the default",
            e.path,
            found.described()
        ),
        Problem::UnknownField { .. } if inner.is_empty() => e.problem.serde_message(),
        other => format!("{}; using the default", other.serde_message()),
    };
    problem(file, Some(at), format!("{section}.{}", field.key), message)
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
        ("sandbox", "container", v) => aibuddy_sandbox::ContainerSettings::from_value(v)
            .err()
            .map(|e| format!("{e}; the container sandbox cannot be opened with it")),
        ("agent", "compaction_threshold", v)
            if !v.as_f64().is_some_and(|t| t > 0.0 && t <= 1.0) =>
        {
            Some("must be a share of the context window in (0, 1]; using the default 0.8".into())
        }
        ("exec", "network", v) if super::network::invalid(v).is_some() => {
            super::network::invalid(v)
        }
        ("exec", "max_processes", Value::Number(n))
            if !n
                .as_u64()
                .is_some_and(|v| (1..=u64::from(MAX_MAX_PROCESSES)).contains(&v)) =>
        {
            Some(format!(
                "must be between 1 and {MAX_MAX_PROCESSES} processes; using the default {DEFAULT_MAX_PROCESSES}"
            ))
        }
        (
            "agent",
            key @ ("step_timeout_secs" | "keepalive_timeout_secs" | "idle_timeout_secs"),
            Value::Number(n),
        ) if !n
            .as_u64()
            .is_some_and(|v| (1..=MAX_AGENT_TIMEOUT_SECS).contains(&v)) =>
        {
            let d = AgentSettings::default();
            let default = match key {
                "step_timeout_secs" => d.step_timeout_secs,
                "keepalive_timeout_secs" => d.keepalive_timeout_secs,
                _ => d.idle_timeout_secs,
            };
            Some(format!(
                "must be between 1 and {MAX_AGENT_TIMEOUT_SECS} seconds (24 h); using the default {default}"
            ))
        }
        ("exec", "protected_paths" | "unprotected_paths", Value::Array(items))
            if items.iter().any(|i| {
                !i.as_str()
                    .is_some_and(aibuddy_sandbox::aibuddy_exec::protect::valid_entry)
            }) =>
        {
            Some(
                "every entry must be a relative path without `.` or `..`; using the default []"
                    .into(),
            )
        }
        ("agents", "profiles", v) => super::agents::invalid_profiles(v),
        ("agents", "max_concurrent", Value::Number(n))
            if !n.as_u64().is_some_and(|v| {
                (1..=u64::from(super::agents::MAX_MAX_CONCURRENT)).contains(&v)
            }) =>
        {
            Some(format!(
                "must be between 1 and {} children; using the default {}",
                super::agents::MAX_MAX_CONCURRENT,
                super::agents::DEFAULT_MAX_CONCURRENT
            ))
        }
        ("approvals", "rules", v) => {
            let rules: Vec<crate::approvals::ApprovalRule> =
                serde_json::from_value(v.clone()).ok()?;
            rules.iter().enumerate().find_map(|(i, r)| {
                r.invalid()
                    .map(|why| format!("rule {}: {why}; using the default []", i + 1))
            })
        }
        ("checkpoints", "max_file_bytes", Value::Number(n))
            if !n
                .as_u64()
                .is_some_and(|v| (1..=super::MAX_CHECKPOINT_FILE_BYTES).contains(&v)) =>
        {
            Some(format!(
                "must be between 1 and {} bytes (1 GiB); using the default {}",
                super::MAX_CHECKPOINT_FILE_BYTES,
                aibuddy_checkpoint::DEFAULT_MAX_FILE_BYTES
            ))
        }
        ("agent", "keep_recent_turns", Value::Number(n)) if n.as_u64() == Some(0) => {
            Some("at least one turn is kept; using the default 2".into())
        }
        _ => None,
    }
}
