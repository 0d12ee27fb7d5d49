//! The agent's side of the broker: [`RunHuman`] wraps the host's broker for one run (announcing
//! each question, stored answers, the run's stop), [`HumanElicitation`] routes MCP elicitations
//! into it. The announcement is the caller's ([`Announce`]: the agent makes it a run event), so
//! this module does not know the agent.

use std::sync::Arc;

use aibuddy_mcp::{ElicitationBroker, ElicitationRequest, ElicitationResponse};
use aibuddy_store::{Store, UserAnswer};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::PersonWaits;
use super::{
    ElicitRequest, HumanAnswer, HumanBroker, HumanQuestion, answer_json, check_answer,
    question_json,
};

/// The host's broker as one run uses it: announces each question as a run event (`ask_user`,
/// `elicitation`), ends the wait when the run stops, and stores each `ask_user_question` answer
/// in `user_answers` (question, answer, run, tool call) for the context rebuild.
pub struct RunHuman {
    inner: Arc<dyn HumanBroker>,
    announce: Announce,
    store: Option<Store>,
    run_id: String,
    cancel: CancellationToken,
    /// Read by the run's idle watchdog: a pending question is not a stalled call.
    waits: Arc<PersonWaits>,
    /// Told when a question is announced (`what`, id): the run's `waiting_for_person` hooks.
    on_wait: Option<WaitNotice>,
}

/// Called with each question just before the person is asked (the agent emits its run event).
pub type Announce = Arc<dyn Fn(&HumanQuestion) + Send + Sync>;

/// Called with what waits (`question`, `elicitation`) and its id when the person is asked.
pub type WaitNotice = Arc<dyn Fn(&str, &str) + Send + Sync>;

impl RunHuman {
    pub fn new(
        inner: Arc<dyn HumanBroker>,
        announce: Announce,
        store: Option<Store>,
        run_id: &str,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            inner,
            announce,
            store,
            run_id: run_id.to_string(),
            cancel,
            waits: Arc::default(),
            on_wait: None,
        }
    }

    /// Tell `notice` each time a question is announced.
    pub fn with_wait_notice(mut self, notice: WaitNotice) -> Self {
        self.on_wait = Some(notice);
        self
    }

    /// The waits the run's watchdog reads (see [`PersonWaits`]).
    pub fn waits(&self) -> Arc<PersonWaits> {
        self.waits.clone()
    }

    fn announce(&self, question: &HumanQuestion) {
        if let Some(notice) = &self.on_wait {
            match question {
                HumanQuestion::Ask(a) => notice("question", &a.id),
                HumanQuestion::Elicit(e) => notice("elicitation", &e.id),
            }
        }
        (self.announce)(question);
    }

    /// Stores an answer for the context rebuild: an `ask_user_question` answer under its call; an
    /// elicitation's under the MCP call in flight that it arrived during (`call`), when known.
    async fn record(&self, question: &HumanQuestion, answer: &HumanAnswer, call: Option<&str>) {
        let Some(store) = &self.store else {
            return;
        };
        let row = match question {
            HumanQuestion::Ask(q) => answer_json(answer)
                .filter(|_| check_answer(q, answer).is_ok())
                .map(|a| (q.id.clone(), question_json(q), a)),
            HumanQuestion::Elicit(e) => call.and_then(|id| {
                elicit_answer_json(e, answer).map(|a| (id.to_string(), elicit_question_json(e), a))
            }),
        };
        let Some((tool_call_id, question, answer)) = row else {
            return;
        };
        let answered_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let row = UserAnswer {
            tool_call_id,
            run_id: Some(self.run_id.clone()),
            question,
            answer,
            answered_at_ms,
        };
        let call = row.tool_call_id.clone();
        if let Err(e) = store.record_user_answer(row).await {
            tracing::warn!(run = %self.run_id, %call, "the answer was not stored: {e}");
        }
    }

    /// Asks `question` for the run; `call` names the tool call an elicitation arrived during.
    async fn ask_for(
        &self,
        question: &HumanQuestion,
        cancel: &CancellationToken,
        call: Option<&str>,
    ) -> HumanAnswer {
        let _waiting = self.waits.begin();
        self.inner.expect(question);
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
        self.record(question, &answer, call).await;
        answer
    }
}

