//! [`PendingQuestions`]: parks each question until someone answers it by id (the desktop's
//! `answer_ask_user` command, tests). Closing, dropping the broker or stopping the run answers
//! [`HumanAnswer::Cancelled`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::{HumanAnswer, HumanBroker, HumanQuestion, check_answer};

/// A question and its answer's channel: the sender until `answer` uses it, the receiver until
/// `ask` takes it (a question made answerable by `expect` can be answered before `ask` runs; the
/// answer then waits in the receiver).
struct Slot {
    question: HumanQuestion,
    tx: Option<oneshot::Sender<HumanAnswer>>,
    rx: Option<oneshot::Receiver<HumanAnswer>>,
}

type PendingMap = HashMap<String, Slot>;

#[derive(Default, Clone)]
pub struct PendingQuestions {
    pending: Arc<Mutex<PendingMap>>,
    notify: Arc<Notify>,
}

/// Whether `answer` may answer `question` (a form only an elicitation, a question's answer only
/// what fits it; declining or cancelling anything). Pure.
fn fits(question: &HumanQuestion, answer: &HumanAnswer) -> bool {
    match (question, answer) {
        (_, HumanAnswer::Declined | HumanAnswer::Cancelled) => true,
        (HumanQuestion::Ask(q), a @ HumanAnswer::Answer { .. }) => check_answer(q, a).is_ok(),
        (HumanQuestion::Elicit(_), HumanAnswer::Form { .. }) => true,
        _ => false,
    }
}

impl PendingQuestions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Questions waiting for an answer.
    pub fn pending(&self) -> Vec<HumanQuestion> {
        self.pending
            .lock()
            .map(|p| {
                p.values()
                    .filter(|slot| slot.tx.is_some())
                    .map(|slot| slot.question.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Wait until at least one question is pending.
    pub async fn wait_pending(&self) {
        loop {
            let notified = self.notify.notified();
            if !self.pending().is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Answer the question `id`. Returns false when no such question is pending or the answer
    /// does not fit it (an unknown option, two picks of a single choice, free text where only
    /// options are accepted, a form for a question): the question then stays pending.
    pub fn answer(&self, id: &str, answer: HumanAnswer) -> bool {
        let Ok(mut p) = self.pending.lock() else {
            return false;
        };
        let Some(slot) = p.get_mut(id) else {
            return false;
        };
        if slot.tx.is_none() || !fits(&slot.question, &answer) {
            return false;
        }
        let Some(tx) = slot.tx.take() else {
            return false;
        };
        // Asked already: the slot is done. Not yet: it keeps the receiver for `ask`.
        if slot.rx.is_none() {
            p.remove(id);
        }
        tx.send(answer).is_ok()
    }

    /// The receiver of `question`'s answer: the one `expect` parked, else a fresh slot.
    fn open(&self, question: &HumanQuestion) -> Option<oneshot::Receiver<HumanAnswer>> {
        let mut p = self.pending.lock().ok()?;
        let id = question.id().to_string();
        let rx = match p.get_mut(&id) {
            Some(slot) => {
                let rx = slot.rx.take();
                if slot.tx.is_none() {
                    // Answered between `expect` and now: the answer is in `rx`.
                    p.remove(&id);
                }
                rx
            }
            None => {
                let (tx, rx) = oneshot::channel();
                p.insert(
                    id,
                    Slot {
                        question: question.clone(),
                        tx: Some(tx),
                        rx: None,
                    },
                );
                Some(rx)
            }
        };
        drop(p);
        self.notify.notify_waiters();
        rx
    }
}

#[async_trait]
impl HumanBroker for PendingQuestions {
    fn expect(&self, question: &HumanQuestion) {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.entry(question.id().to_string()).or_insert(Slot {
                question: question.clone(),
                tx: Some(tx),
                rx: Some(rx),
            });
        }
        self.notify.notify_waiters();
    }

    async fn ask(&self, question: &HumanQuestion, cancel: &CancellationToken) -> HumanAnswer {
        // None: the question is already being waited for (asked twice under one id), or the map
        // is poisoned: nobody can answer this ask.
        let Some(rx) = self.open(question) else {
            return HumanAnswer::Cancelled;
        };
        let answer = tokio::select! {
            a = rx => a.unwrap_or(HumanAnswer::Cancelled),
            _ = cancel.cancelled() => HumanAnswer::Cancelled,
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(question.id());
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::human::AskRequest;

    fn question(id: &str) -> HumanQuestion {
        HumanQuestion::Ask(AskRequest {
            id: id.into(),
            run_id: "r".into(),
            question: "Color?".into(),
            options: vec!["red".into(), "blue".into()],
            multi_select: false,
            allow_other: false,
        })
    }

    #[tokio::test]
    async fn an_answer_that_does_not_fit_leaves_the_question_pending() {
        let broker = PendingQuestions::new();
        let b2 = broker.clone();
        let task =
            tokio::spawn(async move { b2.ask(&question("q1"), &CancellationToken::new()).await });
        broker.wait_pending().await;
        let wrong = HumanAnswer::Answer {
            selected: vec!["green".into()],
            text: None,
        };
        assert!(!broker.answer("q1", wrong));
        assert!(!broker.answer("nope", HumanAnswer::Declined));
        assert_eq!(broker.pending().len(), 1);
        let right = HumanAnswer::Answer {
            selected: vec!["blue".into()],
            text: None,
        };
        assert!(broker.answer("q1", right.clone()));
        assert_eq!(task.await.unwrap(), right);
        assert!(!broker.answer("q1", HumanAnswer::Declined), "answered once");
        assert!(broker.pending().is_empty());
    }

    #[tokio::test]
    async fn an_answer_between_expect_and_ask_is_the_asks_answer() {
        let broker = PendingQuestions::new();
        let q = question("q3");
        broker.expect(&q);
        assert_eq!(broker.pending().len(), 1, "answerable once expected");
        assert!(broker.answer("q3", HumanAnswer::Declined));
        assert!(broker.pending().is_empty(), "answered");
        assert!(!broker.answer("q3", HumanAnswer::Declined), "answered once");
        let answer = broker.ask(&q, &CancellationToken::new()).await;
        assert_eq!(answer, HumanAnswer::Declined);
        assert!(!broker.answer("q3", HumanAnswer::Declined));
        assert!(
            broker.pending.lock().unwrap().is_empty(),
            "nothing left behind"
        );
    }

    #[tokio::test]
    async fn stop_while_waiting_answers_cancelled() {
        let broker = PendingQuestions::new();
        let cancel = CancellationToken::new();
        let (b2, c2) = (broker.clone(), cancel.clone());
        let task = tokio::spawn(async move { b2.ask(&question("q2"), &c2).await });
        broker.wait_pending().await;
        cancel.cancel();
        assert_eq!(task.await.unwrap(), HumanAnswer::Cancelled);
        assert!(broker.pending().is_empty());
    }
}
