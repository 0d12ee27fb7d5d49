//! The `agent` call's arguments and its profile turned into a [`ChildTask`] (pure).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::desk::ChildTask;
use crate::contract::ToolError;
use crate::settings::AgentProfile;

/// The task of a call from its (schema-checked) arguments and the settings' profiles. An unknown
/// profile is a Parameters error naming the known ones; the call's `tools` and the profile's are
/// intersected (each only narrows).
pub fn child_task(
    args: &Value,
    profiles: &BTreeMap<String, AgentProfile>,
) -> Result<ChildTask, ToolError> {
    let text = |k: &str| args[k].as_str().unwrap_or_default().trim().to_string();
    let (description, prompt) = (text("description"), text("prompt"));
    if description.is_empty() || prompt.is_empty() {
        return Err(ToolError::parameters(
            "invalid_arguments",
            "`description` and `prompt` must have text",
        ));
    }
    let asked: Option<BTreeSet<String>> = args["tools"].as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_string())
            .collect()
    });
    let profile_name = args["profile"].as_str().map(str::to_string);
    let profile = match &profile_name {
        None => None,
        Some(name) => Some(profiles.get(name).ok_or_else(|| {
            let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
            ToolError::parameters(
                "unknown_profile",
                format!(
                    "there is no agent profile `{name}` (known: {})",
                    if known.is_empty() {
                        "none; settings `agents.profiles` defines them".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?),
    };
    let from_profile: Option<BTreeSet<String>> =
        profile.and_then(|p| p.tools.as_ref().map(|t| t.iter().cloned().collect()));
    let tools = match (asked, from_profile) {
        (Some(a), Some(p)) => Some(a.intersection(&p).cloned().collect()),
        (a, p) => a.or(p),
    };
    Ok(ChildTask {
        description,
        prompt,
        tools,
        system: profile
            .and_then(|p| p.prompt.clone())
            .filter(|s| !s.trim().is_empty()),
        profile: profile_name,
    })
}

/// The child's tool set: the parent's tools (`parent`: every name the parent could call or
/// search) without `agent` (children start no children), narrowed to `asked` when given. Pure.
pub fn child_tools(
    parent: &BTreeSet<String>,
    asked: Option<&BTreeSet<String>>,
) -> BTreeSet<String> {
    parent
        .iter()
        .filter(|t| t.as_str() != super::TOOL_NAME)
        .filter(|t| asked.is_none_or(|a| a.contains(*t)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profiles() -> BTreeMap<String, AgentProfile> {
        serde_json::from_value(json!({
            "reviewer": {"description": "reads", "tools": ["read_file", "grep"], "prompt": "Only read."}
        }))
        .unwrap()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_and_profile_narrow_each_other() {
        let t = child_task(
            &json!({"description": " d ", "prompt": " do it ", "tools": ["grep", "execute"], "profile": "reviewer"}),
            &profiles(),
        )
        .unwrap();
        assert_eq!((t.description.as_str(), t.prompt.as_str()), ("d", "do it"));
        assert_eq!(t.tools, Some(set(&["grep"])));
        assert_eq!(t.system.as_deref(), Some("Only read."));
        let t = child_task(&json!({"description": "d", "prompt": "p"}), &profiles()).unwrap();
        assert_eq!((t.tools, t.system, t.profile), (None, None, None));
        let e = child_task(
            &json!({"description": "d", "prompt": "p", "profile": "nope"}),
            &profiles(),
        )
        .unwrap_err();
        assert_eq!(e.code, "unknown_profile");
        assert!(e.message.contains("reviewer"), "{}", e.message);
        let e = child_task(&json!({"description": " ", "prompt": "p"}), &profiles()).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
    }

    #[test]
    fn a_child_has_at_most_the_parents_tools_and_never_agent() {
        let parent = set(&["read_file", "execute", "agent", "grep"]);
        assert_eq!(
            child_tools(&parent, None),
            set(&["execute", "grep", "read_file"])
        );
        assert_eq!(
            child_tools(&parent, Some(&set(&["grep", "write_file", "agent"]))),
            set(&["grep"])
        );
    }
}
