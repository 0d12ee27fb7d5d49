//! The state every task of a manager shares: one [`Slot`] per configured server (its config,
//! state, live peer), the merged catalog, and the change counter watchers follow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::model::Tool;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{mpsc, watch};

use crate::catalog::{Catalog, apply_tool_filters, rebuild_catalog};
use crate::config::ServerConfig;
use crate::config::ToolFilter;
use crate::elicitation::{Callers, ElicitationBroker};
use crate::error::McpError;
use crate::handler::{ConnEvent, ProgressRoutes};
use crate::oauth::AuthorizedClient;
use crate::options::McpOptions;
use crate::redact::Redactor;
use crate::status::ServerState;
use crate::stdio::BrokenReason;

pub(crate) struct Slot {
    pub config: ServerConfig,
    /// Cuts the config's values out of every reason and log line about this server.
    pub redactor: Redactor,
    pub state: ServerState,
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
    /// How the live process of a sandboxed server is confined (`namespaces+landlock-v7+nonet`).
    pub confinement: Option<String>,
    /// The proxies of its latest processes (a sandboxed server with a network), newest last, at
    /// most [`crate::status::NETWORK_WATCHES`]: the hosts it tried and was refused, for status.
    pub network_watches: Vec<aibuddy_exec::netproxy::NetWatch>,
    pub tools: Vec<Tool>,
    pub tools_refreshed: u32,
    pub peer: Option<Peer<RoleClient>>,
    pub events: Option<mpsc::UnboundedSender<ConnEvent>>,
    /// Why the live connection broke, set by the stdout screen before it closes the stream.
    pub broken: Option<BrokenReason>,
    /// The live connection's OAuth client (remote servers with a stored token): a 403
    /// `insufficient_scope` may step up through it without a person (`routing`).
    pub auth: Option<AuthorizedClient>,
    /// Wakes the supervisor of a server waiting for a login or a backoff to connect again now
    /// ([`crate::McpManager::reconnect`]).
    pub wake: Arc<tokio::sync::Notify>,
    /// Which supervisor owns this slot: [`crate::McpManager::restart`] counts it up before it
    /// starts a new one, and a supervisor writes only while the slot is still its own
    /// ([`Shared::update_as`]), so an old supervisor ending late (a restart that did not wait
    /// it out, two restarts racing) cannot overwrite the new connection's state and tools.
    pub generation: u64,
}

pub(crate) struct Shared {
    pub slots: RwLock<BTreeMap<String, Slot>>,
    pub catalog: RwLock<Arc<Catalog>>,
    pub changes: watch::Sender<u64>,
    pub progress: Arc<ProgressRoutes>,
    pub options: McpOptions,
    pub broker: Arc<dyn ElicitationBroker>,
    /// Who made each call in flight (routes elicitations; see `elicitation`).
    pub callers: Arc<Callers>,
}

