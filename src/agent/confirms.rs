//! The confirm broker as one run uses it: the run's `confirm_request` event is emitted by
//! [`RunConfirm`] once the host's broker can take the answer (registered first, then announced:
//! `ConfirmBroker::decide_announced`), so a desktop that answers as soon as it sees the event is
//! never told "nothing pending". The pipeline's own `ConfirmRequested` tool event only pauses the
//! run's idle watchdog (`calls::ToolEvents`).

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::events::{RunEvent, RunEventSink};
use super::run_hooks::RunHooks;
use super::watchdog::IdleWatchdog;
use crate::confirm::{ConfirmBroker, ConfirmRequest, Decision, NetworkAnswer, NetworkAsk};

pub(crate) struct RunConfirm {
    pub inner: Arc<dyn ConfirmBroker>,
    pub events: Arc<dyn RunEventSink>,
    pub watchdog: Arc<IdleWatchdog>,
    /// `waiting_for_person` hooks, started when a question is announced.
    pub hooks: Arc<RunHooks>,
    /// The run's token (stopping the run ends those hooks).
    pub cancel: CancellationToken,
}

impl RunConfirm {
    fn announce(&self, request: &ConfirmRequest) {
        // A pending confirmation is not a stalled call (resumed at `ConfirmResolved`).
        self.watchdog.pause();
        self.events.emit(RunEvent::ConfirmRequest {
            tool_call_id: request.call_id.clone(),
            request: request.clone(),
        });
        self.hooks
            .waiting("confirmation", &request.call_id, &self.cancel);
    }
}

#[async_trait]
impl ConfirmBroker for RunConfirm {
    async fn decide(&self, request: &ConfirmRequest, cancel: &CancellationToken) -> Decision {
        let announce = || self.announce(request);
        self.inner
            .decide_announced(request, cancel, &announce)
            .await
    }

    async fn decide_announced(
        &self,
        request: &ConfirmRequest,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> Decision {
        let both = || {
            announce();
            self.announce(request);
        };
        self.inner.decide_announced(request, cancel, &both).await
    }

    fn asks_network(&self) -> bool {
        self.inner.asks_network()
    }

    async fn network(&self, ask: &NetworkAsk, cancel: &CancellationToken) -> NetworkAnswer {
        self.network_announced(ask, cancel, &|| {}).await
    }

    /// The run's `network_ask` event once the host's broker holds the question, and
    /// `network_ask_resolved` with the answer.
    async fn network_announced(
        &self,
        ask: &NetworkAsk,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> NetworkAnswer {
        let both = || {
            announce();
            self.events.emit(RunEvent::NetworkAsk {
                tool_call_id: ask.call_id.clone(),
                ask: ask.clone(),
            });
            self.hooks.waiting("network", &ask.call_id, &self.cancel);
        };
        let answer = self.inner.network_announced(ask, cancel, &both).await;
        self.events.emit(RunEvent::NetworkAskResolved {
            tool_call_id: ask.call_id.clone(),
            ask_id: ask.ask_id.clone(),
            answer,
        });
        answer
    }
}
