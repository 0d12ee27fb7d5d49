//! Agent runs started from the window. One run at a time per open project (a second start while
//! one runs is refused with [`ErrorCode::Busy`]): the run proceeds in a task, its events go to the
//! window as one Tauri event ([`RUN_EVENT`]) carrying `{run_id, event}`, and stopping it cancels its
//! token (the HTTP stream, running tools and their process trees, pending confirmations). Its
//! confirmations go through the same pending broker as calls started from the UI, so
//! `answer_confirm` answers both.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy::agent::{Agent, AgentOptions, RunEvent, RunEventSink, RunStart};
use aibuddy_provider::Provider;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Runtime};
use tokio::sync::oneshot;
use ts_rs::TS;

use crate::error::{CommandError, ErrorCode};
pub use crate::run_slot::Runs;
use crate::state::Project;

/// The Tauri event every run event goes out on.
pub const RUN_EVENT: &str = "run-event";

/// One run event as the window receives it on the `run-event` Tauri event ([`RUN_EVENT`]).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct RunEventEnvelope {
    pub run_id: String,
    pub event: RunEvent,
}

/// What `start_run` and `continue_run` answer once the run is recorded (its events follow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RunHandle {
    pub run_id: String,
}

type Started = Arc<Mutex<Option<oneshot::Sender<Result<String, CommandError>>>>>;

fn send_started(started: &Started, result: Result<String, CommandError>) {
    let sender = started.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(tx) = sender {
        let _ = tx.send(result);
    }
}

/// Forwards a run's events and reports its id as soon as the run is recorded (`run_started`):
/// the slot knows the id before the window sees it, so a `stop_run` right after finds the run.
struct StartSink {
    inner: Arc<dyn RunEventSink>,
    started: Started,
    runs: Arc<Runs>,
    generation: u64,
}

impl RunEventSink for StartSink {
    fn emit(&self, event: RunEvent) {
        if let RunEvent::RunStarted { run_id, .. } = &event {
            self.runs.set_id(self.generation, run_id);
            send_started(&self.started, Ok(run_id.clone()));
        }
        self.inner.emit(event);
    }
}

/// Starts (or, with `start.continue_run`, continues) a run on `provider` and returns its id once it
/// is recorded; the run goes on in a task, its events to `events`. Refused while a run is in
/// progress.
pub async fn start(
    state: &Project,
    provider: Arc<dyn Provider>,
    start: RunStart,
    events: Arc<dyn RunEventSink>,
) -> Result<String, CommandError> {
    let (generation, cancel) = state.runs.claim()?;
    let agent = Agent::new(
        state.app.clone(),
        provider,
        Arc::new(state.calls.broker.clone()),
        AgentOptions::from_settings(&state.app.settings.settings),
    )
    .with_human(Arc::new(state.questions.clone()));
    let (tx, rx) = oneshot::channel();
    let started: Started = Arc::new(Mutex::new(Some(tx)));
    let sink = Arc::new(StartSink {
        inner: events,
        started: started.clone(),
        runs: state.runs.clone(),
        generation,
    });
    let runs = state.runs.clone();
    tauri::async_runtime::spawn(async move {
        match agent.run(start, cancel, sink).await {
            Ok(outcome) => {
                tracing::info!(run = %outcome.run_id, status = %outcome.status, "run ended");
            }
            Err(e) => {
                tracing::warn!(stage = ?e.stage(), "run could not start: {e}");
                send_started(
                    &started,
                    Err(CommandError {
                        code: ErrorCode::Run,
                        stage: Some(e.stage()),
                        message: e.to_string(),
                    }),
                );
            }
        }
        runs.release(generation);
    });
    match rx.await {
        Ok(result) => result,
        Err(_) => Err(CommandError::new(
            ErrorCode::Internal,
            "the run task ended before the run was recorded",
        )),
    }
}

/// Stops run `run_id` and waits (bounded by `grace`) until it has ended and been recorded: its
/// process trees killed, pending confirmations rejected. False when it is not the run in progress.
pub async fn stop(state: &Project, run_id: &str, grace: Duration) -> bool {
    if !state.runs.cancel(run_id) {
        return false;
    }
    if !state.runs.wait_idle_async(grace).await {
        tracing::warn!(run = %run_id, "the stopped run did not end within {grace:?}");
    }
    true
}

/// Sends run events to every window of the app as [`RUN_EVENT`].
pub struct WindowSink<R: Runtime> {
    handle: AppHandle<R>,
    run_id: Mutex<String>,
}

impl<R: Runtime> WindowSink<R> {
    pub fn new(handle: AppHandle<R>) -> Self {
        Self {
            handle,
            run_id: Mutex::new(String::new()),
        }
    }
}

impl<R: Runtime> RunEventSink for WindowSink<R> {
    fn emit(&self, event: RunEvent) {
        let run_id = {
            let mut id = self.run_id.lock().unwrap_or_else(|p| p.into_inner());
            if let RunEvent::RunStarted { run_id, .. } = &event {
                *id = run_id.clone();
            }
            id.clone()
        };
        if let Err(error) = self
            .handle
            .emit(RUN_EVENT, RunEventEnvelope { run_id, event })
        {
            // The window went away; the run goes on and is recorded.
            tracing::debug!(%error, "could not forward a run event to the window");
        }
    }
}
