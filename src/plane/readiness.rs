//! No MCP start-up race: a run starts without waiting for MCP servers; `tool_search` waits for
//! the ones still connecting (bounded by `tool_search.connect_wait_ms`), then searches an index
//! that includes the servers that connected meanwhile, names those still unavailable, and names
//! the tools of servers that connected meanwhile under the defer gates (active, nothing to search).

use std::collections::BTreeSet;
use std::sync::{OnceLock, PoisonError, Weak};
use std::time::Duration;

use aibuddy_mcp::{ServerState, ServerStatus};
use async_trait::async_trait;

use super::{CapabilityPlane, server_absence};
use crate::discovery::Exposure;
use crate::registry::Source;
use crate::settings::ToolSearchSettings;
use crate::tools::tool_search::{ServerReadiness, Settled, Unavailable};

/// The servers whose tools cannot be found now (pure): every configured server that is not
/// connected, disabled ones excepted (they are off by the person's choice, not unavailable).
pub fn unavailable(statuses: &[ServerStatus]) -> Vec<Unavailable> {
    statuses
        .iter()
        .filter(|s| s.state != ServerState::Disabled)
        .filter_map(|s| {
            server_absence(s).map(|reason| Unavailable {
                server: s.server.clone(),
                reason,
            })
        })
        .collect()
}

/// The plane as `tool_search` sees it (bound before the plane exists, attached right after).
#[derive(Default)]
pub struct PlaneReadiness {
    plane: OnceLock<Weak<CapabilityPlane>>,
}

impl PlaneReadiness {
    pub(super) fn attach(&self, plane: Weak<CapabilityPlane>) {
        let _ = self.plane.set(plane);
    }
}

#[async_trait]
impl ServerReadiness for PlaneReadiness {
    async fn settle(&self) -> Settled {
        match self.plane.get().and_then(Weak::upgrade) {
            Some(plane) => plane.settle_mcp(plane.tool_search_wait()).await,
            None => Settled::default(),
        }
    }
}

impl CapabilityPlane {
    /// How long `tool_search` waits for connecting servers (the host's settings, else the default).
    pub fn tool_search_wait(&self) -> Duration {
        let context = self.context.read().unwrap_or_else(PoisonError::into_inner);
        let ms = context.as_ref().map_or_else(
            || ToolSearchSettings::default().connect_wait_ms,
            |c| c.settings.tool_search.connect_wait_ms,
        );
        Duration::from_millis(ms)
    }

    /// Waits up to `wait` for MCP servers still on their first connection, rebuilds the registry
    /// and the `tool_search` index when the MCP catalog changed since the last rebuild (the
    /// follower debounces; a search must not), and returns the servers still unavailable and the
    /// tools of the servers that connected meanwhile as active tools.
    pub async fn settle_mcp(&self, wait: Duration) -> Settled {
        let Some(mcp) = &self.mcp else {
            return Settled::default();
        };
        let pending: BTreeSet<String> = mcp
            .status()
            .into_iter()
            .filter(|s| s.state == ServerState::Connecting)
            .map(|s| s.server)
            .collect();
        if !mcp.wait_until_settled(wait).await {
            tracing::info!(
                ?wait,
                "tool_search: some MCP servers are still connecting; searching without them"
            );
        }
        self.refresh_if_stale();
        Settled {
            unavailable: unavailable(&mcp.status()),
            joined_active: self.active_tools_of(&pending),
        }
    }

    /// The active (not deferred) tools of `servers` in the current tool set of the host's context.
    fn active_tools_of(&self, servers: &BTreeSet<String>) -> Vec<String> {
        if servers.is_empty() {
            return Vec::new();
        }
        let context = self
            .context
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        let Some(context) = context else {
            return Vec::new();
        };
        let registry = self.registry();
        let toolset = self.toolset(
            &registry,
            &context.settings,
            &context.host,
            &BTreeSet::new(),
        );
        toolset
            .tools
            .into_iter()
            .filter(|l| l.exposure == Exposure::Active)
            .filter(|l| matches!(&l.source, Source::Mcp(s) if servers.contains(s)))
            .map(|l| l.name)
            .collect()
    }

    /// The MCP change counter the next rebuild reflects (read before building).
    pub(super) fn mcp_changes(&self) -> u64 {
        self.mcp.as_ref().map_or(0, |m| *m.subscribe().borrow())
    }
}
