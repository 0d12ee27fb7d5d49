//! Layering the user file under the project file: clean each, resolve writable roots, gate the
//! project's widening fields by trust.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    Effect, LoadedSettings, RootsScope, Settings, SettingsProblem, UNTRUSTED_IGNORED,
    WideningField, effect_or_widens, locate_key, merge, resolve_roots, sanitize,
};

/// One settings file, already read.
#[derive(Debug, Clone)]
pub struct SettingsText {
    /// How problems name the file (its path).
    pub file: String,
    pub text: String,
}

/// What layering needs besides the texts.
pub struct LayerContext<'a> {
    /// The canonical project root (project roots resolve beneath it).
    pub project_root: &'a Path,
    /// Where `~` points.
    pub home: Option<&'a Path>,
    /// Whether the project's widening fields apply.
    pub project_trusted: bool,
    /// Resolves roots (`std::fs::canonicalize` outside tests).
    pub canonicalize: &'a dyn Fn(&Path) -> std::io::Result<PathBuf>,
}

fn line_of(text: &str, section: &str, field: &str) -> Option<u32> {
    let section_pos = locate_key(text, section, 0);
    locate_key(text, field, section_pos.map_or(0, |(_, p)| p)).map(|(l, _)| l)
}

/// Replace `exec.writable_roots` in one file's clean map with the resolved roots.
fn resolve_roots_in(
    file: &SettingsText,
    map: &mut Map<String, Value>,
    scope: RootsScope<'_>,
    ctx: &LayerContext<'_>,
    problems: &mut Vec<SettingsProblem>,
) {
    let Some(Value::Object(exec)) = map.get_mut("exec") else {
        return;
    };
    let Some(given) = exec.get("writable_roots") else {
        return;
    };
    let given: Vec<String> = serde_json::from_value(given.clone()).unwrap_or_default();
    let (ok, refused) = resolve_roots(&given, scope, ctx.canonicalize);
    for (i, why) in refused {
        problems.push(SettingsProblem {
            file: file.file.clone(),
            line: line_of(&file.text, "exec", "writable_roots"),
            field: "exec.writable_roots".to_string(),
            message: why.message(i),
        });
    }
    exec.insert(
        "writable_roots".to_string(),
        Value::Array(ok.into_iter().map(Value::String).collect()),
    );
}

/// What a grant shows of a widening value: remote sandbox settings may hold keys, so only their
/// field names.
fn shown_value(section: &str, field: &str, value: &Value) -> Value {
    match (section, field, value) {
        ("sandbox", "daytona" | "e2b", Value::Object(o)) => {
            Value::Array(o.keys().cloned().map(Value::String).collect())
        }
        _ => value.clone(),
    }
}

/// Split the project's clean map by authority: widening fields are recorded, and left out (or
/// narrowed) unless the project is trusted.
fn gate_project(
    file: &SettingsText,
    map: &mut Map<String, Value>,
    user: &Settings,
    trusted: bool,
    problems: &mut Vec<SettingsProblem>,
    widening: &mut Vec<WideningField>,
) {
    for (section, fields) in map.iter_mut() {
        let Value::Object(fields) = fields else {
            continue;
        };
        let names: Vec<String> = fields.keys().cloned().collect();
        for field in names {
            let Some(value) = fields.get(&field) else {
                continue;
            };
            let effect = effect_or_widens(section, &field, value, user);
            if !effect.widens() {
                continue;
            }
            let line = line_of(&file.text, section, &field);
            widening.push(WideningField {
                file: file.file.clone(),
                line,
                field: format!("{section}.{field}"),
                value: shown_value(section, &field, value),
            });
            if trusted {
                continue;
            }
            let message = match effect {
                Effect::WidensPartly(narrow) => {
                    fields.insert(field.clone(), narrow);
                    format!("what goes beyond the user level is {UNTRUSTED_IGNORED}")
                }
                _ => {
                    fields.remove(&field);
                    UNTRUSTED_IGNORED.to_string()
                }
            };
            problems.push(SettingsProblem {
                file: file.file.clone(),
                line,
                field: format!("{section}.{field}"),
                message,
            });
        }
    }
}

fn to_settings(
    map: Map<String, Value>,
    file: &str,
    problems: &mut Vec<SettingsProblem>,
) -> Settings {
    match serde_json::from_value::<Settings>(Value::Object(map)) {
        Ok(s) => s,
        Err(e) => {
            // Every field was checked on its own; a failure here means two layers combine badly.
            problems.push(SettingsProblem {
                file: file.to_string(),
                line: None,
                field: "(merged)".to_string(),
                message: format!("settings could not be combined: {e}; using defaults"),
            });
            Settings::default()
        }
    }
}

fn clean(file: &SettingsText, problems: &mut Vec<SettingsProblem>) -> Map<String, Value> {
    let first = problems.len();
    let map = sanitize(&file.file, &file.text, problems);
    problems[first..].sort_by_key(|p| p.line.unwrap_or(u32::MAX));
    map
}

/// Layer the user file under the project file (pure but for `ctx.canonicalize`): each file is
/// cleaned, its writable roots resolved; the project's widening fields apply only when
/// `ctx.project_trusted`, and are listed in `widening` either way.
pub fn layer(
    user: Option<&SettingsText>,
    project: Option<&SettingsText>,
    ctx: &LayerContext<'_>,
) -> LoadedSettings {
    let mut problems = Vec::new();
    let mut widening = Vec::new();
    let mut merged = Map::new();
    if let Some(file) = user {
        let mut map = clean(file, &mut problems);
        resolve_roots_in(
            file,
            &mut map,
            RootsScope::User { home: ctx.home },
            ctx,
            &mut problems,
        );
        merge(&mut merged, map);
    }
    let user_settings = to_settings(merged.clone(), "(user)", &mut problems);
    if let Some(file) = project {
        let first = problems.len();
        let mut map = clean(file, &mut problems);
        let scope = RootsScope::Project {
            root: ctx.project_root,
            home: ctx.home,
        };
        resolve_roots_in(file, &mut map, scope, ctx, &mut problems);
        gate_project(
            file,
            &mut map,
            &user_settings,
            ctx.project_trusted,
            &mut problems,
            &mut widening,
        );
        problems[first..].sort_by_key(|p| p.line.unwrap_or(u32::MAX));
        merge(&mut merged, map);
    }
    let last = project.or(user).map(|f| f.file.clone()).unwrap_or_default();
    let settings = to_settings(merged, &last, &mut problems);
    LoadedSettings {
        settings,
        problems,
        files: Vec::new(),
        widening,
    }
}
