//! The capability plane: which tools a run sees. The effective set is the intersection of the
//! configured tool keys, the host's injected services, connected MCP servers, the sandbox's support
//! and the run's prerequisites. A tool whose dependency is missing is *absent* with a reason, never
//! exposed to fail.

pub mod child_shapes;
pub mod eval;
pub mod gates;
pub mod lazy_label;
pub mod presentation;
pub mod search;
pub mod service;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use gates::{DeferDecision, decide};
pub use lazy_label::LazyLabel;
pub use presentation::{Presentation, PresentedTool, present};
pub use service::DiscoveryService;
pub use state::{ContextMessage, DiscoveryState};

use crate::registry::{Registry, Requirement, Risk, Source};
use crate::settings::Settings;

/// The name of the tool that searches deferred tools and activates them (`tools::tool_search`
/// implements it; discovery names it to leave it out of provider-native presentation and to
/// recognise its calls in a rebuilt context).
pub const TOOL_SEARCH: &str = "tool_search";

/// How a tool is presented in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Exposure {
    /// Schema in the active set.
    Active,
    /// Name and description in the search index only; `tool_search` activates it.
    Deferred,
    /// Configured but a dependency is missing (`absent_reason` says which).
    Absent,
}

/// One row of `aibuddy tools list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ToolListing {
    pub name: String,
    /// Owning config key.
    pub config: String,
    /// `core`, `skill` or `mcp:<server>`.
    pub source: Source,
    pub exposure: Exposure,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub absent_reason: Option<String>,
    /// For deferred tools: which count gate deferred them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub deferred_reason: Option<String>,
    pub risk: Risk,
    pub description: String,
    pub display_name: String,
    pub category: String,
    /// For tools that execute commands: the confinement the sandbox applies (e.g. `landlock-v7`,
    /// `none` where the kernel lacks Landlock).
    /// Computed when first shown (see [`LazyLabel`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub confinement: Option<LazyLabel>,
}

/// What the host provides to this run, as far as the capability plane needs to know.
#[derive(Debug, Clone, Default)]
pub struct HostCaps {
    /// Filesystem operations: Ok, or why not (e.g. the sandbox kind is unavailable).
    pub fs: Option<Result<(), String>>,
    pub exec: Option<Result<(), String>>,
    /// The confinement applied to executed commands (label), when exec is available; probed
    /// when first shown.
    pub exec_confinement: Option<LazyLabel>,
    pub store: bool,
    pub skills: usize,
    /// Connected MCP servers: Ok, or why the server's tools are missing.
    pub mcp: BTreeMap<String, Result<(), String>>,
    /// MCP servers still on their first connection (a subset of the `Err` entries of `mcp`):
    /// the defer decision's `pending` servers.
    pub mcp_pending: BTreeSet<String>,
}

impl HostCaps {
    /// Why a requirement is not met, or None when it is. `search_offered`: the defer decision
    /// offers `tool_search` (something deferred, or a server still connecting).
    pub fn missing(&self, req: &Requirement, search_offered: bool) -> Option<String> {
        let cap = |c: &Option<Result<(), String>>, what: &str| match c {
            Some(Ok(())) => None,
            Some(Err(reason)) => Some(reason.clone()),
            None => Some(format!("no sandbox with {what} is available in this host")),
        };
        match req {
            Requirement::SandboxFs => cap(&self.fs, "filesystem access"),
            Requirement::SandboxExec => cap(&self.exec, "command execution"),
            Requirement::Store => (!self.store).then(|| {
                "no call store is available (history and recovery need the data directory)"
                    .to_string()
            }),
            Requirement::Skills => (self.skills == 0).then(|| "no skills are loaded".to_string()),
            Requirement::DeferredTools => {
                (!search_offered).then(|| "nothing is deferred in this run".to_string())
            }
            Requirement::McpServer(server) => match self.mcp.get(server) {
                Some(Ok(())) => None,
                Some(Err(reason)) => {
                    Some(format!("MCP server `{server}` is not connected: {reason}"))
                }
                None => Some(format!("MCP server `{server}` is not connected")),
            },
        }
    }
}

/// Whether a config key is configured for this run.
pub fn is_configured(settings: &Settings, key: &str) -> bool {
    if settings.tools.disabled.iter().any(|k| k == key) {
        return false;
    }
    // MCP servers are configured by mcp.json; they are on unless disabled.
    key.starts_with("mcp:") || settings.tools.enabled.iter().any(|k| k == key)
}

/// The effective tool set of one run.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    pub tools: Vec<ToolListing>,
    pub defer: DeferDecision,
}

