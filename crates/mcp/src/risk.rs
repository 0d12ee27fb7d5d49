//! Tool annotations (`readOnlyHint`, `destructiveHint`, ...) turned into risk data.
//!
//! Annotations are hints from a server, and the MCP spec says clients must treat them as
//! untrusted unless the server is trusted. So they only lower a tool's risk when the person
//! marked the server `"trustAnnotations": true`; otherwise every tool is [`McpRiskLevel::HighImpact`]
//! (asked every time), whatever `readOnlyHint` or `destructiveHint: false` claim. A hint can only
//! raise risk, and high impact is already the top. Every default leans towards caution, exactly
//! as the spec defines them: absent `readOnlyHint` means "may modify", absent `destructiveHint`
//! means "may destroy", absent `openWorldHint` means "open world".

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

/// Risk metadata of one MCP tool, derived only from its annotations and whether the person
/// trusts them. Only `level` decides anything; the hint fields report what the server claims
/// (with the spec's defaults for absent hints), for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpRisk {
    /// The effective level: the annotations' when trusted, [`McpRiskLevel::HighImpact`] otherwise.
    pub level: McpRiskLevel,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
    /// Whether the server sent any annotations at all.
    pub annotated: bool,
    /// Whether the annotations were allowed to lower the level (`trustAnnotations` on the server).
    pub annotations_trusted: bool,
}

/// The risk hints of a tool's annotations, as sent (None: absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

impl McpRisk {
    /// Risk from optional annotations; `trusted` is the server's `trustAnnotations`. Pure.
    pub fn from_annotations(annotations: Option<&ToolAnnotations>, trusted: bool) -> Self {
        let hints = annotations.map(|a| Hints {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            idempotent: a.idempotent_hint,
            open_world: a.open_world_hint,
        });
        Self::from_hints(hints, trusted)
    }

    /// Risk from the four hints (None: the server sent no annotations). Pure.
    pub fn from_hints(hints: Option<Hints>, trusted: bool) -> Self {
        let h = hints.unwrap_or_default();
        let read_only = h.read_only == Some(true);
        // destructiveHint and idempotentHint are meaningful only when not read-only.
        let destructive = !read_only && h.destructive.unwrap_or(true);
        let idempotent = read_only || h.idempotent.unwrap_or(false);
        let open_world = h.open_world.unwrap_or(true);
        let level = if !trusted || destructive {
            // Untrusted hints cannot lower risk; a destructive tool is high impact either way.
            McpRiskLevel::HighImpact
        } else if read_only {
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
            annotated: hints.is_some(),
            annotations_trusted: trusted,
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
        let r = McpRisk::from_annotations(None, true);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
        assert!(!r.read_only && r.destructive && r.open_world && !r.idempotent && !r.annotated);
        assert!(r.is_high_impact());
    }

    #[test]
    fn empty_annotations_are_as_cautious_as_none() {
        let r = McpRisk::from_annotations(Some(&ToolAnnotations::new()), true);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
        assert!(r.annotated);
    }

    #[test]
    fn read_only_only_when_hint_is_true() {
        let r = McpRisk::from_annotations(Some(&ann(Some(true), None, None, Some(false))), true);
        assert_eq!(r.level, McpRiskLevel::ReadOnly);
        assert!(r.read_only && !r.destructive && r.idempotent && !r.open_world);
        let r = McpRisk::from_annotations(Some(&ann(Some(false), None, None, None)), true);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
    }

    #[test]
    fn read_only_wins_over_a_contradictory_destructive_hint() {
        let r = McpRisk::from_annotations(Some(&ann(Some(true), Some(true), None, None)), true);
        assert_eq!(r.level, McpRiskLevel::ReadOnly);
        assert!(!r.destructive);
    }

    #[test]
    fn non_destructive_writes_are_write_level() {
        let r = McpRisk::from_annotations(Some(&ann(None, Some(false), Some(true), None)), true);
        assert_eq!(r.level, McpRiskLevel::Write);
        assert!(!r.read_only && !r.destructive && r.idempotent);
    }

    #[test]
    fn declared_destructive_is_high_impact() {
        let r = McpRisk::from_annotations(Some(&ann(Some(false), Some(true), None, None)), true);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
    }

    #[test]
    fn untrusted_annotations_never_lower_risk() {
        for hints in [
            ann(Some(true), None, None, Some(false)),
            ann(Some(true), Some(false), Some(true), Some(false)),
            ann(None, Some(false), Some(true), None),
            ann(Some(false), Some(false), None, None),
        ] {
            let r = McpRisk::from_annotations(Some(&hints), false);
            assert_eq!(r.level, McpRiskLevel::HighImpact, "{hints:?}");
            assert!(r.is_high_impact() && !r.annotations_trusted);
        }
        // The claims are still reported, for display.
        let r = McpRisk::from_annotations(Some(&ann(Some(true), None, None, None)), false);
        assert!(r.read_only);
        assert_eq!(
            McpRisk::from_annotations(None, false).level,
            McpRiskLevel::HighImpact
        );
    }

    #[test]
    fn a_destructive_hint_still_raises_risk() {
        let r = McpRisk::from_annotations(Some(&ann(Some(false), Some(true), None, None)), false);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
        let r = McpRisk::from_annotations(Some(&ann(None, Some(true), Some(true), None)), true);
        assert_eq!(r.level, McpRiskLevel::HighImpact);
    }
}
