//! Layering of `approvals` (pure): the one section whose project value is not merged field by
//! field. The effective approvals are:
//!
//! - mode: the person's per-project choice (`crate::approvals::record`), else the user file's
//!   `approvals.mode`, else `ask`; then narrowed by the project file's `approvals.mode` when that
//!   is stricter. A project's wider mode is ignored, trusted or not ([`MODE_USER_ONLY`]).
//! - rules: the user file's, then the per-project record's, then the project file's `ask` and
//!   `deny` rules, and its `allow` rules only when the project is trusted ([`RULE_UNTRUSTED`];
//!   they are listed among the fields trusting grants). Rules are added, never replaced: a project
//!   cannot drop the person's `deny` rules.
//!
//! When the data directory lies inside the project (`LayerContext::user_trusted` false), the
//! per-project record is the project's to write too: only its narrowing parts apply.

use serde_json::{Map, Value};

use aibuddy_common::located::Position;

use super::parse::Cleaned;
use super::{ApprovalsSettings, SettingsProblem, SettingsText, WideningField};
use crate::approvals::record::ProjectApprovals;
use crate::approvals::{ApprovalMode, ApprovalRule, RuleDecision};

/// The problem of a project's `approvals.mode` wider than the person's.
pub const MODE_USER_ONLY: &str = "ignored: a project may only narrow the approval mode (auto -> ask -> read-only); only you choose a wider one (`aibuddy trust --approvals MODE`)";

/// The problem of a project's `allow` rules in an untrusted project.
pub const RULE_UNTRUSTED: &str = "its `allow` rules are ignored: the project is not trusted (run `aibuddy trust`); its `ask` and `deny` rules apply";

/// A project file's `approvals` section, taken out of its clean map before the generic merge.
pub(super) struct Taken {
    map: Map<String, Value>,
    mode_at: Option<Position>,
    rules_at: Option<Position>,
}

pub(super) fn take(cleaned: &mut Cleaned) -> Option<Taken> {
    let mode_at = cleaned.position("approvals", "mode");
    let rules_at = cleaned.position("approvals", "rules");
    match cleaned.map.remove("approvals") {
        Some(Value::Object(map)) => Some(Taken {
            map,
            mode_at,
            rules_at,
        }),
        _ => None,
    }
}

/// What the user level gives, before the project file.
pub(super) struct UserLevel<'a> {
    /// The user file's approvals (defaults when it has none).
    pub settings: ApprovalsSettings,
    /// Whether the user file names `approvals.mode`.
    pub file_sets_mode: bool,
    pub record: Option<&'a ProjectApprovals>,
    /// False when the data directory lies inside the project.
    pub trusted: bool,
}

fn problem(file: &str, at: Option<Position>, field: &str, message: &str) -> SettingsProblem {
    SettingsProblem {
        file: file.to_string(),
        line: at.map(|p| p.line),
        column: at.map(|p| p.column),
        field: field.to_string(),
        message: message.to_string(),
    }
}

/// The effective approvals (see the module docs).
pub(super) fn combine(
    user: UserLevel<'_>,
    project: Option<(&SettingsText, Taken)>,
    project_trusted: bool,
    problems: &mut Vec<SettingsProblem>,
    widening: &mut Vec<WideningField>,
) -> ApprovalsSettings {
    let mut out = user.settings;
    out.chosen = user.file_sets_mode;
    if let Some(record) = user.record {
        if let Some(mode) = record.mode {
            if user.trusted || mode.at_least_as_strict_as(out.mode) {
                out.mode = mode;
                out.chosen = true;
            }
        }
        out.rules.extend(
            record
                .rules
                .iter()
                .filter(|r| user.trusted || r.decision != RuleDecision::Allow)
                .cloned(),
        );
    }
    let Some((file, taken)) = project else {
        return out;
    };
    if let Some(value) = taken.map.get("mode") {
        match serde_json::from_value::<ApprovalMode>(value.clone()) {
            Ok(mode) if mode == out.mode => {}
            Ok(mode) if mode.at_least_as_strict_as(out.mode) => {
                out.mode = mode;
                out.project_narrows = Some(mode);
            }
            _ => problems.push(problem(
                &file.file,
                taken.mode_at,
                "approvals.mode",
                MODE_USER_ONLY,
            )),
        }
    }
    if let Some(value) = taken.map.get("rules") {
        let rules: Vec<ApprovalRule> = serde_json::from_value(value.clone()).unwrap_or_default();
        let allows: Vec<&ApprovalRule> = rules
            .iter()
            .filter(|r| r.decision == RuleDecision::Allow)
            .collect();
        if !allows.is_empty() {
            widening.push(WideningField {
                file: file.file.clone(),
                line: taken.rules_at.map(|p| p.line),
                field: "approvals.rules".to_string(),
                value: serde_json::to_value(&allows).unwrap_or(Value::Null),
            });
            if !project_trusted {
                problems.push(problem(
                    &file.file,
                    taken.rules_at,
                    "approvals.rules",
                    RULE_UNTRUSTED,
                ));
            }
        }
        out.rules.extend(
            rules
                .into_iter()
                .filter(|r| project_trusted || r.decision != RuleDecision::Allow),
        );
    }
    out
}
