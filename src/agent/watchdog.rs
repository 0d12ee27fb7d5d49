//! One streamed step under the idle watchdog, with retries.
//!
//! The idle timer is re-armed by every provider event (pings and SSE comments included) and by
//! tool heartbeats ([`IdleWatchdog::touch`]). When it expires during a stream, the stream is
//! aborted (its connection closed through the step's child token) and the step is retried like a
//! retryable transport failure. A step has a wall-clock bound too (`StepContext::step_timeout`,
//! from its first request to its last event, retries included): past it the step ends
//! [`StepEnd::OverTime`] with the text of the attempt in progress, never retried (a stream that
//! trickles tokens forever re-arms both other timers). Retries follow the provider crate's
//! [`BackoffPolicy`] (429/5xx/overloaded/resets, `retry-after`), each one reported as a `retry`
//! event; other failures end the step with the provider's error.

use crate::human::PersonWaits;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aibuddy_provider::error::TransportKind;
use aibuddy_provider::retry::{RetryDecision, jitter};
use aibuddy_provider::{
    BackoffPolicy, Message, ModelRequest, Provider, ProviderError, ProviderEvent, StopReason, Usage,
};
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::events::{RunEvent, RunEventSink};

/// An idle deadline that any activity pushes back.
#[derive(Debug)]
pub struct IdleWatchdog {
    idle: Duration,
    last: Mutex<Instant>,
    /// Waits for a person (a pending confirmation) in progress: the timer does not run.
    paused: AtomicUsize,
    /// The run's questions to the person (`ask_user_question`, elicitation): same effect.
    person: Option<Arc<PersonWaits>>,
}

impl IdleWatchdog {
    pub fn new(idle: Duration) -> Self {
        Self {
            idle,
            last: Mutex::new(Instant::now()),
            paused: AtomicUsize::new(0),
            person: None,
        }
    }

    /// Also paused while the run's person is being asked (see [`PersonWaits`]).
    pub fn with_person_waits(mut self, waits: Arc<PersonWaits>) -> Self {
        self.person = Some(waits);
        self
    }

    fn person_waiting(&self) -> bool {
        self.person.as_ref().is_some_and(|p| p.waiting())
    }

    /// A person is being asked: silence is expected until [`IdleWatchdog::resume`].
    pub fn pause(&self) {
        self.paused.fetch_add(1, Ordering::SeqCst);
    }

    /// The person answered: the timer runs again from now.
    pub fn resume(&self) {
        let _ = self
            .paused
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.touch();
    }

    /// Something happened (a stream chunk, a tool heartbeat): re-arm.
    pub fn touch(&self) {
        if let Ok(mut l) = self.last.lock() {
            *l = Instant::now();
        }
    }

    fn deadline(&self) -> Instant {
        let last = self
            .last
            .lock()
            .map(|l| *l)
            .unwrap_or_else(|_| Instant::now());
        // The timer starts again when the person answers.
        let last = match &self.person {
            Some(p) => last.max(p.last_end()),
            None => last,
        };
        last + self.idle
    }

    /// Resolves once nothing touched the watchdog for the idle timeout.
    pub async fn expired(&self) {
        loop {
            let deadline = self.deadline();
            tokio::time::sleep_until(deadline).await;
            if self.paused.load(Ordering::SeqCst) > 0 || self.person_waiting() {
                self.touch();
                continue;
            }
            if self.deadline() <= Instant::now() {
                return;
            }
        }
    }
}

/// Guards the tool calls of a step: when nothing (live output, a heartbeat) re-arms the watchdog
/// for the idle timeout, the calls still running are stopped through `tools` (they end
/// cancelled and the model is told); the run goes on. Drop the guard when the calls are done.
pub fn guard_tools(watchdog: Arc<IdleWatchdog>, tools: CancellationToken) -> ToolGuard {
    watchdog.touch();
    let w = watchdog.clone();
    let task = tokio::spawn(async move {
        w.expired().await;
        tracing::warn!(
            idle_s = w.idle.as_secs_f64(),
            "tool calls sent no output or heartbeat for the idle timeout: stopped"
        );
        tools.cancel();
    });
    ToolGuard { task, watchdog }
}

