//! Which project settings fields widen authority (pure). A project folder's own
//! `.aibuddy/settings.json` is untrusted: a field that would give commands, tools or the sandbox
//! more than the person's user level gives takes effect only after the person trusts the project
//! (`crate::trust`). Fields that only narrow apply at once.
//!
//! Every field of [`Settings`] has an explicit rule in [`effect`]; a field without one (a new field
//! nobody classified yet) counts as widening, so forgetting a field fails closed. The test
//! `every_settings_field_is_classified` makes that omission visible.
//!
//! | field | rule |
//! |---|---|
//! | `tools.enabled` | widens by the keys the user level does not enable; untrusted, only the keys the user level enables apply |
//! | `tools.disabled` | widens when it drops a key the user level disables; untrusted, the user level's keys are kept too |
//! | `sandbox.kind` | widens when it differs from the user level (commands and files would go elsewhere) |
//! | `sandbox.daytona`, `sandbox.e2b` | widen when they differ from the user level (where a remote sandbox runs, with what credentials) |
//! | `confirm.auto_approve_writes` | widens when `true` and the user level is `false` |
//! | `approvals.mode` | narrows when at least as strict as the user level (`auto` < `ask` < `read-only`); a wider one is never applied from a project, trusted or not (`settings/approvals.rs`): only the person chooses it |
//! | `approvals.rules` | narrows when it holds only `ask` and `deny` rules (they apply at once, added to the user level's); widens by its `allow` rules, which apply only when the project is trusted |
//! | `exec.network` | narrows when `false`, or when every allow entry is covered by one of the user level's (`*` covers public names only, never `localhost` or private addresses) and every user-level deny entry is kept; otherwise widens: untrusted, the covered allow entries and the union of both deny lists apply |
//! | `exec.writable_roots` | widens when non-empty (after resolution); `[]` narrows |
//! | `exec.env_include` | widens when non-empty; `[]` narrows |
//! | `exec.expose_credentials` | widens when non-empty; `[]` narrows |
//! | `exec.env_exclude` | widens when it drops a name the user level excludes; untrusted, the user level's names are kept too |
//! | `exec.max_processes` | widens when above the user level (a command may start more processes); lower narrows |
//! | `exec.namespaces` | widens when `false` and the user level is `true` (the weaker Landlock-only path) |
//! | `exec.protected_paths` | narrows when it keeps every user-level entry (more paths commands may not change); otherwise widens: untrusted, the union of both lists applies |
//! | `exec.unprotected_paths` | widens when non-empty; user level only: a project's is always ignored (see `layer`) |
//! | `exec.default_timeout_ms` | neutral: a default the model can already override per call (`timeout_ms`), not an authority |
//! | `exec.heartbeat_secs` | neutral: how often a keep-alive is sent |
//! | `providers.*` | widens when it differs from the user level (a project could point a keyed provider at its own URL, or choose which provider and model a run uses) |
//! | `agent.compaction_threshold`, `agent.keep_recent_turns` | neutral: when older turns are summarized, not what a run may do |
//! | `agent.step_timeout_secs`, `agent.keepalive_timeout_secs`, `agent.idle_timeout_secs` | widen when above the user level (a run could hold the model, and the person's money, longer); lower narrows |
//! | `agent.summary_model` | widens when it differs from the user level (it chooses a model the run pays for) |
//! | `hooks.*` (`pre_tool_call`, `post_tool_call`, `run_start`, `run_end`, `waiting_for_person`) | widens when non-empty (a hook runs a command with the person's authority, outside the sandbox); a project's hooks are added after the user level's, never replace them (`settings/hooks.rs`), and their scripts are pinned into the trust digest |
//! | `agents.profiles` | narrows: a child run's tools are always at most its parent's, and a project profile of a name the user level defines only narrows that profile's tools (`settings/agents.rs`) |
//! | `checkpoints.max_file_bytes` | narrows when at least the user level's (more files are checkpointed); lower widens (fewer files could be put back), so it applies only when trusted |

use serde_json::Value;

use super::Settings;
use crate::approvals::{ApprovalMode, ApprovalRule, RuleDecision};

