//! Layering the user file under the project file: clean each, resolve writable roots, gate the
//! project's widening fields by trust.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::parse::{Cleaned, clean};
use super::{
    Effect, LoadedSettings, RootsScope, Settings, SettingsProblem, UNTRUSTED_IGNORED,
    WideningField, effect_or_widens, merge, resolve_roots,
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
    /// Whether the user file is the person's own. False when the data directory lies inside the
    /// project (`crate::trust`): a command could have written it, so its widening fields (over
    /// the defaults) are ignored like an untrusted project's.
    pub user_trusted: bool,
    /// The data directory, resolved (`crate::trust::exposure::resolve`): no writable root may
    /// contain it or lie in it, or commands could rewrite trust records, `mcp.json` and settings.
    pub data_dir: Option<&'a Path>,
    /// The person's approvals for this project (`crate::approvals::record`), kept in the data
    /// directory: its mode comes before the user file's, its rules after the user file's.
    pub approvals_record: Option<&'a crate::approvals::record::ProjectApprovals>,
    /// Resolves roots (`std::fs::canonicalize` outside tests).
    pub canonicalize: &'a dyn Fn(&Path) -> std::io::Result<PathBuf>,
}

/// Replace `exec.writable_roots` in one file's clean map with the resolved roots.
fn resolve_roots_in(
    file: &SettingsText,
    cleaned: &mut Cleaned,
    scope: RootsScope<'_>,
    ctx: &LayerContext<'_>,
    problems: &mut Vec<SettingsProblem>,
) {
    let at = cleaned.position("exec", "writable_roots");
    let Some(Value::Object(exec)) = cleaned.map.get_mut("exec") else {
        return;
    };
    let Some(given) = exec.get("writable_roots") else {
        return;
    };
    let given: Vec<String> = serde_json::from_value(given.clone()).unwrap_or_default();
    let (mut ok, refused) = resolve_roots(&given, scope, ctx.canonicalize);
    let (line, column) = (at.map(|p| p.line), at.map(|p| p.column));
    for (i, why) in refused {
        problems.push(SettingsProblem {
            file: file.file.clone(),
            line,
            column,
            field: "exec.writable_roots".to_string(),
            message: why.message(i),
        });
    }
    if let Some(data) = ctx.data_dir {
        ok.retain(|root| {
            let overlaps = Path::new(root).starts_with(data) || data.starts_with(root);
            if overlaps {
                problems.push(SettingsProblem {
                    file: file.file.clone(),
                    line,
                    column,
                    field: "exec.writable_roots".to_string(),
                    message: format!("`{root}` {DATA_DIR_ROOT}"),
                });
            }
            !overlaps
        });
    }
    exec.insert(
        "writable_roots".to_string(),
        Value::Array(ok.into_iter().map(Value::String).collect()),
    );
}

/// What a grant shows of a widening value: a field that may hold credentials
/// (`FieldSpec::may_hold_secrets`) shows only its field names.
fn shown_value(section: &str, field: &str, value: &Value) -> Value {
    let secret = super::fields::find(section, field).is_some_and(|f| f.may_hold_secrets);
    match value {
        Value::Object(o) if secret => Value::Array(o.keys().cloned().map(Value::String).collect()),
        _ => value.clone(),
    }
}

/// The problem of a writable root that contains the data directory or lies in it.
pub const DATA_DIR_ROOT: &str = "contains or lies in the data directory (trust records, `mcp.json`, settings, history): commands may not write there; ignored";

/// The problem of a user-level widening field ignored because the data directory lies inside the
/// project.
pub const USER_FILE_EXPOSED: &str = "ignored: the data directory lies inside the project, so a command could have written this file (use a data directory outside the project)";

/// The problem of a project's `sandbox.container.engine`.
pub const ENGINE_USER_ONLY: &str = "ignored: only the user-level settings may choose the container engine (where commands are sent)";

/// Fields only the user-level file may set (`FieldSpec::user_only`): a project's are left out,
/// trusted or not, each with its row's problem. Inside an object field, `sandbox.container`'s
/// `engine` too (where commands are sent).
fn drop_user_only(file: &SettingsText, cleaned: &mut Cleaned, problems: &mut Vec<SettingsProblem>) {
    let at = cleaned.position("sandbox", "container");
    if let Some(Value::Object(sandbox)) = cleaned.map.get_mut("sandbox")
        && let Some(Value::Object(container)) = sandbox.get_mut("container")
        && container.remove("engine").is_some()
    {
        problems.push(SettingsProblem {
            file: file.file.clone(),
            line: at.map(|p| p.line),
            column: at.map(|p| p.column),
            field: "sandbox.container.engine".to_string(),
            message: ENGINE_USER_ONLY.to_string(),
        });
    }
    for spec in super::fields::FIELDS {
        let Some(message) = spec.user_only else {
            continue;
        };
        let (section, field) = spec.split();
        let at = cleaned.position(section, field);
        let Some(Value::Object(fields)) = cleaned.map.get_mut(section) else {
            continue;
        };
        if fields.remove(field).is_some() {
            problems.push(SettingsProblem {
                file: file.file.clone(),
                line: at.map(|p| p.line),
                column: at.map(|p| p.column),
                field: spec.path.to_string(),
                message: message.to_string(),
            });
        }
    }
}

