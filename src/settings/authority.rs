//! Which project settings fields widen authority (pure). A project folder's own
//! `.aibuddy/settings.json` is untrusted: a field that would give commands, tools or the sandbox
//! more than the person's user level gives takes effect only after the person trusts the project
//! (`crate::trust`). Fields that only narrow apply at once.
//!
//! The rule of each field is a column of the settings field table ([`super::fields::FIELDS`]:
//! one row per key, with its meaning); each rule's sentence is
//! [`AuthorityRule::describe`](super::fields::AuthorityRule::describe). This module only decides a
//! rule ([`decide`]) for a value against the user level's value of the same key. A key without a
//! row (a new field nobody classified yet) counts as widening ([`effect_or_widens`]), so
//! forgetting a row fails closed; the table's tests make the omission visible. A value the rule
//! cannot read (the user level's included) widens too.
//!
//! Beyond the rule: `approvals` and `hooks` are not merged field by field (`settings/approvals.rs`,
//! `settings/hooks.rs`: a project's rules and hooks are added after the person's, never replace
//! them, and project hooks' scripts are pinned into the trust digest); a user-only field
//! (`FieldSpec::user_only`) is dropped from a project file before any rule (`layer`).

use serde_json::Value;

use super::fields::AuthorityRule;
use super::{NetworkSetting, Settings};
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
/// for a field without a row in the table (the caller treats it as widening).
///
/// `value` has already been type-checked, and `exec.writable_roots` resolved, by the loader.
pub fn effect(section: &str, field: &str, value: &Value, user: &Settings) -> Option<Effect> {
    let spec = super::fields::find(section, field)?;
    let user_value = serde_json::to_value(user)
        .ok()
        .and_then(|u| u.get(section)?.get(field).cloned())
        .unwrap_or(Value::Null);
    Some(decide(spec.rule, value, &user_value))
}

/// What `rule` makes of the project value `value` over the user level's value `user` of the same
/// key (`null` when unset there). `value` has been type-checked by the loader; a user-level value
/// the rule cannot read (not the shape the key has) makes the project value widen.
pub fn decide(rule: AuthorityRule, value: &Value, user: &Value) -> Effect {
    let user_u64 = || user.as_u64();
    match rule {
        AuthorityRule::Neutral => Effect::Neutral,
        AuthorityRule::WidensWhenDiffers => differs(value, user),
        AuthorityRule::WidensWhenTrue => turns_on(value, user.as_bool().unwrap_or(false)),
        AuthorityRule::WidensWhenFalse => match value.as_bool() {
            Some(false) if user.as_bool().unwrap_or(true) => Effect::Widens,
            _ => Effect::Narrows,
        },
        AuthorityRule::WidensWhenNonEmpty => non_empty_list(value),
        AuthorityRule::WidensAboveUser => user_u64().map_or(Effect::Widens, |u| at_most(value, u)),
        AuthorityRule::WidensBelowUser => user_u64().map_or(Effect::Widens, |u| at_least(value, u)),
        AuthorityRule::WidensByDroppingUserEntries if user.is_array() => {
            superset_of(value, &strings(user))
        }
        AuthorityRule::WidensByEntriesBeyondUser if user.is_array() => {
            subset_of(value, &strings(user))
        }
        AuthorityRule::WidensByDroppingUserEntries | AuthorityRule::WidensByEntriesBeyondUser => {
            Effect::Widens
        }
        AuthorityRule::WidensByNetworkBeyondUser => {
            // A user level that cannot be read allows nothing: every project host widens.
            let user = serde_json::from_value::<NetworkSetting>(user.clone())
                .unwrap_or(NetworkSetting::Off);
            super::network::effect(value, &user)
        }
        AuthorityRule::WidensByWiderMode => {
            let project = serde_json::from_value::<ApprovalMode>(value.clone());
            let user = serde_json::from_value::<ApprovalMode>(user.clone());
            match (project, user) {
                (Ok(p), Ok(u)) if p.at_least_as_strict_as(u) => Effect::Narrows,
                _ => Effect::Widens,
            }
        }
        AuthorityRule::WidensByAllowRules => {
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
    }
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
                    "{section}.{field} has no authority rule: add its row to `settings::fields::FIELDS`"
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
    fn container_settings_widen_when_they_differ() {
        let mut u = user();
        u.sandbox.container = Some(json!({"image": "debian:12"}));
        let same = json!({"image": "debian:12"});
        assert_eq!(
            effect("sandbox", "container", &same, &u),
            Some(Effect::Neutral)
        );
        let other = json!({"image": "evil:latest"});
        assert_eq!(
            effect("sandbox", "container", &other, &u),
            Some(Effect::Widens)
        );
        assert_eq!(
            eff("sandbox", "container", json!({"project": "bind"})),
            Effect::Widens
        );
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
    fn a_user_level_value_the_rule_cannot_read_makes_the_project_value_widen() {
        let null = Value::Null;
        for (rule, value) in [
            (AuthorityRule::WidensAboveUser, json!(1)),
            (AuthorityRule::WidensBelowUser, json!(1 << 30)),
            (AuthorityRule::WidensWhenDiffers, json!("x")),
            (AuthorityRule::WidensWhenTrue, json!(true)),
            (AuthorityRule::WidensWhenFalse, json!(false)),
            (AuthorityRule::WidensByNetworkBeyondUser, json!(true)),
            (AuthorityRule::WidensByWiderMode, json!("read-only")),
            (AuthorityRule::WidensByDroppingUserEntries, json!(["a"])),
            (AuthorityRule::WidensByEntriesBeyondUser, json!([])),
        ] {
            assert!(decide(rule, &value, &null).widens(), "{rule:?}");
        }
        assert_eq!(
            decide(AuthorityRule::Neutral, &json!(1), &null),
            Effect::Neutral
        );
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
