//! A connected server's event loop: list its tools (again on every `list_changed`, one more
//! listing when one arrives mid-listing), publish them to the shared catalog, and end on a broken
//! stream, a closed service, an exited process or shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::Tool;
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::catalog::cut_text;
use crate::config::ServerConfig;
use crate::handler::{ConnEvent, Handler};
use crate::listing::list_tools_bounded;
use crate::shared::Shared;
use crate::status::ServerState;
use crate::wiring::{
    Ended, STABLE_CONNECTION, Wiring, child_exit, exit_or, pending_broken, with_exit,
};

/// Fewest time between the starts of two listings of one server: a sustained storm of
/// `list_changed` (a hostile or broken server) costs one listing (and one catalog rebuild) per
/// interval, not one per round trip. The first listing and a re-listing after a quiet spell are
/// not delayed.
pub(crate) const MIN_RELIST_INTERVAL: Duration = Duration::from_millis(250);

/// What the loop waits for next.
enum Step {
    /// `list_changed`: list again.
    ListAgain,
    /// Nothing that matters (a closed event channel).
    Nothing,
    End(Ended),
}

/// One live connection after `initialize`.
pub(crate) struct Session<'a> {
    shared: &'a Arc<Shared>,
    name: &'a str,
    /// The supervisor this connection runs under ([`Shared::update_as`]).
    generation: u64,
    connect_timeout: Duration,
    peer: Peer<RoleClient>,
    protocol_version: Option<String>,
    server_info: Option<String>,
    pub wiring: Wiring,
    /// When the first listing succeeded.
    connected_at: Option<Instant>,
}