impl Shared {
    /// Changes one slot; rebuilds the catalog when `tools_changed`; notifies watchers.
    pub fn update(&self, server: &str, tools_changed: bool, f: impl FnOnce(&mut Slot)) {
        {
            let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(slot) = slots.get_mut(server) {
                f(slot);
            }
            if tools_changed {
                let listed: BTreeMap<String, Vec<Tool>> = slots
                    .iter()
                    .filter(|(_, s)| s.state == ServerState::Connected)
                    .map(|(name, s)| (name.clone(), s.tools.clone()))
                    .collect();
                let trusted: BTreeSet<String> = slots
                    .iter()
                    .filter(|(_, s)| s.config.trust_annotations)
                    .map(|(name, _)| name.clone())
                    .collect();
                let filters: BTreeMap<String, ToolFilter> = slots
                    .iter()
                    .map(|(name, s)| (name.clone(), s.config.tools.clone()))
                    .collect();
                let (listed, filtered) = apply_tool_filters(listed, &filters);
                let previous = self.catalog();
                let mut catalog = rebuild_catalog(&listed, &trusted, &previous);
                catalog.filtered = filtered;
                *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
            }
        }
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// [`Shared::update`] by the supervisor of `generation`: ignored (and the catalog not
    /// rebuilt) once the slot belongs to a newer supervisor. Whether it was applied.
    pub fn update_as(
        &self,
        server: &str,
        generation: u64,
        tools_changed: bool,
        f: impl FnOnce(&mut Slot),
    ) -> bool {
        let current = {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            slots.get(server).map(|s| s.generation)
        };
        if current != Some(generation) {
            tracing::debug!(
                server,
                generation,
                ?current,
                "a replaced supervisor's update is ignored"
            );
            return false;
        }
        let mut applied = false;
        self.update(server, tools_changed, |slot| {
            // Checked again under the write lock: a restart may have come in between.
            if slot.generation == generation {
                f(slot);
                applied = true;
            }
        });
        applied
    }

    /// [`Shared::set_state`] by the supervisor of `generation` ([`Shared::update_as`]).
    pub fn set_state_as(&self, server: &str, generation: u64, state: ServerState) {
        self.update_as(server, generation, false, |slot| slot.state = state);
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn connection(&self, server: &str) -> Result<Live, McpError> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let Some(slot) = slots.get(server) else {
            return Err(McpError::UnknownServer {
                server: server.to_owned(),
            });
        };
        match (&slot.state, &slot.peer) {
            (ServerState::Connected, Some(peer)) => Ok(Live {
                peer: peer.clone(),
                events: slot.events.clone(),
                call_timeout: slot.config.timeouts.call,
                redactor: slot.redactor.clone(),
                broken: slot.broken.clone(),
                auth: slot.auth.clone(),
                url: slot
                    .config
                    .transport
                    .http_parts()
                    .map(|(url, _)| url.to_owned()),
            }),
            (state, _) => Err(McpError::ServerUnavailable {
                server: server.to_owned(),
                reason: describe_state(server, state),
            }),
        }
    }

    /// Why a qualified name is not in the catalog: its server is down (Execution: a missing
    /// dependency, worth retrying later) or the name is simply unknown (Discovery). The server
    /// is the name's owner when the session gave the name out ([`Catalog::given_names`]);
    /// otherwise, a server that is down and whose names start like this one.
    pub fn unknown_tool(&self, qualified_name: &str) -> McpError {
        // The catalog's lock is released before the slots' is taken (`update` takes them the
        // other way round).
        let catalog = self.catalog();
        let owner = catalog.given_names.resolve(qualified_name);
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(owner) = owner {
            return match slots.get(&owner.server) {
                Some(slot) if slot.config.enabled && slot.state != ServerState::Connected => {
                    McpError::ServerUnavailable {
                        server: owner.server.clone(),
                        reason: describe_state(&owner.server, &slot.state),
                    }
                }
                _ => McpError::UnknownTool {
                    name: qualified_name.to_owned(),
                },
            };
        }
        let down = slots.iter().find(|(name, slot)| {
            slot.config.enabled
                && slot.state != ServerState::Connected
                && qualified_name.starts_with(&format!(
                    "{}{}__",
                    crate::names::PREFIX,
                    crate::names::sanitize_part(name)
                ))
        });
        match down {
            Some((name, slot)) => McpError::ServerUnavailable {
                server: name.clone(),
                reason: describe_state(name, &slot.state),
            },
            None => McpError::UnknownTool {
                name: qualified_name.to_owned(),
            },
        }
    }

    pub fn failure_reason(&self, server: &str) -> Option<String> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        match slots.get(server).map(|s| &s.state) {
            Some(ServerState::Failed { reason, .. }) => Some(reason.clone()),
            Some(ServerState::NeedsLogin) => Some(crate::status::NEEDS_LOGIN.to_owned()),
            _ => None,
        }
    }
}

/// What a call needs from a connected server.
pub(crate) struct Live {
    pub peer: Peer<RoleClient>,
    pub events: Option<mpsc::UnboundedSender<ConnEvent>>,
    pub call_timeout: Duration,
    pub redactor: Redactor,
    pub broken: Option<BrokenReason>,
    pub auth: Option<AuthorizedClient>,
    /// The server's URL (remote servers).
    pub url: Option<String>,
}

/// An rmcp error as text without the transport's Rust type names (`Transport [rmcp::...] error`
/// becomes `Transport error`). Pure.
pub(crate) fn tidy(error: &dyn std::fmt::Display) -> String {
    let mut text = error.to_string();
    while let Some(start) = text.find("[rmcp::") {
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in text[start..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let cut_start = if text[..start].ends_with(' ') {
            start - 1
        } else {
            start
        };
        text.replace_range(cut_start..=end, "");
    }
    text
}

fn describe_state(server: &str, state: &ServerState) -> String {
    match state {
        ServerState::Disabled => "disabled in its configuration".into(),
        ServerState::Connecting => "still connecting".into(),
        ServerState::Connected => "connected".into(),
        ServerState::Failed { reason, .. } => format!("failed: {reason}"),
        ServerState::NeedsLogin => format!(
            "{}: run `aibuddy mcp login {server}`",
            crate::status::NEEDS_LOGIN
        ),
        ServerState::Reconnecting {
            attempt,
            last_reason,
        } => format!("reconnecting (attempt {attempt}) after: {last_reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_removes_transport_type_names() {
        let raw = "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Client error: refused";
        assert_eq!(
            tidy(&raw),
            "Transport send error: Transport error: Client error: refused"
        );
        assert_eq!(tidy(&"plain [1] text"), "plain [1] text");
    }
}
