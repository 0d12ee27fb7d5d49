//! The MCP count gates (seed: "MCP currently uses two count gates"). Pure: counts in, decision out.
//!
//! | Condition                                                    | Exposure policy               |
//! |--------------------------------------------------------------|-------------------------------|
//! | No server exceeds 10 tools and total count does not exceed 30 | schemas enter the active set  |
//! | One server exceeds 10 tools                                  | defer only that server's tools |
//! | Aggregate MCP count exceeds 30                               | defer all MCP tools            |
//!
//! The decision is one value consumed by both presentation strategies (provider-native deferral and
//! the app-side active-tools path); only schema presentation differs.
//!
//! A configured server still on its first connection has no tools to count yet. It is *pending*:
//! its tools are expected to be found through `tool_search` (which waits for it, bounded), so a
//! pending server alone makes `tool_search` offered ([`DeferDecision::offers_search`]) from the
//! first request on. Once connected it is counted like any other: when the gates leave it under
//! the limits, its tools join as active tools in a later step.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub const PER_SERVER_LIMIT: usize = 10;
pub const TOTAL_LIMIT: usize = 30;

/// Which MCP servers' tools are deferred behind `tool_search`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DeferDecision {
    /// Every MCP tool is deferred (aggregate count above the limit).
    pub all_mcp: bool,
    /// Servers whose tools are deferred.
    pub servers: BTreeSet<String>,
    /// Why, in words (shown by `tools list` and the UI).
    pub reasons: Vec<String>,
    /// Configured servers still on their first connection (tools not known yet): `tool_search`
    /// is offered for them and waits for them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub pending: BTreeSet<String>,
}

impl DeferDecision {
    pub fn defers(&self, server: &str) -> bool {
        self.all_mcp || self.servers.contains(server)
    }
    /// Why this server's tools are deferred, in words (None when they are not).
    pub fn reason_for(&self, server: &str) -> Option<String> {
        if self.all_mcp {
            return self.reasons.first().cloned();
        }
        let tag = format!("`{server}`");
        self.servers
            .contains(server)
            .then(|| self.reasons.iter().find(|r| r.contains(&tag)).cloned())
            .flatten()
    }

    pub fn any(&self) -> bool {
        self.all_mcp || !self.servers.is_empty()
    }

    /// Whether `tool_search` is offered: something is deferred, or a server is still connecting
    /// whose tools only a search (which waits for it) can bring in.
    pub fn offers_search(&self) -> bool {
        self.any() || !self.pending.is_empty()
    }

    /// The same decision with `pending` servers still on their first connection.
    pub fn with_pending(mut self, pending: BTreeSet<String>) -> Self {
        if !pending.is_empty() {
            let names: Vec<String> = pending.iter().map(|s| format!("`{s}`")).collect();
            self.reasons.push(format!(
                "MCP server{} {} still connecting: tool_search waits for {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                if names.len() == 1 {
                    "its tools"
                } else {
                    "their tools"
                }
            ));
        }
        self.pending = pending;
        self
    }
}

/// Apply the gates to the connected servers' tool counts.
pub fn decide(counts: &[(String, usize)]) -> DeferDecision {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let mut d = DeferDecision::default();
    if total > TOTAL_LIMIT {
        d.all_mcp = true;
        d.servers = counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(s, _)| s.clone())
            .collect();
        d.reasons.push(format!(
            "{total} MCP tools in all exceed {TOTAL_LIMIT}: every MCP tool is deferred"
        ));
        return d;
    }
    for (server, n) in counts {
        if *n > PER_SERVER_LIMIT {
            d.servers.insert(server.clone());
            d.reasons.push(format!(
                "server `{server}` has {n} tools (more than {PER_SERVER_LIMIT}): its tools are deferred"
            ));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: &[(&str, usize)]) -> Vec<(String, usize)> {
        v.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn small_catalog_is_direct() {
        let d = decide(&c(&[("a", 10), ("b", 10), ("c", 10)]));
        assert!(!d.any());
    }

    #[test]
    fn one_big_server_is_deferred_alone() {
        let d = decide(&c(&[("a", 11), ("b", 3)]));
        assert!(!d.all_mcp);
        assert!(d.defers("a"));
        assert!(!d.defers("b"));
    }

    #[test]
    fn aggregate_above_thirty_defers_all() {
        let d = decide(&c(&[("a", 10), ("b", 10), ("c", 10), ("d", 1)]));
        assert!(d.all_mcp);
        assert!(d.defers("a") && d.defers("d"));
    }

    #[test]
    fn reasons_name_the_gate() {
        let d = decide(&c(&[("a", 11), ("b", 3)]));
        assert_eq!(
            d.reason_for("a").as_deref(),
            Some("server `a` has 11 tools (more than 10): its tools are deferred")
        );
        assert_eq!(d.reason_for("b"), None);
        let all = decide(&c(&[("a", 20), ("b", 20)]));
        assert_eq!(
            all.reason_for("b").as_deref(),
            Some("40 MCP tools in all exceed 30: every MCP tool is deferred")
        );
    }

    #[test]
    fn a_pending_server_offers_search_without_deferring_anything() {
        let pending: BTreeSet<String> = ["slow".to_string()].into();
        let d = decide(&c(&[("a", 3)])).with_pending(pending);
        assert!(!d.any(), "nothing known is deferred");
        assert!(d.offers_search());
        assert!(!d.defers("slow") && !d.defers("a"));
        assert_eq!(
            d.reasons,
            vec!["MCP server `slow` still connecting: tool_search waits for its tools"]
        );
        assert!(!decide(&c(&[("a", 3)])).offers_search());
        assert!(decide(&c(&[("a", 11)])).offers_search());
    }

    #[test]
    fn boundaries() {
        assert!(!decide(&c(&[("a", 10)])).any());
        assert!(decide(&c(&[("a", 11)])).any());
        assert!(!decide(&c(&[("a", 10), ("b", 10), ("c", 10)])).all_mcp);
        assert!(decide(&c(&[("a", 10), ("b", 10), ("c", 10), ("d", 1)])).all_mcp);
        assert!(!decide(&[]).any());
    }
}
