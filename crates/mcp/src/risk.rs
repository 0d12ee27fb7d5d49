//! Tool annotations (`readOnlyHint`, `destructiveHint`, ...) turned into risk data.
//!
//! Annotations are hints from a server we may not trust, so every default leans towards caution,
//! exactly as the MCP spec defines them: absent `readOnlyHint` means "may modify", absent
//! `destructiveHint` means "may destroy", absent `openWorldHint` means "open world".

use rmcp::model::ToolAnnotations;
use serde::{Deserialize, Serialize};

/// Coarse level the core maps onto its own risk enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpRiskLevel {
    /// `readOnlyHint: true`: the tool does not modify its environment.
    ReadOnly,
    /// Modifies, but declared non-destructive (`destructiveHint: false`): additive updates only.
    Write,
    /// May perform destructive updates (declared, or annotations absent): needs a human decision.
    HighImpact,
}

/// Risk metadata of one MCP tool, derived only from its annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpRisk {
    pub level: McpRiskLevel,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
    /// Whether the server sent any annotations at all.
    pub annotated: bool,
}

impl McpRisk {
    /// Risk from optional annotations. Pure.
    pub fn from_annotations(annotations: Option<&ToolAnnotations>) -> Self {
        let hint = |f: fn(&ToolAnnotations) -> Option<bool>| annotations.and_then(f);
        let read_only = hint(|a| a.read_only_hint) == Some(true);
        // destructiveHint and idempotentHint are meaningful only when not read-only.
        let destructive = !read_only && hint(|a| a.destructive_hint).unwrap_or(true);
        let idempotent = read_only || hint(|a| a.idempotent_hint).unwrap_or(false);
        let open_world = hint(|a| a.open_world_hint).unwrap_or(true);
        let level = if read_only {
            McpRiskLevel::ReadOnly
        } else if destructive {
            McpRiskLevel::HighImpact
        } else {
            McpRiskLevel::Write
        };
        McpRisk {
            level,
            read_only,
            destructive,
            idempotent,
            open_world,
            annotated: annotations.is_some(),
        }
    }

    /// Whether a call needs a separate human decision before its effect.
    pub fn is_high_impact(&self) -> bool {
        self.level == McpRiskLevel::HighImpact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(
        ro: Option<bool>,
        de: Option<bool>,
        id: Option<bool>,
        ow: Option<bool>,
    ) -> ToolAnnotations {
        ToolAnnotations::from_raw(None, ro, de, id, ow)
    }

    #[test]
    fn absent_annotations_mean_destructive_and_open_world() {
        let r = McpRisk::from_annotations(None);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
        assert!(!r.read_only && r.destructive && r.open_world && !r.idempotent && !r.annotated);
        assert!(r.is_high_impact());
    }

    #[test]
    fn empty_annotations_are_as_cautious_as_none() {
        let r = McpRisk::from_annotations(Some(&ToolAnnotations::new()));
        assert_eq!(r.level, McpRiskLevel::HighImpact);
        assert!(r.annotated);
    }

    #[test]
    fn read_only_only_when_hint_is_true() {
        let r = McpRisk::from_annotations(Some(&ann(Some(true), None, None, Some(false))));
        assert_eq!(r.level, McpRiskLevel::ReadOnly);
        assert!(r.read_only && !r.destructive && r.idempotent && !r.open_world);
        let r = McpRisk::from_annotations(Some(&ann(Some(false), None, None, None)));
        assert_eq!(r.level, McpRiskLevel::HighImpact);
    }

    #[test]
    fn read_only_wins_over_a_contradictory_destructive_hint() {
        let r = McpRisk::from_annotations(Some(&ann(Some(true), Some(true), None, None)));
        assert_eq!(r.level, McpRiskLevel::ReadOnly);
        assert!(!r.destructive);
    }

    #[test]
    fn non_destructive_writes_are_write_level() {
        let r = McpRisk::from_annotations(Some(&ann(None, Some(false), Some(true), None)));
        assert_eq!(r.level, McpRiskLevel::Write);
        assert!(!r.read_only && !r.destructive && r.idempotent);
    }

    #[test]
    fn declared_destructive_is_high_impact() {
        let r = McpRisk::from_annotations(Some(&ann(Some(false), Some(true), None, None)));
        assert_eq!(r.level, McpRiskLevel::HighImpact);
    }
}
