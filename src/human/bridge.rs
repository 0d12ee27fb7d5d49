//! The agent's side of the broker: [`RunHuman`] wraps the host's broker for one run (run events,
//! stored answers, the run's stop), [`HumanElicitation`] routes MCP elicitations into it.

use std::sync::Arc;

use aibuddy_mcp::{ElicitationBroker, ElicitationRequest, ElicitationResponse};
use aibuddy_store::{Store, UserAnswer};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::PersonWaits;
use super::{
    ElicitRequest, HumanAnswer, HumanBroker, HumanQuestion, answer_json, check_answer,
    question_json,
};
use crate::agent::{RunEvent, RunEventSink};

/// The host's broker as one run uses it: announces each question as a run event (`ask_user`,
/// `elicitation`), ends the wait when the run stops, and stores each `ask_user_question` answer
/// in `user_answers` (question, answer, run, tool call) for the context rebuild.
pub struct RunHuman {
    inner: Arc<dyn HumanBroker>,
    events: Arc<dyn RunEventSink>,
    store: Option<Store>,
    run_id: String,
    cancel: CancellationToken,
    /// Read by the run's idle watchdog: a pending question is not a stalled call.
    waits: Arc<PersonWaits>,
}

impl RunHuman {
    pub fn new(
        inner: Arc<dyn HumanBroker>,
        events: Arc<dyn RunEventSink>,
        store: Option<Store>,
        run_id: &str,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            inner,
            events,
            store,
            run_id: run_id.to_string(),
            cancel,
            waits: Arc::default(),
        }
    }

    /// The waits the run's watchdog reads (see [`PersonWaits`]).
    pub fn waits(&self) -> Arc<PersonWaits> {
        self.waits.clone()
    }

    fn announce(&self, question: &HumanQuestion) {
        self.events.emit(match question {
            HumanQuestion::Ask(a) => RunEvent::AskUser {
                tool_call_id: a.id.clone(),
                question: a.question.clone(),
                options: a.options.clone(),
                multi_select: a.multi_select,
                allow_other: a.allow_other,
            },
            HumanQuestion::Elicit(e) => RunEvent::Elicitation {
                elicitation_id: e.id.clone(),
                server: e.server.clone(),
                message: e.message.clone(),
                schema: e.schema.clone(),
            },
        });
    }

    async fn record(&self, question: &HumanQuestion, answer: &HumanAnswer) {
        let (HumanQuestion::Ask(q), Some(store)) = (question, &self.store) else {
            return;
        };
        let Some(stored) = answer_json(answer).filter(|_| check_answer(q, answer).is_ok()) else {
            return;
        };
        let answered_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let row = UserAnswer {
            tool_call_id: q.id.clone(),
            run_id: Some(self.run_id.clone()),
            question: question_json(q),
            answer: stored,
            answered_at_ms,
        };
        if let Err(e) = store.record_user_answer(row).await {
            tracing::warn!(run = %self.run_id, call = %q.id, "the answer was not stored: {e}");
        }
    }
}

#[async_trait]
impl HumanBroker for RunHuman {
    async fn ask(&self, question: &HumanQuestion, cancel: &CancellationToken) -> HumanAnswer {
        let _waiting = self.waits.begin();
        self.announce(question);
        // One token for the inner broker: the run's stop or the call's cancellation ends it.
        let both = self.cancel.child_token();
        let ask = self.inner.ask(question, &both);
        tokio::pin!(ask);
        let answer = tokio::select! {
            a = &mut ask => a,
            _ = cancel.cancelled() => {
                both.cancel();
                ask.await
            }
        };
        self.record(question, &answer).await;
        answer
    }
}

/// MCP elicitation requests as questions to a [`HumanBroker`]. Nobody to ask declines (as the
/// mcp crate's default does); an answer of the wrong kind cancels.
pub struct HumanElicitation {
    human: Arc<dyn HumanBroker>,
    cancel: CancellationToken,
}

impl HumanElicitation {
    pub fn new(human: Arc<dyn HumanBroker>, cancel: CancellationToken) -> Self {
        Self { human, cancel }
    }
}

/// The elicitation response of an answer. Pure.
pub fn elicitation_response(answer: HumanAnswer) -> ElicitationResponse {
    match answer {
        HumanAnswer::Form { content } => ElicitationResponse::Accept(content),
        HumanAnswer::Declined | HumanAnswer::Unavailable { .. } => ElicitationResponse::Decline,
        HumanAnswer::Cancelled | HumanAnswer::Answer { .. } => ElicitationResponse::Cancel,
    }
}

#[async_trait]
impl ElicitationBroker for HumanElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        let question = HumanQuestion::Elicit(ElicitRequest {
            id: format!("elicit_{}", ulid::Ulid::new().to_string().to_lowercase()),
            server: request.server,
            message: request.message,
            schema: request.schema,
            defaults: request.defaults,
        });
        elicitation_response(self.human.ask(&question, &self.cancel).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_elicitation_responses() {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), serde_json::json!("Ada"));
        assert_eq!(
            elicitation_response(HumanAnswer::Form { content: m.clone() }),
            ElicitationResponse::Accept(m)
        );
        assert_eq!(
            elicitation_response(HumanAnswer::Unavailable { reason: "x".into() }),
            ElicitationResponse::Decline
        );
        assert_eq!(
            elicitation_response(HumanAnswer::Answer {
                selected: vec![],
                text: Some("t".into())
            }),
            ElicitationResponse::Cancel
        );
        assert_eq!(
            elicitation_response(HumanAnswer::Cancelled),
            ElicitationResponse::Cancel
        );
    }
}