/// See [`guard_tools`]. Dropping it stops the guard and clears pauses a failed call left behind.
pub struct ToolGuard {
    task: tokio::task::JoinHandle<()>,
    watchdog: Arc<IdleWatchdog>,
}

impl Drop for ToolGuard {
    fn drop(&mut self) {
        self.task.abort();
        self.watchdog.paused.store(0, Ordering::SeqCst);
    }
}

/// Why an attempt failed.
#[derive(Debug)]
enum AttemptError {
    Provider(ProviderError),
    /// The idle timer expired.
    Stalled,
    /// Only keep-alives for the keep-alive timeout.
    KeptAlive,
    /// The step's wall-clock bound passed (never retried).
    OverTime,
}

impl AttemptError {
    /// The error the backoff decision is made on: a stall counts as a timed-out transport.
    fn as_provider(&self) -> ProviderError {
        match self {
            AttemptError::Provider(e) => clone_error(e),
            AttemptError::Stalled | AttemptError::KeptAlive | AttemptError::OverTime => {
                ProviderError::Transport {
                    kind: TransportKind::Timeout,
                }
            }
        }
    }

    fn reason(&self, cx: &StepContext<'_>) -> String {
        match self {
            AttemptError::Provider(e) => e.to_string(),
            AttemptError::Stalled => format!(
                "the stream sent nothing for {} s (idle timeout)",
                cx.idle.as_secs_f64()
            ),
            AttemptError::KeptAlive => format!(
                "the stream sent only keep-alives for {} s (keep-alive timeout)",
                cx.keepalive.as_secs_f64()
            ),
            AttemptError::OverTime => over_time_reason(cx.step_timeout),
        }
    }
}

/// `ProviderError` is not `Clone`; the retry decision only needs its class and `retry-after`.
fn clone_error(e: &ProviderError) -> ProviderError {
    match e {
        ProviderError::Http {
            status,
            error_type,
            message,
            retry_after,
        } => ProviderError::Http {
            status: *status,
            error_type: error_type.clone(),
            message: message.clone(),
            retry_after: *retry_after,
        },
        ProviderError::Stream {
            error_type,
            message,
        } => ProviderError::Stream {
            error_type: error_type.clone(),
            message: message.clone(),
        },
        ProviderError::Transport { kind } => ProviderError::Transport { kind: *kind },
        ProviderError::Cancelled => ProviderError::Cancelled,
        other => ProviderError::Protocol(other.to_string()),
    }
}

/// How a step ended.
#[derive(Debug)]
pub enum StepEnd {
    /// The complete assistant message, and why the model stopped (`end_turn` when the stream
    /// named no reason).
    Done {
        message: Message,
        usage: Usage,
        stop: StopReason,
    },
    /// Stopped by the person; the text streamed so far in the last attempt.
    Cancelled { partial_text: String },
    /// A failure that is not retried (or retries ran out).
    Failed { error: ProviderError },
    /// The step's wall-clock bound passed (`StepContext::step_timeout`): the text streamed so far
    /// in the attempt in progress (an Execution failure, [`over_time_reason`]).
    OverTime { partial_text: String },
}

/// Why a step ended [`StepEnd::OverTime`].
pub fn over_time_reason(limit: Duration) -> String {
    format!(
        "the model's response passed the step time limit of {} s (step timeout)",
        limit.as_secs_f64()
    )
}

