//! `agents`: named subagent profiles for the `agent` tool (`crate::tools::agent`).
//!
//! ```json
//! "agents": { "profiles": { "reviewer": {
//!     "description": "Reads code and reports problems",
//!     "tools": ["read_file", "grep", "glob", "ls"],
//!     "prompt": "You review code. Report problems with file and line; change nothing." } } }
//! ```
//!
//! A profile names a child run's tools (at most the parent's: the `agent` tool intersects them
//! with the parent run's tool set, so no profile can give a child more than its parent has) and
//! the text that joins the child's system prompt.
//!
//! Layering (pure) is by profile, not by field: the user file's profiles are kept; a project
//! file's profile of a new name is added (marked as the project's), and one of a name the user
//! level defines can only narrow it: its tools are intersected with the user's, its description
//! and prompt are the user's. Either way a project profile only ever narrows, so it applies at
//! once, trusted or not ([`super::authority`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use super::parse::Cleaned;

/// Longest profile name.
pub const MAX_PROFILE_NAME: usize = 64;
/// Longest profile description (characters).
pub const MAX_PROFILE_DESCRIPTION: usize = 1_000;
/// Longest profile prompt (characters).
pub const MAX_PROFILE_PROMPT: usize = 20_000;
/// Most tool names in a profile.
pub const MAX_PROFILE_TOOLS: usize = 500;

/// One profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct AgentProfile {
    /// What the profile is for (listed in the `agent` tool's description).
    #[serde(default)]
    pub description: String,
    /// The tools a child of this profile may use (further narrowed by the parent's set and by
    /// the call's own `tools`); absent: the parent's tools.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Text that joins the child's system prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Whether the profile comes from the project file alone (set by layering, never read).
    #[serde(skip)]
    #[ts(skip)]
    pub from_project: bool,
}

/// Most children of one run at once, by default (`agents.max_concurrent`).
pub const DEFAULT_MAX_CONCURRENT: u32 = 4;
/// The highest `agents.max_concurrent` accepted.
pub const MAX_MAX_CONCURRENT: u32 = 16;

/// `agents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct AgentsSettings {
    /// Named profiles (`agent` tool argument `profile`).
    pub profiles: BTreeMap<String, AgentProfile>,
    /// Most child runs of one run at once (1 to 16): more `agent` calls of a turn wait for a place.
    pub max_concurrent: u32,
}

impl Default for AgentsSettings {
    fn default() -> Self {
        Self {
            profiles: BTreeMap::new(),
            max_concurrent: DEFAULT_MAX_CONCURRENT,
        }
    }
}

/// Whether `name` may name a profile: 1 to 64 of `A-Z a-z 0-9 _ -`. Pure.
pub fn valid_profile_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PROFILE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why `agents.profiles` (already type-checked) is refused, if it is. Pure.
pub(super) fn invalid_profiles(value: &Value) -> Option<String> {
    let profiles: BTreeMap<String, AgentProfile> = serde_json::from_value(value.clone()).ok()?;
    for (name, p) in &profiles {
        let why = if !valid_profile_name(name) {
            Some(format!(
                "1 to {MAX_PROFILE_NAME} letters, digits, `_` or `-` name a profile"
            ))
        } else if p.description.chars().count() > MAX_PROFILE_DESCRIPTION {
            Some(format!(
                "`description` is longer than {MAX_PROFILE_DESCRIPTION} characters"
            ))
        } else if p
            .prompt
            .as_ref()
            .is_some_and(|t| t.chars().count() > MAX_PROFILE_PROMPT)
        {
            Some(format!(
                "`prompt` is longer than {MAX_PROFILE_PROMPT} characters"
            ))
        } else if let Some(tools) = &p.tools {
            if tools.len() > MAX_PROFILE_TOOLS {
                Some(format!("`tools` names more than {MAX_PROFILE_TOOLS} tools"))
            } else if tools.iter().any(|t| t.trim().is_empty() || t.len() > 200) {
                Some("every entry of `tools` must be a tool name".to_string())
            } else {
                None
            }
        } else {
            None
        };
        if let Some(why) = why {
            return Some(format!(
                "profile `{}`: {why}; using the default {{}}",
                aibuddy_common::term::line(name)
            ));
        }
    }
    None
}

impl AgentsSettings {
    /// The project file's `agents` layered over these (the user level's): see the module docs.
    /// `sets_max`: the project file sets `max_concurrent` (gated already: an untrusted project's
    /// value above the user level's was dropped), which then applies.
    pub fn narrow_with_project(&mut self, project: AgentsSettings, sets_max: bool) {
        if sets_max {
            self.max_concurrent = project.max_concurrent;
        }
        for (name, theirs) in project.profiles {
            match self.profiles.get_mut(&name) {
                Some(mine) => {
                    mine.tools = match (mine.tools.take(), theirs.tools) {
                        (Some(a), Some(b)) => {
                            Some(a.into_iter().filter(|t| b.contains(t)).collect())
                        }
                        (Some(a), None) => Some(a),
                        (None, b) => b,
                    };
                }
                None => {
                    self.profiles.insert(
                        name,
                        AgentProfile {
                            from_project: true,
                            ..theirs
                        },
                    );
                }
            }
        }
    }
}

/// The `agents` section of one cleaned file, taken out of its map (decoded field by field
/// already, so this decodes), and whether it sets `max_concurrent`.
pub(super) fn take(cleaned: &mut Cleaned) -> Option<(AgentsSettings, bool)> {
    match cleaned.map.remove("agents") {
        Some(v @ Value::Object(_)) => {
            let sets_max = v.get("max_concurrent").is_some();
            Some((serde_json::from_value(v).unwrap_or_default(), sets_max))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agents(v: Value) -> AgentsSettings {
        serde_json::from_value(json!({ "profiles": v })).unwrap()
    }

    #[test]
    fn a_project_profile_adds_a_name_or_narrows_the_users_never_widens() {
        let mut user = agents(json!({
            "reviewer": {"description": "d", "tools": ["read_file", "grep"], "prompt": "be careful"},
            "open": {"description": "all tools"}
        }));
        user.narrow_with_project(agents(json!({
            "reviewer": {"description": "evil", "tools": ["read_file", "execute"], "prompt": "run rm"},
            "open": {"tools": ["ls"]},
            "mine": {"tools": ["grep"], "prompt": "p"}
        })), false);
        let r = &user.profiles["reviewer"];
        assert_eq!(r.tools, Some(vec!["read_file".to_string()]));
        assert_eq!(
            (r.description.as_str(), r.prompt.as_deref()),
            ("d", Some("be careful"))
        );
        assert!(!r.from_project);
        assert_eq!(user.profiles["open"].tools, Some(vec!["ls".to_string()]));
        assert!(user.profiles["mine"].from_project);
    }

    #[test]
    fn profiles_are_validated() {
        assert_eq!(
            invalid_profiles(&json!({"ok-name_1": {"tools": ["ls"]}})),
            None
        );
        assert!(
            invalid_profiles(&json!({"bad name": {}}))
                .unwrap()
                .contains("name a profile")
        );
        assert!(
            invalid_profiles(&json!({"a": {"tools": [""]}}))
                .unwrap()
                .contains("tool name")
        );
        let long = "x".repeat(MAX_PROFILE_PROMPT + 1);
        assert!(
            invalid_profiles(&json!({"a": {"prompt": long}}))
                .unwrap()
                .contains("`prompt`")
        );
        assert!(serde_json::from_value::<AgentProfile>(json!({"system": "x"})).is_err());
    }
}