/// What a project value does to the authority the user level gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Gives no more than the user level: applies at once, trusted or not.
    Narrows,
    /// Changes nothing that confines (timings, display): applies at once.
    Neutral,
    /// Gives more than the user level: applies only in a trusted project.
    Widens,
    /// Gives more than the user level, but part of it only narrows: in an untrusted project the
    /// given value (that narrowing part) applies instead.
    WidensPartly(Value),
}

impl Effect {
    pub fn widens(&self) -> bool {
        matches!(self, Effect::Widens | Effect::WidensPartly(_))
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn non_empty_list(v: &Value) -> Effect {
    if v.as_array().is_some_and(|a| a.is_empty()) {
        Effect::Narrows
    } else {
        Effect::Widens
    }
}

/// A list of things the project turns on: only the ones the user level turns on too are free.
fn subset_of(v: &Value, user: &[String]) -> Effect {
    let given = strings(v);
    if given.iter().all(|k| user.contains(k)) {
        return Effect::Narrows;
    }
    let kept: Vec<Value> = given
        .into_iter()
        .filter(|k| user.contains(k))
        .map(Value::String)
        .collect();
    Effect::WidensPartly(Value::Array(kept))
}

/// A list of things the project turns off: it must keep everything the user level turns off.
fn superset_of(v: &Value, user: &[String]) -> Effect {
    let given = strings(v);
    if user.iter().all(|k| given.contains(k)) {
        return Effect::Narrows;
    }
    let mut union = user.to_vec();
    union.extend(given.into_iter().filter(|k| !user.contains(k)));
    Effect::WidensPartly(Value::Array(union.into_iter().map(Value::String).collect()))
}

fn turns_on(v: &Value, user_on: bool) -> Effect {
    match v.as_bool() {
        Some(true) if !user_on => Effect::Widens,
        _ => Effect::Narrows,
    }
}

/// A floor: no lower than the user level's narrows, anything else widens.
fn at_least(v: &Value, user: u64) -> Effect {
    match v.as_u64() {
        Some(n) if n >= user => Effect::Narrows,
        _ => Effect::Widens,
    }
}

/// A limit: no higher than the user level's narrows, anything else widens.
fn at_most(v: &Value, user: u64) -> Effect {
    match v.as_u64() {
        Some(n) if n <= user => Effect::Narrows,
        _ => Effect::Widens,
    }
}

fn differs(v: &Value, user: &Value) -> Effect {
    if v == user {
        Effect::Neutral
    } else {
        Effect::Widens
    }
}

/// The effect of the project setting `section.field = value` over the user level `user`, or None
/// for a field this function does not know (the caller treats it as widening).
///
/// `value` has already been type-checked, and `exec.writable_roots` resolved, by the loader.
pub fn effect(section: &str, field: &str, value: &Value, user: &Settings) -> Option<Effect> {
    let e = match (section, field) {
        ("tools", "enabled") => subset_of(value, &user.tools.enabled),
        ("tools", "disabled") => superset_of(value, &user.tools.disabled),
        ("sandbox", "kind") => differs(value, &Value::String(user.sandbox.kind.clone())),
        ("sandbox", "daytona") => {
            differs(value, user.sandbox.daytona.as_ref().unwrap_or(&Value::Null))
        }
        ("sandbox", "e2b") => differs(value, user.sandbox.e2b.as_ref().unwrap_or(&Value::Null)),
        ("confirm", "auto_approve_writes") => turns_on(value, user.confirm.auto_approve_writes),
        ("approvals", "mode") => match serde_json::from_value::<ApprovalMode>(value.clone()) {
            Ok(m) if m.at_least_as_strict_as(user.approvals.mode) => Effect::Narrows,
            _ => Effect::Widens,
        },
        ("approvals", "rules") => {
            let rules: Vec<ApprovalRule> =
                serde_json::from_value(value.clone()).unwrap_or_default();
            if rules.iter().all(|r| r.decision != RuleDecision::Allow) {
                Effect::Narrows
            } else {
                let kept: Vec<ApprovalRule> = rules
                    .into_iter()
                    .filter(|r| r.decision != RuleDecision::Allow)
                    .collect();
                Effect::WidensPartly(serde_json::to_value(kept).unwrap_or(Value::Array(vec![])))
            }
        }
        ("exec", "network") => super::network::effect(value, &user.exec.network),
        ("exec", "writable_roots") => non_empty_list(value),
        ("exec", "env_include") => non_empty_list(value),
        ("exec", "expose_credentials") => non_empty_list(value),
        ("exec", "env_exclude") => superset_of(value, &user.exec.env_exclude),
        ("exec", "max_processes") => at_most(value, u64::from(user.exec.max_processes)),
        ("exec", "namespaces") => match value.as_bool() {
            Some(false) if user.exec.namespaces => Effect::Widens,
            _ => Effect::Narrows,
        },
        // A project's list replaces the user level's: it must keep the person's own entries.
        ("exec", "protected_paths") => superset_of(value, &user.exec.protected_paths),
        ("exec", "unprotected_paths") => non_empty_list(value),
        ("exec", "default_timeout_ms") | ("exec", "heartbeat_secs") => Effect::Neutral,
        // How long a search waits for MCP servers: no authority involved.
        ("tool_search", "connect_wait_ms") => Effect::Neutral,
        ("agent", "compaction_threshold") | ("agent", "keep_recent_turns") => Effect::Neutral,
        ("agent", "step_timeout_secs") => at_most(value, user.agent.step_timeout_secs),
        ("agent", "keepalive_timeout_secs") => at_most(value, user.agent.keepalive_timeout_secs),
        ("agent", "idle_timeout_secs") => at_most(value, user.agent.idle_timeout_secs),
        ("agent", "summary_model") => differs(
            value,
            &user
                .agent
                .summary_model
                .clone()
                .map_or(Value::Null, Value::String),
        ),
        // A child run never gets more than its parent; a same-named user profile only narrows.
        ("agents", "profiles") => Effect::Narrows,
        ("checkpoints", "max_file_bytes") => at_least(value, user.checkpoints.max_file_bytes),
        // A hook runs a command with the person's authority, outside the sandbox.
        ("hooks", event) if super::HOOK_EVENTS.contains(&event) => non_empty_list(value),
        ("providers", name) => {
            let user_value = serde_json::to_value(&user.providers)
                .ok()
                .and_then(|v| v.get(name).cloned())
                .unwrap_or(Value::Null);
            differs(value, &user_value)
        }
        _ => return None,
    };
    Some(e)
}

/// [`effect`], failing closed: an unclassified field widens.
pub fn effect_or_widens(section: &str, field: &str, value: &Value, user: &Settings) -> Effect {
    effect(section, field, value, user).unwrap_or(Effect::Widens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> Settings {
        let mut s = Settings::default();
        s.exec.network = super::super::NetworkSetting::Off;
        s.exec.env_exclude = vec!["DB_URL".into()];
        s.tools.disabled = vec!["execute".into()];
        s
    }

    fn eff(section: &str, field: &str, v: Value) -> Effect {
        effect(section, field, &v, &user()).unwrap()
    }

    #[test]
    fn agent_fields() {
        assert_eq!(
            eff("agent", "compaction_threshold", json!(0.3)),
            Effect::Neutral
        );
        assert_eq!(eff("agent", "keep_recent_turns", json!(9)), Effect::Neutral);
        assert_eq!(eff("agent", "summary_model", json!("m")), Effect::Widens);
        assert_eq!(eff("agent", "summary_model", Value::Null), Effect::Neutral);
    }

    #[test]
    fn checkpoint_size_cap_may_only_be_raised_by_an_untrusted_project() {
        let user = Settings::default().checkpoints.max_file_bytes;
        assert_eq!(
            eff("checkpoints", "max_file_bytes", json!(user * 4)),
            Effect::Narrows
        );
        assert_eq!(
            eff("checkpoints", "max_file_bytes", json!(user)),
            Effect::Narrows
        );
        assert_eq!(
            eff("checkpoints", "max_file_bytes", json!(1024)),
            Effect::Widens
        );
    }

    #[test]
    fn every_settings_field_is_classified() {
        let all = serde_json::to_value(Settings::default()).unwrap();
        for (section, fields) in all.as_object().unwrap() {
            for (field, value) in fields.as_object().unwrap() {
                assert!(
                    effect(section, field, value, &Settings::default()).is_some(),
                    "{section}.{field} has no authority rule: add it to `effect`"
                );
            }
        }
        assert_eq!(effect("exec", "future_field", &json!(1), &user()), None);
        assert!(effect_or_widens("exec", "future_field", &json!(1), &user()).widens());
    }

    #[test]
    fn tools_enabled_widens_by_keys_the_user_does_not_enable() {
        assert_eq!(
            eff("tools", "enabled", json!(["filesystem"])),
            Effect::Narrows
        );
        assert_eq!(eff("tools", "enabled", json!([])), Effect::Narrows);
        assert_eq!(
            eff("tools", "enabled", json!(["filesystem", "secret_tool"])),
            Effect::WidensPartly(json!(["filesystem"]))
        );
        let mut u = user();
        u.tools.enabled = vec!["filesystem".into()];
        assert!(
            effect("tools", "enabled", &json!(["execute"]), &u)
                .unwrap()
                .widens()
        );
    }

    #[test]
    fn tools_disabled_must_keep_the_users_disabled_keys() {
        assert_eq!(
            eff("tools", "disabled", json!(["execute", "ls"])),
            Effect::Narrows
        );
        assert_eq!(
            eff("tools", "disabled", json!(["grep"])),
            Effect::WidensPartly(json!(["execute", "grep"]))
        );
        assert_eq!(
            eff("tools", "disabled", json!([])),
            Effect::WidensPartly(json!(["execute"]))
        );
    }

    #[test]
    fn sandbox_kind_widens_when_it_differs() {
        assert_eq!(eff("sandbox", "kind", json!("local")), Effect::Neutral);
        assert_eq!(eff("sandbox", "kind", json!("e2b")), Effect::Widens);
        assert_eq!(eff("sandbox", "kind", json!("daytona")), Effect::Widens);
    }

    #[test]
    fn remote_sandbox_settings_widen_when_they_differ() {
        assert_eq!(eff("sandbox", "daytona", json!(null)), Effect::Neutral);
        assert_eq!(
            eff("sandbox", "daytona", json!({"url": "https://x"})),
            Effect::Widens
        );
        assert_eq!(eff("sandbox", "e2b", json!({"key": "k"})), Effect::Widens);
        let mut u = user();
        u.sandbox.e2b = Some(json!({"key": "k"}));
        assert_eq!(
            effect("sandbox", "e2b", &json!({"key": "k"}), &u),
            Some(Effect::Neutral)
        );
    }

    #[test]
    fn auto_approve_writes_widens_only_when_turned_on() {
        assert_eq!(
            eff("confirm", "auto_approve_writes", json!(true)),
            Effect::Widens
        );
        assert_eq!(
            eff("confirm", "auto_approve_writes", json!(false)),
            Effect::Narrows
        );
        let mut u = user();
        u.confirm.auto_approve_writes = true;
        assert_eq!(
            effect("confirm", "auto_approve_writes", &json!(true), &u),
            Some(Effect::Narrows)
        );
    }

    #[test]
    fn network_widens_only_when_the_user_level_is_off() {
        assert_eq!(eff("exec", "network", json!(true)), Effect::Widens);
        assert_eq!(eff("exec", "network", json!(false)), Effect::Narrows);
        assert_eq!(
            effect("exec", "network", &json!(true), &Settings::default()),
            Some(Effect::Narrows)
        );
    }

    #[test]
    fn writable_roots_widen_when_any_is_named() {
        assert_eq!(
            eff("exec", "writable_roots", json!(["/p/build"])),
            Effect::Widens
        );
        assert_eq!(eff("exec", "writable_roots", json!([])), Effect::Narrows);
    }

    #[test]
    fn env_include_widens_when_any_is_named() {
        assert_eq!(
            eff("exec", "env_include", json!(["AWS_SECRET_ACCESS_KEY"])),
            Effect::Widens
        );
        assert_eq!(eff("exec", "env_include", json!([])), Effect::Narrows);
    }

    #[test]
    fn expose_credentials_widens_when_any_is_named() {
        assert_eq!(
            eff("exec", "expose_credentials", json!(["~/.aws"])),
            Effect::Widens
        );
        assert_eq!(
            eff("exec", "expose_credentials", json!([])),
            Effect::Narrows
        );
    }

    #[test]
    fn env_exclude_must_keep_the_users_exclusions() {
        assert_eq!(
            eff("exec", "env_exclude", json!(["DB_URL", "X"])),
            Effect::Narrows
        );
        assert_eq!(
            eff("exec", "env_exclude", json!([])),
            Effect::WidensPartly(json!(["DB_URL"]))
        );
    }

    #[test]
    fn a_project_provider_widens_unless_the_user_level_has_it() {
        let entry = json!({"kind": "openai-chat", "base_url": "http://evil.test/v1", "model": "m"});
        assert_eq!(eff("providers", "local", entry.clone()), Effect::Widens);
        assert_eq!(eff("providers", "default", json!("local")), Effect::Widens);
        let mut u = user();
        u.providers = serde_json::from_value(json!({"default": "local", "local": entry})).unwrap();
        assert_eq!(
            effect(
                "providers",
                "local",
                &json!({"kind": "openai-chat", "base_url": "http://evil.test/v1", "model": "m"}),
                &u
            ),
            Some(Effect::Neutral)
        );
        assert_eq!(
            effect("providers", "default", &json!("local"), &u),
            Some(Effect::Neutral)
        );
        assert_eq!(
            effect(
                "providers",
                "local",
                &json!({"kind": "openai-chat", "base_url": "http://other.test/v1", "model": "m"}),
                &u
            ),
            Some(Effect::Widens)
        );
    }

    #[test]
    fn max_processes_widens_only_above_the_user_level() {
        assert_eq!(eff("exec", "max_processes", json!(4097)), Effect::Widens);
        assert_eq!(eff("exec", "max_processes", json!(4096)), Effect::Narrows);
        assert_eq!(eff("exec", "max_processes", json!(64)), Effect::Narrows);
        let mut u = user();
        u.exec.max_processes = 100;
        assert!(
            effect("exec", "max_processes", &json!(200), &u)
                .unwrap()
                .widens()
        );
    }

    #[test]
    fn agent_time_limits_widen_only_above_the_user_level() {
        for field in [
            "step_timeout_secs",
            "keepalive_timeout_secs",
            "idle_timeout_secs",
        ] {
            let mut u = user();
            u.agent.step_timeout_secs = 100;
            u.agent.keepalive_timeout_secs = 100;
            u.agent.idle_timeout_secs = 100;
            let e = |v: u64| effect("agent", field, &json!(v), &u).unwrap();
            assert_eq!(
                (e(1), e(100), e(101), e(86_400)),
                (
                    Effect::Narrows,
                    Effect::Narrows,
                    Effect::Widens,
                    Effect::Widens
                ),
                "{field}"
            );
        }
    }

    #[test]
    fn protected_paths_a_project_may_add_but_not_remove() {
        assert_eq!(
            eff("exec", "protected_paths", json!(["Makefile"])),
            Effect::Narrows
        );
        assert_eq!(
            eff("exec", "unprotected_paths", json!([".git/hooks"])),
            Effect::Widens
        );
        assert_eq!(eff("exec", "unprotected_paths", json!([])), Effect::Narrows);
        // The person's own additions cannot be dropped by a project's list.
        let mut user = Settings::default();
        user.exec.protected_paths = vec!["Makefile".into()];
        assert_eq!(
            effect("exec", "protected_paths", &json!([]), &user),
            Some(Effect::WidensPartly(json!(["Makefile"])))
        );
        assert_eq!(
            effect("exec", "protected_paths", &json!(["build.rs"]), &user),
            Some(Effect::WidensPartly(json!(["Makefile", "build.rs"])))
        );
        assert_eq!(
            effect(
                "exec",
                "protected_paths",
                &json!(["build.rs", "Makefile"]),
                &user
            ),
            Some(Effect::Narrows)
        );
        assert_eq!(
            effect("exec", "namespaces", &json!(false), &Settings::default()),
            Some(Effect::Widens)
        );
        assert_eq!(eff("exec", "namespaces", json!(true)), Effect::Narrows);
    }

    #[test]
    fn project_hooks_widen_when_any_is_given() {
        assert_eq!(
            eff("hooks", "pre_tool_call", json!([{"command": "x"}])),
            Effect::Widens
        );
        assert_eq!(eff("hooks", "run_end", json!([])), Effect::Narrows);
        assert_eq!(effect("hooks", "PreToolUse", &json!([]), &user()), None);
    }

    #[test]
    fn timings_are_neutral() {
        assert_eq!(eff("exec", "default_timeout_ms", json!(5)), Effect::Neutral);
        assert_eq!(
            eff("exec", "default_timeout_ms", json!(9_999_999)),
            Effect::Neutral
        );
        assert_eq!(eff("exec", "heartbeat_secs", json!(1)), Effect::Neutral);
    }
}