#[async_trait]
impl HumanBroker for RunHuman {
    fn expect(&self, question: &HumanQuestion) {
        self.inner.expect(question);
    }

    async fn ask(&self, question: &HumanQuestion, cancel: &CancellationToken) -> HumanAnswer {
        self.ask_for(question, cancel, None).await
    }
}

/// The stored form of an elicitation question (`user_answers.question`). The server's message
/// and schema are kept as data; `kind` tells the context rebuild it is not the model's question.
pub fn elicit_question_json(e: &ElicitRequest) -> Value {
    json!({"kind": "elicitation", "server": e.server, "message": e.message, "schema": e.schema})
}

/// The stored form of an elicitation's answer: the submitted form as the server receives it
/// (schema defaults filled in), or a refusal. Nothing is stored for a dismissed or unanswerable
/// request. Pure.
pub fn elicit_answer_json(e: &ElicitRequest, answer: &HumanAnswer) -> Option<Value> {
    match answer {
        HumanAnswer::Form { content } => {
            let mut content = content.clone();
            aibuddy_mcp::elicitation::apply_schema_defaults(&e.schema, &mut content);
            Some(json!({"form": content}))
        }
        HumanAnswer::Declined => Some(json!({"declined": true})),
        _ => None,
    }
}

/// The elicitations of one tool call of a run: each request that arrives while the call is in
/// flight is asked through the run's [`RunHuman`] (run events, the run's stop) and its answer is
/// stored under that call (`user_answers`), so the next requests carry it as the person's text.
/// Installed per call by the agent (`aibuddy_mcp::with_caller`).
pub struct CallElicitation {
    run: Arc<RunHuman>,
    tool_call_id: String,
}

impl CallElicitation {
    pub fn new(run: Arc<RunHuman>, tool_call_id: &str) -> Self {
        Self {
            run,
            tool_call_id: tool_call_id.to_string(),
        }
    }
}

/// An MCP elicitation request as a question to the person. Pure apart from the fresh id.
fn elicit_question(request: ElicitationRequest) -> HumanQuestion {
    HumanQuestion::Elicit(ElicitRequest {
        id: format!("elicit_{}", ulid::Ulid::new().to_string().to_lowercase()),
        server: request.server,
        message: request.message,
        schema: request.schema,
        defaults: request.defaults,
    })
}

#[async_trait]
impl ElicitationBroker for CallElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        let question = elicit_question(request);
        let cancel = self.run.cancel.clone();
        elicitation_response(
            self.run
                .ask_for(&question, &cancel, Some(&self.tool_call_id))
                .await,
        )
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
        let question = elicit_question(request);
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

    /// The window answers by id as soon as it hears of a question: an answer given from the
    /// announcement itself must reach the run (it was refused as unknown when the inner broker
    /// registered the question only after the announcement).
    #[tokio::test]
    async fn an_answer_given_on_the_announcement_is_taken() {
        let desk = crate::human::PendingQuestions::new();
        let taken = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (d, t) = (desk.clone(), taken.clone());
        let announce: Announce = Arc::new(move |q: &HumanQuestion| {
            let ok = d.answer(q.id(), HumanAnswer::Declined);
            t.lock().unwrap().push(ok);
        });
        let run = RunHuman::new(
            Arc::new(desk.clone()),
            announce,
            None,
            "r",
            CancellationToken::new(),
        );
        for id in ["e1", "e2"] {
            let question = HumanQuestion::Elicit(ElicitRequest {
                id: id.into(),
                server: "s".into(),
                message: "Name?".into(),
                schema: json!({"type": "object"}),
                defaults: Default::default(),
            });
            let answer = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                run.ask(&question, &CancellationToken::new()),
            )
            .await;
            assert_eq!(answer, Ok(HumanAnswer::Declined), "{:?}", taken.lock());
        }
        assert_eq!(*taken.lock().unwrap(), vec![true, true]);
        assert!(desk.pending().is_empty());
    }
}
