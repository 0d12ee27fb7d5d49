//! Supervision: one task per enabled server runs its connection ([`crate::connection`]) again
//! and again, waiting a backoff ([`crate::status::Backoff`]) after each failure; a connection
//! that lasted [`crate::wiring::STABLE_CONNECTION`] starts the backoff over.

use std::sync::{Arc, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::connection::run_connection;
use crate::shared::{Shared, Slot};
use crate::status::ServerState;
use crate::wiring::Ended;

/// The slot of a server whose connection ended: no peer, no tools, `state`.
pub(crate) fn disconnected(slot: &mut Slot, state: ServerState) {
    slot.state = state;
    slot.peer = None;
    slot.events = None;
    slot.broken = None;
    slot.auth = None;
    slot.tools.clear();
}

/// Runs server `name` until `shutdown`, as the slot's supervisor of `generation` (every write
/// to the slot goes through [`Shared::update_as`]).
pub(crate) async fn supervise(
    shared: Arc<Shared>,
    name: String,
    generation: u64,
    shutdown: CancellationToken,
) {
    let (config, redactor, wake) = {
        let slots = shared.slots.read().unwrap_or_else(PoisonError::into_inner);
        match slots.get(&name) {
            Some(slot) => (
                slot.config.clone(),
                slot.redactor.clone(),
                slot.wake.clone(),
            ),
            None => return,
        }
    };
    let backoff = shared.options.backoff;
    let mut attempt: u32 = 0;
    loop {
        let (reason, was_stable) =
            match run_connection(&shared, &config, &redactor, generation, &shutdown).await {
                Ended::Shutdown => {
                    let state = ServerState::Failed {
                        reason: "client shut down".into(),
                        retry_in_ms: None,
                    };
                    shared.update_as(&name, generation, true, |slot| disconnected(slot, state));
                    return;
                }
                Ended::NeedsLogin => {
                    tracing::info!(server = %name, "MCP server needs login");
                    shared.update_as(&name, generation, true, |slot| {
                        disconnected(slot, ServerState::NeedsLogin)
                    });
                    // Not retried: a login is what changes it (then `McpManager::reconnect`).
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = wake.notified() => {}
                    }
                    attempt = 0;
                    shared.set_state_as(&name, generation, ServerState::Connecting);
                    continue;
                }
                Ended::Failed { reason, was_stable } => (reason, was_stable),
            };
        // Reasons quote stderr, stdout lines and transport errors: never a configured value.
        let reason = redactor.apply(&reason);
        if was_stable {
            attempt = 0;
        }
        attempt = attempt.saturating_add(1);
        let delay = backoff.delay(attempt);
        tracing::warn!(server = %name, attempt, delay_ms = delay.as_millis() as u64, "MCP server failed: {reason}");
        let retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        let state = ServerState::Failed {
            reason: reason.clone(),
            retry_in_ms: Some(retry_in_ms),
        };
        shared.update_as(&name, generation, true, |slot| disconnected(slot, state));
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = wake.notified() => {}
            _ = shutdown.cancelled() => {
                shared.set_state_as(&name, generation, ServerState::Failed { reason, retry_in_ms: None });
                return;
            }
        }
        let state = ServerState::Reconnecting {
            attempt,
            last_reason: reason,
        };
        shared.set_state_as(&name, generation, state);
    }
}
