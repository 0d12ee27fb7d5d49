//! [`Stage`]: where in a call's lifecycle a failure happened, the one definition every crate uses.
//!
//! The stage lets recovery be chosen by stage rather than by parsing text (seed: "The lifecycle
//! also gives failures a precise location"). Crates with richer errors (sandbox, exec, MCP) give
//! each error a `Stage`; the core turns those errors into tool errors with `From`.
//!
//! String forms (`Display`, `AsRefStr`, `FromStr`, serde) are the variant names, e.g.
//! `"Authorization"`: they are stored in SQLite and sent to the UI, so they never change.
//! Parsing ignores ASCII case.

use serde::{Deserialize, Serialize};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr, VariantArray};

/// Where in a call's lifecycle a failure happened.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    Display,
    AsRefStr,
    IntoStaticStr,
    EnumString,
    VariantArray,
)]
#[strum(ascii_case_insensitive)]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
pub enum Stage {
    /// The capability exists but was not activated (unknown or inactive tool name).
    Discovery,
    /// Arguments do not satisfy the tool's schema or its semantic rules.
    Parameters,
    /// The user, workspace, sandbox or host does not permit the effect.
    Authorization,
    /// Timeout, cancellation, missing dependency, partially applied effect.
    Execution,
    /// Raw output exists but projecting or compacting it failed.
    Projection,
    /// The call completed but reading back the effect did not match.
    Verification,
}

impl Stage {
    /// Every stage, in lifecycle order.
    pub const ALL: [Stage; 6] = [
        Stage::Discovery,
        Stage::Parameters,
        Stage::Authorization,
        Stage::Execution,
        Stage::Projection,
        Stage::Verification,
    ];

    /// The stable string form, e.g. `"Execution"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a string form, ignoring ASCII case; `None` for anything else.
    pub fn parse(s: &str) -> Option<Stage> {
        s.parse().ok()
    }

    /// A short hint shown to the model with an error of this stage: what kind of recovery fits.
    pub fn model_hint(self) -> &'static str {
        match self {
            Stage::Discovery => {
                "The tool is not active in this step. Use one of the listed tools, or tool_search to activate a deferred one."
            }
            Stage::Parameters => {
                "Fix the arguments to match the tool's schema and retry; do not repeat the same call unchanged."
            }
            Stage::Authorization => {
                "The effect is not permitted here (outside the project, or declined by the person). Do not retry the same call; choose another approach or ask the person."
            }
            Stage::Execution => {
                "The call did not complete. Inspect what may have been partially applied before any retry."
            }
            Stage::Projection => {
                "The raw result exists but could not be presented; recover it with view_tool_call."
            }
            Stage::Verification => {
                "The call ran but its effect does not match what was intended. Read the affected state and correct it."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored and wire forms: changing one breaks existing databases and the UI.
    const FORMS: [(Stage, &str); 6] = [
        (Stage::Discovery, "Discovery"),
        (Stage::Parameters, "Parameters"),
        (Stage::Authorization, "Authorization"),
        (Stage::Execution, "Execution"),
        (Stage::Projection, "Projection"),
        (Stage::Verification, "Verification"),
    ];

    #[test]
    fn string_forms_are_stable_in_every_representation() {
        assert_eq!(Stage::ALL.len(), Stage::VARIANTS.len());
        assert_eq!(Stage::ALL.as_slice(), Stage::VARIANTS);
        for (stage, form) in FORMS {
            assert_eq!(stage.as_str(), form);
            assert_eq!(stage.as_ref(), form);
            assert_eq!(stage.to_string(), form);
            assert_eq!(
                serde_json::to_value(stage).unwrap(),
                serde_json::json!(form)
            );
            let back: Stage = serde_json::from_value(serde_json::json!(form)).unwrap();
            assert_eq!(back, stage);
        }
    }

    #[test]
    fn parsing_ignores_case_and_rejects_anything_else() {
        for (stage, form) in FORMS {
            assert_eq!(Stage::parse(form), Some(stage));
            assert_eq!(Stage::parse(&form.to_ascii_lowercase()), Some(stage));
            assert_eq!(Stage::parse(&form.to_ascii_uppercase()), Some(stage));
        }
        for bad in ["", "exec", "Discovery ", "stage", "Projections"] {
            assert_eq!(Stage::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn every_stage_has_a_distinct_hint() {
        let mut hints: Vec<&str> = Stage::ALL.iter().map(|s| s.model_hint()).collect();
        hints.sort();
        hints.dedup();
        assert_eq!(hints.len(), Stage::ALL.len());
    }
}
