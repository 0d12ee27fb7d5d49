//! The approval mode of a project (`approvals.mode`): how much the person is asked (pure).
//!
//! | mode | what runs without asking |
//! |---|---|
//! | `ask` (default) | read-only tools; writes inside the project when `confirm.auto_approve_writes` is on |
//! | `auto` | also commands on the full namespace path and file writes inside the project |
//! | `read-only` | read-only tools and commands, which get the project read-only and no network; writes are refused |
//!
//! Strictness orders the modes `auto` < `ask` < `read-only`: a project's own settings file may
//! only move a project towards `read-only` ([`ApprovalMode::strictest`]).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How much the person is asked in a project.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum ApprovalMode {
    /// Every call that may change something is asked (today's behaviour).
    #[default]
    Ask,
    /// Calls whose effects stay inside the sandbox run without asking.
    Auto,
    /// Nothing may be changed: writes are refused, commands see the project read-only.
    ReadOnly,
}

/// Every mode, least strict first.
pub const MODES: [ApprovalMode; 3] = [
    ApprovalMode::Auto,
    ApprovalMode::Ask,
    ApprovalMode::ReadOnly,
];

impl ApprovalMode {
    /// The settings and flag spelling: `ask`, `auto`, `read-only`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::ReadOnly => "read-only",
        }
    }

    /// The mode a spelling names, if any.
    pub fn parse(s: &str) -> Option<Self> {
        MODES.into_iter().find(|m| m.as_str() == s)
    }

    /// One sentence on what the mode does (the first-run question, `aibuddy trust`, settings).
    pub fn sentence(self) -> &'static str {
        match self {
            ApprovalMode::Ask => {
                "ask: every command and every change to a file is shown to you before it runs"
            }
            ApprovalMode::Auto => {
                "auto: commands confined by the sandbox and file edits inside the project run without \
                 asking; writes outside the project, MCP tools that change things and commands on a \
                 weaker sandbox are still asked"
            }
            ApprovalMode::ReadOnly => {
                "read-only: nothing may change the project: file writes are refused and commands \
                 see the project read-only, with no network"
            }
        }
    }

    fn strictness(self) -> u8 {
        match self {
            ApprovalMode::Auto => 0,
            ApprovalMode::Ask => 1,
            ApprovalMode::ReadOnly => 2,
        }
    }

    /// The stricter of two modes.
    pub fn strictest(self, other: Self) -> Self {
        if other.strictness() > self.strictness() {
            other
        } else {
            self
        }
    }

    /// Whether `self` gives no more than `other` (it is as strict or stricter).
    pub fn at_least_as_strict_as(self, other: Self) -> bool {
        self.strictness() >= other.strictness()
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            format!(
                "unknown approval mode `{}` (known: ask, auto, read-only)",
                aibuddy_common::term::line(s)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_through_serde_and_parse() {
        for m in MODES {
            assert_eq!(ApprovalMode::parse(m.as_str()), Some(m));
            assert_eq!(
                serde_json::to_value(m).unwrap(),
                serde_json::Value::String(m.as_str().into())
            );
        }
        assert_eq!(ApprovalMode::parse("readonly"), None);
        assert!("Auto".parse::<ApprovalMode>().is_err());
    }

    #[test]
    fn strictness_orders_auto_ask_read_only() {
        use ApprovalMode::*;
        let table = [
            (Auto, Ask, Ask),
            (Ask, Auto, Ask),
            (Auto, ReadOnly, ReadOnly),
            (ReadOnly, Ask, ReadOnly),
            (Auto, Auto, Auto),
        ];
        for (a, b, want) in table {
            assert_eq!(a.strictest(b), want, "{a} vs {b}");
        }
        assert!(ReadOnly.at_least_as_strict_as(Auto));
        assert!(!Auto.at_least_as_strict_as(Ask));
        assert!(Ask.at_least_as_strict_as(Ask));
    }
}