/// What one step needs besides the request.
pub struct StepContext<'a> {
    pub provider: &'a dyn Provider,
    pub idle: Duration,
    /// See `AgentOptions::keepalive_timeout`.
    pub keepalive: Duration,
    /// See `AgentOptions::step_timeout`.
    pub step_timeout: Duration,
    pub backoff: BackoffPolicy,
    pub step: u32,
    pub cancel: &'a CancellationToken,
    pub events: &'a dyn RunEventSink,
    pub watchdog: &'a IdleWatchdog,
}

/// Usage of attempts that did not complete (reported so the run's totals include them).
pub type AbortedUsage = Vec<Usage>;

/// Streams one step, retrying stalls and retryable failures.
pub async fn stream_step(cx: &StepContext<'_>, req: &ModelRequest) -> (StepEnd, AbortedUsage) {
    let mut aborted = Vec::new();
    let mut attempt = 1u32;
    // Saturating: a huge configured bound means "no bound", never an overflow.
    let deadline = Instant::now()
        .checked_add(cx.step_timeout)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
    let over_time = |partial_text: String| StepEnd::OverTime { partial_text };
    loop {
        let mut partial = String::new();
        let mut usage = Usage::default();
        let mut stop = StopReason::EndTurn;
        let result = one_attempt(cx, req, deadline, &mut partial, &mut usage, &mut stop).await;
        let err = match result {
            Ok(Some(message)) => {
                return (
                    StepEnd::Done {
                        message,
                        usage,
                        stop,
                    },
                    aborted,
                );
            }
            Ok(None) => {
                aborted.push(usage);
                return (
                    StepEnd::Cancelled {
                        partial_text: partial,
                    },
                    aborted,
                );
            }
            Err(AttemptError::OverTime) => {
                aborted.push(usage);
                tracing::warn!(
                    step = cx.step,
                    attempt,
                    limit_s = cx.step_timeout.as_secs_f64(),
                    "step ended at its time limit"
                );
                return (over_time(partial), aborted);
            }
            Err(e) => e,
        };
        aborted.push(usage);
        let decision = cx.backoff.decide(attempt, &err.as_provider(), jitter());
        let reason = err.reason(cx);
        let delay = match decision {
            RetryDecision::RetryAfter(d) => d,
            RetryDecision::GiveUp => {
                let error = match err {
                    AttemptError::Provider(e) => e,
                    AttemptError::Stalled | AttemptError::KeptAlive | AttemptError::OverTime => {
                        ProviderError::Transport {
                            kind: TransportKind::Timeout,
                        }
                    }
                };
                return (StepEnd::Failed { error }, aborted);
            }
        };
        tracing::warn!(step = cx.step, attempt, delay_ms = delay.as_millis() as u64, %reason, "step retried");
        cx.events.emit(RunEvent::Retry {
            step: cx.step,
            attempt,
            delay_ms: delay.as_millis() as u64,
            reason,
        });
        tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => {
                return (StepEnd::Cancelled { partial_text: String::new() }, aborted);
            }
            _ = tokio::time::sleep_until(deadline) => return (over_time(String::new()), aborted),
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// One attempt: `Ok(Some)` complete, `Ok(None)` cancelled by the person.
async fn one_attempt(
    cx: &StepContext<'_>,
    req: &ModelRequest,
    deadline: Instant,
    partial: &mut String,
    usage: &mut Usage,
    stop: &mut StopReason,
) -> Result<Option<Message>, AttemptError> {
    // The step's own token: aborting a stalled stream closes its connection without ending the run.
    let step_cancel = cx.cancel.child_token();
    let _abort_on_exit = step_cancel.clone().drop_guard();
    cx.watchdog.touch();
    let mut stream = tokio::select! {
        biased;
        _ = cx.cancel.cancelled() => return Ok(None),
        _ = tokio::time::sleep_until(deadline) => return Err(AttemptError::OverTime),
        _ = cx.watchdog.expired() => return Err(AttemptError::Stalled),
        s = cx.provider.stream(req, step_cancel.clone()) => match s {
            Ok(s) => s,
            Err(ProviderError::Cancelled) if cx.cancel.is_cancelled() => return Ok(None),
            Err(e) => return Err(AttemptError::Provider(e)),
        },
    };
    // When the stream last carried something other than a keep-alive.
    let mut progress = Instant::now();
    loop {
        let next = tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => return Ok(None),
            _ = tokio::time::sleep_until(deadline) => return Err(AttemptError::OverTime),
            _ = cx.watchdog.expired() => return Err(AttemptError::Stalled),
            n = stream.next() => n,
        };
        cx.watchdog.touch();
        match &next {
            Some(Ok(ProviderEvent::Ping)) => {
                if progress.elapsed() >= cx.keepalive {
                    return Err(AttemptError::KeptAlive);
                }
            }
            _ => progress = Instant::now(),
        }
        match next {
            None => {
                return Err(AttemptError::Provider(ProviderError::Transport {
                    kind: TransportKind::Body,
                }));
            }
            Some(Err(ProviderError::Cancelled)) if cx.cancel.is_cancelled() => return Ok(None),
            Some(Err(e)) => return Err(AttemptError::Provider(e)),
            Some(Ok(ev)) => match ev {
                ProviderEvent::TextDelta { text } => {
                    partial.push_str(&text);
                    cx.events.emit(RunEvent::TextDelta { text });
                }
                ProviderEvent::Usage(u) => usage.merge_max(u),
                ProviderEvent::Stop(reason) => *stop = reason,
                ProviderEvent::MessageEnd { message } => return Ok(Some(message)),
                ProviderEvent::MessageStart { .. }
                | ProviderEvent::ToolCallStart { .. }
                | ProviderEvent::ToolCallArgsDelta { .. }
                | ProviderEvent::ToolCallEnd { .. }
                | ProviderEvent::Ping => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn touch_rearms_and_silence_expires() {
        let w = IdleWatchdog::new(Duration::from_millis(300));
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(200)).await;
        w.touch();
        w.expired().await;
        // Expired 300 ms after the last touch, not after the start (a lower bound only).
        assert!(start.elapsed() >= Duration::from_millis(500));
    }

    #[tokio::test]
    async fn a_pause_holds_the_timer_and_silent_tools_are_stopped() {
        let w = Arc::new(IdleWatchdog::new(Duration::from_millis(100)));
        w.pause();
        let held = tokio::time::timeout(Duration::from_millis(400), w.expired()).await;
        assert!(held.is_err(), "no expiry while a person is asked");
        w.resume();
        w.expired().await;
        // A silent tool batch is cancelled; dropping the guard clears a leaked pause.
        let tools = CancellationToken::new();
        let guard = guard_tools(w.clone(), tools.clone());
        tokio::time::timeout(Duration::from_secs(30), tools.cancelled())
            .await
            .expect("stopped after the idle timeout");
        w.pause();
        drop(guard);
        tokio::time::timeout(Duration::from_secs(30), w.expired())
            .await
            .expect("the pause was cleared");
    }

    #[test]
    fn a_stall_is_retried_like_a_timeout_and_other_errors_keep_their_class() {
        let p = BackoffPolicy::default();
        let stalled = AttemptError::Stalled.as_provider();
        assert!(matches!(
            p.decide(1, &stalled, 0.0),
            RetryDecision::RetryAfter(_)
        ));
        let bad = AttemptError::Provider(ProviderError::Http {
            status: 400,
            error_type: Some("invalid_request_error".into()),
            message: "bad".into(),
            retry_after: None,
        });
        assert_eq!(p.decide(1, &bad.as_provider(), 0.0), RetryDecision::GiveUp);
        let limited = AttemptError::Provider(ProviderError::Http {
            status: 429,
            error_type: None,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(2)),
        });
        assert_eq!(
            p.decide(1, &limited.as_provider(), 0.0),
            RetryDecision::RetryAfter(Duration::from_secs(2))
        );
    }
}
