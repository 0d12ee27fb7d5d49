//! Per-run discovery state on the active-tools path.
//!
//! Each agent run starts with no activated deferred tools. `tool_search` activates the tools it
//! returns for the following steps of that run. When the context is rebuilt (after compaction), the
//! messages being sent are scanned: a deferred tool referenced by a retained historical tool call
//! (or listed by a retained `tool_search` result) is reactivated automatically; once that reference
//! has left the context the tool needs rediscovery. Everything here is pure.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
/// The minimal shape of one message being sent to the model, as far as discovery cares: the tool
/// calls it carries (by name) and, for retained `tool_search` results, the tools they activated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextMessage {
    /// Names of the tools called in this message (assistant tool calls).
    #[serde(default)]
    pub tool_calls: Vec<String>,
    /// Tools a retained `tool_search` result in this message activated.
    #[serde(default)]
    pub activated: Vec<String>,
}

impl ContextMessage {
    pub fn calls(names: &[&str]) -> Self {
        Self {
            tool_calls: names.iter().map(|s| s.to_string()).collect(),
            activated: Vec::new(),
        }
    }
    pub fn search_result(activated: &[&str]) -> Self {
        Self {
            tool_calls: vec![super::TOOL_SEARCH.to_string()],
            activated: activated.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// Which deferred tools one run has activated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryState {
    activated: BTreeSet<String>,
}

impl DiscoveryState {
    /// A new run: nothing activated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Activate tools for the following steps. Returns the names that were not active before.
    pub fn activate<I, S>(&mut self, names: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut added = Vec::new();
        for n in names {
            let n = n.into();
            if self.activated.insert(n.clone()) {
                added.push(n);
            }
        }
        added
    }

    pub fn is_activated(&self, name: &str) -> bool {
        self.activated.contains(name)
    }

    pub fn activated(&self) -> &BTreeSet<String> {
        &self.activated
    }

    /// The state after the context was rebuilt from `messages` (e.g. after compaction): exactly the
    /// `deferrable` tools that a retained message still references. Activations whose reference
    /// left the context are dropped; the model must rediscover those tools.
    pub fn rebuilt_from(messages: &[ContextMessage], deferrable: &BTreeSet<String>) -> Self {
        let activated = referenced(messages)
            .into_iter()
            .filter(|n| deferrable.contains(n))
            .collect();
        Self { activated }
    }
}

/// Every tool name a retained message references (calls and retained search activations).
pub fn referenced(messages: &[ContextMessage]) -> BTreeSet<String> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().chain(m.activated.iter()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn new_run_starts_empty_and_activation_is_idempotent() {
        let mut s = DiscoveryState::new();
        assert!(s.activated().is_empty());
        assert_eq!(s.activate(["a", "b"]), vec!["a", "b"]);
        assert_eq!(s.activate(["b", "c"]), vec!["c"]);
        assert!(s.is_activated("a") && s.is_activated("c"));
    }

    #[test]
    fn retained_call_reactivates_deferred_tool() {
        let deferrable = set(&["mcp__gh__create_issue", "mcp__gh__list_issues"]);
        let msgs = vec![
            ContextMessage::calls(&["read_file"]),
            ContextMessage::calls(&["mcp__gh__create_issue"]),
        ];
        let s = DiscoveryState::rebuilt_from(&msgs, &deferrable);
        // Only the deferrable tool still referenced comes back; core tools are not "activated".
        assert_eq!(s.activated(), &set(&["mcp__gh__create_issue"]));
    }

    #[test]
    fn reference_gone_means_rediscovery() {
        let deferrable = set(&["mcp__gh__create_issue"]);
        let mut live = DiscoveryState::new();
        live.activate(["mcp__gh__create_issue"]);
        // After compaction the call that used it was summarised away.
        let msgs = vec![ContextMessage::calls(&["read_file"])];
        let s = DiscoveryState::rebuilt_from(&msgs, &deferrable);
        assert!(!s.is_activated("mcp__gh__create_issue"));
    }

    #[test]
    fn retained_search_result_keeps_its_activations() {
        let deferrable = set(&["mcp__a__x", "mcp__a__y", "mcp__a__z"]);
        let msgs = vec![ContextMessage::search_result(&["mcp__a__x", "mcp__a__y"])];
        let s = DiscoveryState::rebuilt_from(&msgs, &deferrable);
        assert_eq!(s.activated(), &set(&["mcp__a__x", "mcp__a__y"]));
    }

    #[test]
    fn tools_no_longer_deferrable_are_not_activated() {
        // The server disconnected or the gates no longer defer it.
        let msgs = vec![ContextMessage::calls(&["mcp__gone__t"])];
        let s = DiscoveryState::rebuilt_from(&msgs, &BTreeSet::new());
        assert!(s.activated().is_empty());
    }
}
