//! Schema presentation: one defer decision, two strategies.
//!
//! - [`Presentation::ProviderNative`]: routes whose provider expands deferred schemas itself (native
//!   tool search) get a stable array of every available tool, deferred ones flagged
//!   `defer_loading`. aibuddy's own `tool_search` is a client tool in both presentations and never
//!   deferred: the provider expands the `tool_reference`s its results carry.
//! - [`Presentation::ActiveTools`]: every other route gets only the active subset; deferred tools
//!   appear once `tool_search` activated them in this run.
//!
//! Both read the same [`ToolSet`] (and its [`super::DeferDecision`]); only the shape differs.

use serde::Serialize;
use serde_json::Value;

use super::{Exposure, TOOL_SEARCH, ToolListing, ToolSet};
use crate::registry::{Registry, Source};

/// How tool schemas are presented to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presentation {
    ProviderNative,
    ActiveTools,
}

/// One tool definition as sent to a provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresentedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// The provider loads this schema on demand (provider-native path only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
}

/// Whether the defer decision covers this tool (regardless of whether the run activated it).
pub fn deferrable(listing: &ToolListing, toolset: &ToolSet) -> bool {
    listing.exposure != Exposure::Absent
        && matches!(&listing.source, Source::Mcp(server) if toolset.defer.defers(server))
}

/// The tool array for one step under `presentation`. Pure.
pub fn present(
    toolset: &ToolSet,
    registry: &Registry,
    presentation: Presentation,
) -> Vec<PresentedTool> {
    toolset
        .tools
        .iter()
        .filter_map(|l| {
            let keep = match presentation {
                Presentation::ProviderNative => l.exposure != Exposure::Absent,
                Presentation::ActiveTools => l.exposure == Exposure::Active,
            };
            if !keep {
                return None;
            }
            let (def, _) = registry.get(&l.name)?;
            Some(PresentedTool {
                name: l.name.clone(),
                description: l.description.clone(),
                input_schema: def.spec.input_schema().clone(),
                defer_loading: presentation == Presentation::ProviderNative
                    && l.name != TOOL_SEARCH
                    && deferrable(l, toolset),
            })
        })
        .collect()
}
