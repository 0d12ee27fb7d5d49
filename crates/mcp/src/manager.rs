//! [`McpManager`], the crate's public face: one supervisor task per configured server
//! ([`crate::supervisor`]: connect, list tools, follow `list_changed`, detect crash/hang/garbage,
//! reconnect with backoff), a merged catalog, and calls ([`crate::routing`]) with timeouts,
//! cancellation and progress.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, McpToolEntry};
use crate::config::ServerConfig;
use crate::elicitation::{Callers, RoutedElicitation};
use crate::error::McpError;
use crate::handler::{ProgressRoutes, ProgressSink};
use crate::redact::Redactor;
use crate::routing;
use crate::shared::{Shared, Slot};
use crate::status::{SandboxStatus, ServerState, ServerStatus};
use crate::supervisor::{disconnected, supervise};

pub use crate::wiring::STABLE_CONNECTION;

pub use crate::options::{
    DEFAULT_HEALTH_CHECK_TIMEOUT, DEFAULT_PROGRESS_INTERVAL, McpCallResult, McpHandlers, McpOptions,
};

/// Connections to every configured MCP server, and the merged tool catalog.
///
/// Dropping the manager stops every supervisor and kills every stdio server.
pub struct McpManager {
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    /// Each enabled server's supervisor and the token that stops it alone ([`McpManager::restart`]).
    tasks: std::sync::Mutex<BTreeMap<String, (CancellationToken, JoinHandle<()>)>>,
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl McpManager {
    /// Starts one supervisor per enabled server and returns at once; servers connect in the
    /// background (see [`McpManager::wait_until_settled`]). Must run inside a Tokio runtime.
    /// Duplicate names: the last config wins.
    pub fn start(configs: Vec<ServerConfig>, handlers: McpHandlers, options: McpOptions) -> Self {
        let mut slots = BTreeMap::new();
        for config in configs {
            let state = if config.enabled {
                ServerState::Connecting
            } else {
                ServerState::Disabled
            };
            slots.insert(
                config.name.clone(),
                Slot {
                    redactor: Redactor::for_config(&config),
                    config,
                    broken: None,
                    auth: None,
                    state,
                    protocol_version: None,
                    server_info: None,
                    confinement: None,
                    network_watches: Vec::new(),
                    tools: Vec::new(),
                    tools_refreshed: 0,
                    peer: None,
                    events: None,
                    wake: Arc::new(tokio::sync::Notify::new()),
                    generation: 0,
                },
            );
        }
        let enabled: Vec<String> = slots
            .iter()
            .filter(|(_, s)| s.config.enabled)
            .map(|(n, _)| n.clone())
            .collect();
        let (changes, _) = watch::channel(0u64);
        let callers = Arc::new(Callers::default());
        let shared = Arc::new(Shared {
            slots: RwLock::new(slots),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            changes,
            progress: Arc::new(ProgressRoutes::new(options.progress_interval)),
            options,
            broker: Arc::new(RoutedElicitation {
                host: handlers.elicitation,
                callers: callers.clone(),
            }),
            callers,
        });
        let shutdown = CancellationToken::new();
        let tasks = enabled
            .into_iter()
            .map(|name| {
                let token = shutdown.child_token();
                let task = tokio::spawn(supervise(shared.clone(), name.clone(), 0, token.clone()));
                (name, (token, task))
            })
            .collect();
        McpManager {
            shared,
            shutdown,
            tasks: std::sync::Mutex::new(tasks),
        }
    }

    /// Every usable tool of every connected server, sorted by qualified name.
    pub fn catalog(&self) -> Vec<McpToolEntry> {
        self.shared.catalog().entries.clone()
    }

    /// The catalog entry behind a qualified name.
    pub fn entry(&self, qualified_name: &str) -> Option<McpToolEntry> {
        self.shared.catalog().entry(qualified_name).cloned()
    }

    /// The qualified name this manager gave to `tool` on `server`, also when the tool is left out
    /// now (its schema became unusable) or its server is down; the default name
    /// ([`crate::names::qualified_name`]) when it never gave one (a tool never usable, or left out
    /// by the server's allow/deny lists). A collision can give a tool another name than the
    /// default, so rows about a tool show this one.
    pub fn qualified_name(&self, server: &str, tool: &str) -> String {
        match self.shared.catalog().given_name(server, tool) {
            Some(name) => name.to_owned(),
            None => crate::names::qualified_name(server, tool),
        }
    }

    /// One status per configured server, sorted by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        // Slots first, then the catalog under their read lock: `Shared::update` writes a slot's
        // state and the rebuilt catalog under the slots' write lock, so the pair read here is one
        // moment's (read the other way round, a server that had just connected showed
        // `connected` with the catalog of before: 0 tools).
        let slots = self
            .shared
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let catalog = self.shared.catalog();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for entry in &catalog.entries {
            *counts.entry(entry.server.as_str()).or_default() += 1;
        }
        slots
            .iter()
            .map(|(name, slot)| ServerStatus {
                server: name.clone(),
                state: slot.state.clone(),
                protocol_version: slot.protocol_version.clone(),
                server_info: slot.server_info.clone(),
                tool_count: counts.get(name.as_str()).copied().unwrap_or(0),
                sandbox: SandboxStatus::of(
                    &slot.config,
                    &slot.redactor,
                    slot.confinement.as_deref(),
                    &slot.network_watches,
                ),
                tools_refreshed: slot.tools_refreshed,
                rejected_tools: catalog
                    .rejected
                    .iter()
                    .filter(|r| &r.server == name)
                    .cloned()
                    .collect(),
                filtered_tools: catalog
                    .filtered
                    .iter()
                    .filter(|r| &r.server == name)
                    .cloned()
                    .collect(),
            })
            .collect()
    }