impl<'a> Session<'a> {
    pub fn new(
        shared: &'a Arc<Shared>,
        config: &'a ServerConfig,
        generation: u64,
        running: &RunningService<RoleClient, Handler>,
        wiring: Wiring,
    ) -> Self {
        let peer = running.peer().clone();
        let info = peer.peer_info();
        // The server's own words, shown in `mcp status`: cut.
        let protocol_version = (info.as_ref())
            .map(|i| cut_text(&i.protocol_version.to_string(), 64, "protocol version"));
        let server_info = info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| cut_text(&format!("{} {}", s.name, s.version), 256, "server name"));
        Session {
            shared,
            name: &config.name,
            generation,
            connect_timeout: config.timeouts.connect,
            peer,
            protocol_version,
            server_info,
            wiring,
            connected_at: None,
        }
    }

    fn stable(&self) -> bool {
        self.connected_at
            .is_some_and(|t| t.elapsed() >= STABLE_CONNECTION)
    }

    fn failed(&self, reason: String) -> Ended {
        Ended::Failed {
            reason,
            was_stable: self.stable(),
        }
    }

    /// Runs until the connection ends.
    pub async fn run(
        &mut self,
        shutdown: &CancellationToken,
        mut service_done: JoinHandle<impl Sized>,
    ) -> Ended {
        let mut pending_list = true;
        let mut last_listing: Option<Instant> = None;
        loop {
            if pending_list {
                let wait = last_listing.map_or(Duration::ZERO, |at| {
                    MIN_RELIST_INTERVAL.saturating_sub(at.elapsed())
                });
                if !wait.is_zero()
                    && let Some(ended) = self.pause(wait, shutdown).await
                {
                    return ended;
                }
                last_listing = Some(Instant::now());
                match self.list(shutdown).await {
                    Ok(again) => pending_list = again,
                    Err(ended) => return ended,
                }
                if pending_list {
                    continue;
                }
            }
            match self.next_step(shutdown, &mut service_done).await {
                Step::ListAgain => pending_list = true,
                Step::Nothing => {}
                Step::End(ended) => return ended,
            }
        }
    }

    /// Waits `wait` before a re-listing; more `list_changed` meanwhile change nothing (a listing
    /// is pending already). Ends early on shutdown or a broken connection.
    async fn pause(&mut self, wait: Duration, shutdown: &CancellationToken) -> Option<Ended> {
        let sleep = tokio::time::sleep(wait);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return None,
                _ = shutdown.cancelled() => return Some(Ended::Shutdown),
                event = self.wiring.events.recv() => match event {
                    Some(ConnEvent::ToolsChanged) => {}
                    Some(ConnEvent::Broken(reason)) => {
                        let reason = exit_or(reason, &mut self.wiring.process).await;
                        return Some(self.failed(reason));
                    }
                    // The sender is kept by this session: not reached, but never a busy loop.
                    None => {
                        (&mut sleep).await;
                        return None;
                    }
                },
            }
        }
    }

    /// One `tools/list` under the connect timeout, published when it succeeds. Returns whether a
    /// `list_changed` arrived meanwhile (list again).
    async fn list(&mut self, shutdown: &CancellationToken) -> Result<bool, Ended> {
        let (peer, timeout) = (self.peer.clone(), self.connect_timeout);
        let max_bytes = self.shared.options.max_message_bytes;
        let listing = async move {
            match tokio::time::timeout(timeout, list_tools_bounded(&peer, max_bytes)).await {
                Ok(listed) => listed,
                Err(_) => Err(format!(
                    "no answer to tools/list within {}s",
                    timeout.as_secs_f64()
                )),
            }
        };
        tokio::pin!(listing);
        let mut again = false;
        let listed = loop {
            tokio::select! {
                listed = &mut listing => break listed,
                event = self.wiring.events.recv() => match event {
                    Some(ConnEvent::ToolsChanged) => again = true,
                    Some(ConnEvent::Broken(reason)) => break Err(reason),
                    None => {}
                },
                _ = shutdown.cancelled() => return Err(Ended::Shutdown),
            }
        };
        match listed {
            Ok(tools) => {
                self.publish(tools);
                Ok(again)
            }
            Err(reason) => {
                let reason = with_exit(reason, &mut self.wiring.process).await;
                Err(self.failed(reason))
            }
        }
    }

    /// Puts listed tools into the slot; the first listing also marks the server connected.
    fn publish(&mut self, tools: Vec<Tool>) {
        let first = self.connected_at.is_none();
        self.connected_at.get_or_insert_with(Instant::now);
        tracing::info!(
            server = self.name,
            tools = tools.len(),
            "MCP server tools listed"
        );
        let (pv, si, ev, pr) = (
            self.protocol_version.clone(),
            self.server_info.clone(),
            self.wiring.events_tx.clone(),
            self.peer.clone(),
        );
        let broken = (self.wiring.process.as_ref().map(|p| p.broken.clone()))
            .or_else(|| self.wiring.broken.clone());
        let auth = self.wiring.auth.clone();
        let confinement = (self.wiring.process.as_ref()).and_then(|p| p.confinement.clone());
        let watch = (self.wiring.process.as_ref()).and_then(|p| p.network_watch.clone());
        self.shared
            .update_as(self.name, self.generation, true, move |slot| {
                slot.tools = tools;
                if !first {
                    slot.tools_refreshed += 1;
                    return;
                }
                slot.state = ServerState::Connected;
                slot.protocol_version = pv;
                slot.server_info = si;
                slot.confinement = confinement;
                if let Some(w) = watch {
                    crate::status::keep_watch(&mut slot.network_watches, w);
                }
                slot.events = Some(ev);
                slot.peer = Some(pr);
                slot.broken = broken;
                slot.auth = auth;
            });
    }

    /// Waits for the next thing that happens to a connected server.
    async fn next_step(
        &mut self,
        shutdown: &CancellationToken,
        service_done: &mut JoinHandle<impl Sized>,
    ) -> Step {
        tokio::select! {
            _ = shutdown.cancelled() => Step::End(Ended::Shutdown),
            event = self.wiring.events.recv() => match event {
                Some(ConnEvent::ToolsChanged) => Step::ListAgain,
                Some(ConnEvent::Broken(reason)) => {
                    let reason = exit_or(reason, &mut self.wiring.process).await;
                    Step::End(self.failed(reason))
                }
                None => Step::Nothing,
            },
            _ = service_done => {
                let reason = match pending_broken(&mut self.wiring.events) {
                    Some(reason) => exit_or(reason, &mut self.wiring.process).await,
                    None => with_exit("connection closed".into(), &mut self.wiring.process).await,
                };
                Step::End(self.failed(reason))
            }
            reason = child_exit(&mut self.wiring.process) => Step::End(self.failed(reason)),
        }
    }
}
