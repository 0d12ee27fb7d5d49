//! Rows for what is configured but absent from the tool set (`tools list`, the UI): MCP tools
//! left out for their schema, servers not connected, project servers held back by trust.

use super::CapabilityPlane;
use crate::discovery::{Exposure, HostCaps, ToolListing};
use crate::registry::{Registry, Risk, Source};
use crate::tools;
use crate::trust::NOT_TRUSTED;

impl CapabilityPlane {
    /// Rows for what is configured but has no tool in the registry: MCP tools left out for their
    /// schema (Discovery) and servers that are not connected (one row per server).
    pub fn absent_listings(&self, host: &HostCaps, registry: &Registry) -> Vec<ToolListing> {
        let mut rows = Vec::new();
        let mut rejected: Vec<(String, String, String)> = Vec::new();
        // Tools the person's mcp.json leaves out (`tools.allow` / `tools.deny`).
        let mut filtered: Vec<(String, String, String)> = Vec::new();
        if let Ok(left) = self.left_out.read() {
            rejected.extend(
                left.iter()
                    .map(|l| (l.server.clone(), l.qualified_name.clone(), l.reason.clone())),
            );
        }
        if let Some(m) = &self.mcp {
            for s in m.status() {
                for r in &s.rejected_tools {
                    rejected.push((
                        r.server.clone(),
                        m.qualified_name(&r.server, &r.tool),
                        r.reason.clone(),
                    ));
                }
                for f in &s.filtered_tools {
                    filtered.push((
                        f.server.clone(),
                        m.qualified_name(&f.server, &f.tool),
                        f.reason.clone(),
                    ));
                }
            }
        }
        for (server, name, reason) in rejected {
            rows.push(ToolListing {
                name,
                config: tools::mcp::config_key(&server),
                source: Source::Mcp(server.clone()),
                exposure: Exposure::Absent,
                // The reason names what is unusable: the schema, the name, a duplicate.
                absent_reason: Some(format!("Discovery: left out, unusable: {reason}")),
                risk: Risk::HighImpact,
                description: String::new(),
                display_name: format!("MCP: {server}"),
                category: "mcp".to_string(),
                confinement: None,
                deferred_reason: None,
            });
        }
        for (server, name, reason) in filtered {
            rows.push(ToolListing {
                name,
                config: tools::mcp::config_key(&server),
                source: Source::Mcp(server.clone()),
                exposure: Exposure::Absent,
                absent_reason: Some(reason),
                risk: Risk::HighImpact,
                description: String::new(),
                display_name: format!("MCP: {server}"),
                category: "mcp".to_string(),
                confinement: None,
                deferred_reason: None,
            });
        }
        for server in &self.mcp_untrusted {
            rows.push(untrusted_row(server));
        }
        for (server, state) in &host.mcp {
            let Err(reason) = state else { continue };
            let key = tools::mcp::config_key(server);
            let has_rows = registry
                .configs()
                .iter()
                .any(|c| c.meta.key == key && !c.tools.is_empty());
            if has_rows {
                continue;
            }
            rows.push(ToolListing {
                name: format!(
                    "{}{}__*",
                    aibuddy_mcp::names::PREFIX,
                    aibuddy_mcp::names::sanitize_part(server)
                ),
                config: key,
                source: Source::Mcp(server.clone()),
                exposure: Exposure::Absent,
                // A server waiting for a login is not failing: its reason is exactly `needs login`.
                absent_reason: Some(if reason == aibuddy_mcp::status::NEEDS_LOGIN {
                    reason.clone()
                } else {
                    format!("MCP server `{server}` is not connected: {reason}")
                }),
                risk: Risk::HighImpact,
                description: format!("every tool of MCP server `{server}`"),
                display_name: format!("MCP: {server}"),
                category: "mcp".to_string(),
                confinement: None,
                deferred_reason: None,
            });
        }
        rows
    }
}

/// The row of a project MCP server held back because the project is not trusted.
fn untrusted_row(server: &str) -> ToolListing {
    ToolListing {
        name: format!(
            "{}{}__*",
            aibuddy_mcp::names::PREFIX,
            aibuddy_mcp::names::sanitize_part(server)
        ),
        config: tools::mcp::config_key(server),
        source: Source::Mcp(server.to_string()),
        exposure: Exposure::Absent,
        absent_reason: Some(NOT_TRUSTED.to_string()),
        risk: Risk::HighImpact,
        description: format!("every tool of MCP server `{server}`"),
        display_name: format!("MCP: {server}"),
        category: "mcp".to_string(),
        confinement: None,
        deferred_reason: None,
    }
}