    /// A receiver whose value changes whenever a status or the catalog changes (re-evaluate the
    /// deferral gates then).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// Waits until `predicate(status)` holds, up to `timeout`. Returns whether it held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        predicate: impl Fn(&[ServerStatus]) -> bool,
    ) -> bool {
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if predicate(&self.status()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return predicate(&self.status()),
            }
        }
    }

    /// Waits until no enabled server is still on its first connection attempt, up to `timeout`.
    pub async fn wait_until_settled(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, |status| {
            status.iter().all(|s| s.state != ServerState::Connecting)
        })
        .await
    }

    /// Calls a tool by its qualified name. `args` must be a JSON object (or null for none) that
    /// fits the tool's input schema. Cancelling `cancel` sends `notifications/cancelled` and
    /// returns [`McpError::Cancelled`]; progress notifications go to `progress` until the call
    /// ends or is cancelled.
    pub async fn call(
        &self,
        qualified_name: &str,
        args: Value,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<McpCallResult, McpError> {
        routing::call(&self.shared, qualified_name, args, cancel, progress).await
    }

    /// Connects server `server` again now: a server that needs login (after `mcp login` stored
    /// a token), or one waiting out a reconnect backoff. A connected server is left alone.
    /// Returns false when no enabled server has that name.
    pub fn reconnect(&self, server: &str) -> bool {
        let slots = self
            .shared
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        match slots.get(server) {
            Some(slot) if slot.config.enabled => {
                slot.wake.notify_one();
                true
            }
            _ => false,
        }
    }

    /// Stops every supervisor, closes every connection and kills every stdio server.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, (_, task)) in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }

    /// Reconnects server `name` now (the person's "reconnect"): its connection is closed (a stdio
    /// server is killed; waited for up to 5 s), then a fresh supervisor connects it again with the
    /// same configuration, starting in `Connecting` with the backoff reset. The spawn gate
    /// (`McpOptions::before_spawn`) is consulted again, so a project server whose files changed
    /// since the project was trusted does not restart. Unknown or disabled servers are refused.
    pub async fn restart(&self, name: &str) -> Result<(), McpError> {
        let enabled = {
            let slots = self
                .shared
                .slots
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            slots.get(name).map(|slot| slot.config.enabled)
        };
        match enabled {
            None => {
                return Err(McpError::UnknownServer {
                    server: name.to_owned(),
                });
            }
            Some(false) => {
                return Err(McpError::ServerUnavailable {
                    server: name.to_owned(),
                    reason: "disabled in its configuration".to_owned(),
                });
            }
            Some(true) => {}
        }
        if self.shutdown.is_cancelled() {
            return Err(McpError::ServerUnavailable {
                server: name.to_owned(),
                reason: "the client is shut down".to_owned(),
            });
        }
        let old = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if let Some((token, task)) = old {
            token.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        // The slot passes to the new supervisor: whatever the old one (or a racing restart's)
        // still writes is ignored from here on. Its connection's tools leave the catalog now.
        let mut generation = 0;
        self.shared.update(name, true, |slot| {
            disconnected(slot, ServerState::Connecting);
            slot.generation += 1;
            generation = slot.generation;
        });
        let token = self.shutdown.child_token();
        let task = tokio::spawn(supervise(
            self.shared.clone(),
            name.to_owned(),
            generation,
            token.clone(),
        ));
        if let Some((stale, task)) = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), (token, task))
        {
            // Two restarts raced: the supervisor replaced here stops (and kills its server).
            stale.cancel();
            drop(task);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