impl ToolSet {
    pub fn get(&self, name: &str) -> Option<&ToolListing> {
        self.tools.iter().find(|t| t.name == name)
    }
    pub fn active(&self) -> impl Iterator<Item = &ToolListing> {
        self.tools.iter().filter(|t| t.exposure == Exposure::Active)
    }
}

/// The runtime instructions that join the system prompt for a run: each config's text, only while
/// at least one of its tools is active in `toolset` (in registry order, with the config key).
pub fn instructions(registry: &Registry, toolset: &ToolSet) -> Vec<(String, String)> {
    registry
        .configs()
        .iter()
        .filter(|rc| {
            rc.tools.iter().any(|t| {
                toolset
                    .get(t.name())
                    .is_some_and(|l| l.exposure == Exposure::Active)
            })
        })
        .filter_map(|rc| {
            rc.config
                .instructions()
                .filter(|text| !text.trim().is_empty())
                .map(|text| (rc.meta.key.clone(), text))
        })
        .collect()
}

/// In the approval mode `read-only`, an MCP tool that is not read-only is absent (the reason).
fn read_only_mode_hides(settings: &Settings, t: &crate::registry::ToolDef) -> Option<String> {
    (settings.approvals.mode == crate::approvals::ApprovalMode::ReadOnly
        && matches!(t.source, Source::Mcp(_))
        && t.risk != crate::registry::Risk::ReadOnly)
        .then(|| {
            "the approval mode is read-only and this MCP tool is not read-only (change the mode \
             with `aibuddy trust --approvals`)"
                .to_string()
        })
}

/// Compute the effective set (pure). `activated` are deferred tools this run has discovered.
pub fn effective(
    registry: &Registry,
    settings: &Settings,
    host: &HostCaps,
    activated: &BTreeSet<String>,
) -> ToolSet {
    // The gates count connected MCP servers' tools.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for rc in registry.configs() {
        if !is_configured(settings, &rc.meta.key) {
            continue;
        }
        for t in &rc.tools {
            if let Source::Mcp(server) = &t.source
                && matches!(host.mcp.get(server), Some(Ok(())))
            {
                *counts.entry(server.clone()).or_default() += 1;
            }
        }
    }
    let pending: BTreeSet<String> = host
        .mcp_pending
        .iter()
        .filter(|s| is_configured(settings, &format!("mcp:{s}")))
        .cloned()
        .collect();
    let defer = decide(&counts.into_iter().collect::<Vec<_>>()).with_pending(pending);
    let mut tools = Vec::new();
    for pass_deferred_req in [false, true] {
        for rc in registry.configs() {
            if !is_configured(settings, &rc.meta.key) {
                continue;
            }
            let reqs = rc.config.requirements();
            let needs_deferred = reqs.contains(&Requirement::DeferredTools);
            if needs_deferred != pass_deferred_req {
                continue;
            }
            let search_offered = !defer.pending.is_empty()
                || tools
                    .iter()
                    .any(|t: &ToolListing| t.exposure == Exposure::Deferred);
            let missing: Vec<String> = reqs
                .iter()
                .filter_map(|r| host.missing(r, search_offered))
                .collect();
            for t in &rc.tools {
                let (exposure, absent_reason) = if !missing.is_empty() {
                    (Exposure::Absent, Some(missing.join("; ")))
                } else if let Some(reason) = read_only_mode_hides(settings, t) {
                    (Exposure::Absent, Some(reason))
                } else if let Source::Mcp(server) = &t.source {
                    match host.mcp.get(server) {
                        Some(Ok(())) if defer.defers(server) && !activated.contains(t.name()) => {
                            (Exposure::Deferred, None)
                        }
                        Some(Ok(())) => (Exposure::Active, None),
                        Some(Err(reason)) => (
                            Exposure::Absent,
                            Some(format!("MCP server `{server}` is not connected: {reason}")),
                        ),
                        None => (
                            Exposure::Absent,
                            Some(format!("MCP server `{server}` is not connected")),
                        ),
                    }
                } else {
                    (Exposure::Active, None)
                };
                let deferred_reason = match (&t.source, exposure) {
                    (Source::Mcp(server), Exposure::Deferred) => defer.reason_for(server),
                    _ => None,
                };
                tools.push(ToolListing {
                    deferred_reason,
                    name: t.name().to_string(),
                    config: rc.meta.key.clone(),
                    source: t.source.clone(),
                    exposure,
                    absent_reason,
                    risk: t.risk,
                    description: t.spec.description().to_string(),
                    display_name: rc.meta.display_name.clone(),
                    category: rc.meta.category.clone(),
                    confinement: reqs
                        .contains(&Requirement::SandboxExec)
                        .then(|| host.exec_confinement.clone())
                        .flatten(),
                });
            }
        }
    }
    ToolSet { tools, defer }
}