/// `sandbox.container.engine` is the user level's alone: a (trusted) project's `sandbox.container`
/// replaces the user's object field by field, so the user's engine is put back (a project's own
/// was dropped by [`drop_user_only`]).
fn keep_user_engine(settings: &mut Settings, user: &Settings) {
    let engine = user
        .sandbox
        .container
        .as_ref()
        .and_then(|c| c.get("engine"))
        .cloned();
    if let Some(Value::Object(container)) = settings.sandbox.container.as_mut() {
        match engine {
            Some(e) => {
                container.insert("engine".to_string(), e);
            }
            None => {
                container.remove("engine");
            }
        }
    }
}

/// How a file's widening fields are gated.
struct Gate<'a> {
    /// What the file widens over.
    base: &'a Settings,
    /// Whether its widening fields apply.
    trusted: bool,
    /// Why they are ignored when not.
    ignored: &'a str,
}

/// Split a file's clean map by authority: widening fields are recorded (into `widening`, when
/// given), and left out (or narrowed) unless the gate is trusted.
fn gate_fields(
    file: &SettingsText,
    cleaned: &mut Cleaned,
    gate: &Gate<'_>,
    problems: &mut Vec<SettingsProblem>,
    mut widening: Option<&mut Vec<WideningField>>,
) {
    let (user, trusted, ignored) = (gate.base, gate.trusted, gate.ignored);
    let Cleaned { map, positions } = cleaned;
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
            let at = positions.get(&(section.clone(), field.clone())).copied();
            let line = at.map(|p| p.line);
            if let Some(widening) = widening.as_deref_mut() {
                widening.push(WideningField {
                    file: file.file.clone(),
                    line,
                    field: format!("{section}.{field}"),
                    value: shown_value(section, &field, value),
                });
            }
            if trusted {
                continue;
            }
            let message = match effect {
                Effect::WidensPartly(narrow) => {
                    fields.insert(field.clone(), narrow);
                    format!("what goes beyond the user level is {ignored}")
                }
                _ => {
                    fields.remove(&field);
                    ignored.to_string()
                }
            };
            problems.push(SettingsProblem {
                file: file.file.clone(),
                line,
                column: at.map(|p| p.column),
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
                column: None,
                field: "(merged)".to_string(),
                message: format!("settings could not be combined: {e}; using defaults"),
            });
            Settings::default()
        }
    }
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
        let mut map = clean(&file.file, &file.text, &mut problems);
        resolve_roots_in(
            file,
            &mut map,
            RootsScope::User { home: ctx.home },
            ctx,
            &mut problems,
        );
        if !ctx.user_trusted {
            let gate = Gate {
                base: &Settings::default(),
                trusted: false,
                ignored: USER_FILE_EXPOSED,
            };
            gate_fields(file, &mut map, &gate, &mut problems, None);
        }
        merge(&mut merged, map.map);
    }
    let user_settings = to_settings(merged.clone(), "(user)", &mut problems);
    let user_level = super::approvals::UserLevel {
        settings: user_settings.approvals.clone(),
        file_sets_mode: merged
            .get("approvals")
            .and_then(|a| a.get("mode"))
            .is_some(),
        record: ctx.approvals_record,
        trusted: ctx.user_trusted,
    };
    let mut project_approvals = None;
    let mut project_hooks = None;
    let mut project_agents = None;
    let mut project_hooks_given = super::HooksSettings::default();
    if let Some(file) = project {
        let first = problems.len();
        let mut map = clean(&file.file, &file.text, &mut problems);
        let scope = RootsScope::Project {
            root: ctx.project_root,
            home: ctx.home,
        };
        resolve_roots_in(file, &mut map, scope, ctx, &mut problems);
        drop_user_only(file, &mut map, &mut problems);
        project_approvals = super::approvals::take(&mut map).map(|t| (file, t));
        project_hooks_given = super::hooks::peek(&map).unwrap_or_default();
        let gate = Gate {
            base: &user_settings,
            trusted: ctx.project_trusted,
            ignored: UNTRUSTED_IGNORED,
        };
        gate_fields(file, &mut map, &gate, &mut problems, Some(&mut widening));
        // What is left (all of it when trusted) is added after the user's hooks, not merged.
        project_hooks = super::hooks::take(&mut map);
        // Profiles layer by name and only narrow the user's (`settings/agents.rs`).
        project_agents = super::agents::take(&mut map);
        problems[first..].sort_by_key(|p| (p.line.unwrap_or(u32::MAX), p.column.unwrap_or(0)));
        merge(&mut merged, map.map);
    }
    let last = project.or(user).map(|f| f.file.clone()).unwrap_or_default();
    let mut settings = to_settings(merged, &last, &mut problems);
    settings.approvals = super::approvals::combine(
        user_level,
        project_approvals,
        ctx.project_trusted,
        &mut problems,
        &mut widening,
    );
    if let Some(hooks) = project_hooks {
        settings.hooks.extend_with(hooks, super::HookLevel::Project);
    }
    if let Some((agents, sets_max)) = project_agents {
        settings.agents.narrow_with_project(agents, sets_max);
    }
    keep_user_engine(&mut settings, &user_settings);
    LoadedSettings {
        settings,
        problems,
        files: Vec::new(),
        widening,
        project_hooks: project_hooks_given,
    }
}
