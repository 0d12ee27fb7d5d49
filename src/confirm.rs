//! Confirmation of high-impact effects (seed: "High-impact actions also require a separate human
//! decision").
//!
//! Before the effect, the pipeline records the target, the scope and the expected consequence in a
//! [`ConfirmRequest`] and waits for a [`Decision`]. An approval is bound to that exact call by a
//! digest of tool, canonical arguments, target and scope, and is consumed once: an answer carrying
//! another digest does not approve, and a similar earlier approval never authorises a new call.
//! Approval never replaces sandbox authority: an approved call still cannot leave the project.
//!
//! Precedence of the decision whether to ask at all ([`needs_confirmation`]):
//! 1. `read_only` -> never asked.
//! 2. `high_impact` -> always asked.
//! 3. `writes` -> asked, unless the project setting `confirm.auto_approve_writes` is on and every
//!    target lies inside the project root (the tool says so in `Prepared::inside_project`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

use aibuddy_common::term::{self, DisplaySegment};

use crate::contract::Risk;

pub mod network;
pub use network::{NetworkAnswer, NetworkAsk, NetworkAskDisplay};

/// What the person is asked to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ConfirmRequest {
    pub call_id: String,
    pub tool: String,
    pub risk: Risk,
    /// Binds an approval to exactly this call.
    pub digest: String,
    /// What is affected: a path, a command, `server/tool`.
    pub target: String,
    /// Where it may have effects: project root, sandbox kind, writable roots, dropped secrets...
    pub scope: Vec<String>,
    /// The expected consequence, e.g. "overwrites src/main.rs: 120 lines -> 134 lines".
    pub consequence: String,
    /// A unified diff for edits, when there is one.
    pub diff: Option<String>,
    /// The model's own words about the call (e.g. `execute`'s `description`): unchecked, shown
    /// as the model's claim and apart from `consequence`, which is the app's own assessment.
    pub model_says: Option<String>,
    /// How the fields above are shown (filled by [`ConfirmRequest::revealed`]): the window
    /// renders these segments and the CLI prompt prints the same ones as text, so the two show the
    /// same thing. Boxed: it is most of the request's size, and requests travel inside events.
    pub display: Box<ConfirmDisplay>,
}

/// The shown form of a [`ConfirmRequest`]'s text fields, from [`term::reveal`]: line breaks
/// visible, invisible and format characters as codes, non-ASCII characters marked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ConfirmDisplay {
    pub tool: Vec<DisplaySegment>,
    pub target: Vec<DisplaySegment>,
    /// The visible non-ASCII characters of the target with their codes (`＃ U+FF03`): a note
    /// next to the target, since such a character may look like an ASCII one.
    pub target_non_ascii: Vec<String>,
    pub scope: Vec<Vec<DisplaySegment>>,
    pub consequence: Vec<DisplaySegment>,
    pub model_says: Option<Vec<DisplaySegment>>,
    /// The diff, one entry per line (split at `\n`; a final empty line left out): a bidi override
    /// or zero-width character in proposed file content is shown, not obeyed.
    pub diff: Option<Vec<Vec<DisplaySegment>>>,
}

impl ConfirmDisplay {
    pub fn of(req: &ConfirmRequest) -> Self {
        Self {
            tool: term::reveal(&req.tool),
            target: term::reveal(&req.target),
            target_non_ascii: term::non_ascii(&req.target),
            scope: req.scope.iter().map(|s| term::reveal(s)).collect(),
            consequence: term::reveal(&req.consequence),
            model_says: req.model_says.as_deref().map(term::reveal),
            diff: req.diff.as_deref().map(|d| {
                let body = d.strip_suffix('\n').unwrap_or(d);
                body.split('\n').map(term::reveal).collect()
            }),
        }
    }
}

impl ConfirmRequest {
    /// The request with its [`ConfirmDisplay`] computed from its fields (every request sent to a
    /// person goes through this).
    pub fn revealed(mut self) -> Self {
        self.display = Box::new(ConfirmDisplay::of(&self));
        self
    }
}

/// The answer to a confirm request: the one definition shared with the desktop shell (the store
/// records its outcome as `aibuddy_common::DecisionState`).
pub use aibuddy_common::Decision;

/// Whether a decision approves a request (its digest must match): [`Decision`] lives in
/// `aibuddy-common`, which does not know [`ConfirmRequest`].
pub trait Approves {
    fn approves(&self, req: &ConfirmRequest) -> bool;
}

impl Approves for Decision {
    fn approves(&self, req: &ConfirmRequest) -> bool {
        self.approves_digest(&req.digest)
    }
}

/// Whether a call of this risk needs a person's decision (see the module docs for precedence).
pub fn needs_confirmation(risk: Risk, auto_approve_writes: bool, inside_project: bool) -> bool {
    match risk {
        Risk::ReadOnly => false,
        Risk::HighImpact => true,
        Risk::Writes => !(auto_approve_writes && inside_project),
    }
}

/// Canonical JSON text: object keys sorted at every depth, no insignificant whitespace.
pub fn canonical_json(v: &Value) -> String {
    fn canon(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), canon(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
            other => other.clone(),
        }
    }
    canon(v).to_string()
}

/// The digest that binds an approval to one call.
pub fn call_digest(
    call_id: &str,
    tool: &str,
    args: &Value,
    target: &str,
    scope: &[String],
) -> String {
    let mut h = Sha256::new();
    for part in [call_id, tool, &canonical_json(args), target] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for s in scope {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Whoever answers confirm requests: a CLI prompt, the desktop UI, a test.
#[async_trait]
pub trait ConfirmBroker: Send + Sync {
    /// Wait for the decision. Cancellation (user stop) counts as rejection.
    async fn decide(&self, request: &ConfirmRequest, cancel: &CancellationToken) -> Decision;

    /// [`ConfirmBroker::decide`] with the announcement (`confirm_request` event) made once the
    /// request can be answered: a broker that parks requests until someone answers them
    /// ([`PendingBroker`]) registers the request first, then calls `announce`, then waits, so an
    /// answer given as soon as the event is seen is accepted. The default announces, then decides
    /// (brokers that answer by themselves have nothing to register).
    async fn decide_announced(
        &self,
        request: &ConfirmRequest,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> Decision {
        announce();
        self.decide(request, cancel).await
    }

    /// Whether this broker asks a person about hosts on no network list (`false`: such hosts are
    /// refused without a question, as with `--yes` or without a terminal).
    fn asks_network(&self) -> bool {
        false
    }

    /// The person's answer about a host on no list (see [`network`]). Cancellation, a closed
    /// dialog or nobody to ask: [`NetworkAnswer::Deny`].
    async fn network(&self, _ask: &NetworkAsk, _cancel: &CancellationToken) -> NetworkAnswer {
        NetworkAnswer::Deny
    }

    /// [`ConfirmBroker::network`] with the announcement made once the question can be answered
    /// (as [`ConfirmBroker::decide_announced`]).
    async fn network_announced(
        &self,
        ask: &NetworkAsk,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> NetworkAnswer {
        announce();
        self.network(ask, cancel).await
    }
}

/// Approves everything asked during one invocation (`aibuddy call --yes`).
pub struct ApproveAll;
#[async_trait]
impl ConfirmBroker for ApproveAll {
    async fn decide(&self, request: &ConfirmRequest, _cancel: &CancellationToken) -> Decision {
        Decision::Approved {
            digest: request.digest.clone(),
        }
    }
}

/// Rejects everything (no TTY and no `--yes`).
pub struct RejectAll(pub String);
#[async_trait]
impl ConfirmBroker for RejectAll {
    async fn decide(&self, _request: &ConfirmRequest, _cancel: &CancellationToken) -> Decision {
        Decision::Rejected {
            reason: Some(self.0.clone()),
        }
    }
}

/// Parks each request until someone answers it by call id (the desktop UI, tests). Closing the
/// dialog, dropping the broker or cancelling the call counts as rejection.
type PendingMap = HashMap<String, (ConfirmRequest, oneshot::Sender<Decision>)>;
/// Network questions by `ask_id`.
type NetworkMap = HashMap<String, (NetworkAsk, oneshot::Sender<NetworkAnswer>)>;

#[derive(Default, Clone)]
pub struct PendingBroker {
    pending: Arc<Mutex<PendingMap>>,
    network: Arc<Mutex<NetworkMap>>,
    notify: Arc<tokio::sync::Notify>,
}

/// Unparks a network question however its wait ends (answered, cancelled, or the waiting future
/// dropped).
struct Unpark<'a>(&'a Mutex<NetworkMap>, &'a str);

impl Drop for Unpark<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.0.lock() {
            p.remove(self.1);
        }
    }
}

impl PendingBroker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests waiting for an answer.
    pub fn pending(&self) -> Vec<ConfirmRequest> {
        self.pending
            .lock()
            .map(|p| p.values().map(|(r, _)| r.clone()).collect())
            .unwrap_or_default()
    }

    /// Wait until at least one request is pending.
    pub async fn wait_pending(&self) {
        loop {
            let notified = self.notify.notified();
            if !self.pending().is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Answer the request of `call_id`. Returns false when there is no such pending request. The
    /// decision is delivered as given: an approval carrying another call's digest will not approve.
    pub fn answer(&self, call_id: &str, decision: Decision) -> bool {
        let entry = self.pending.lock().ok().and_then(|mut p| p.remove(call_id));
        match entry {
            Some((_, tx)) => tx.send(decision).is_ok(),
            None => false,
        }
    }
}

impl PendingBroker {
    /// Network questions waiting for an answer.
    pub fn pending_network(&self) -> Vec<NetworkAsk> {
        self.network
            .lock()
            .map(|p| p.values().map(|(a, _)| a.clone()).collect())
            .unwrap_or_default()
    }

    /// Wait until at least one network question is pending.
    pub async fn wait_network_pending(&self) {
        loop {
            let notified = self.notify.notified();
            if !self.pending_network().is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Answers the network question `ask_id`. False when there is no such open question.
    pub fn answer_network(&self, ask_id: &str, answer: NetworkAnswer) -> bool {
        let entry = self.network.lock().ok().and_then(|mut p| p.remove(ask_id));
        match entry {
            Some((_, tx)) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Parks `request` (answerable from now on) and wakes [`PendingBroker::wait_pending`].
    fn register(&self, request: &ConfirmRequest) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(request.call_id.clone(), (request.clone(), tx));
        }
        self.notify.notify_waiters();
        rx
    }

    /// Waits for the answer of a registered request (cancellation rejects); unparks it.
    async fn wait(
        &self,
        request: &ConfirmRequest,
        rx: oneshot::Receiver<Decision>,
        cancel: &CancellationToken,
    ) -> Decision {
        let decision = tokio::select! {
            d = rx => d.unwrap_or(Decision::Rejected { reason: Some("the confirmation was closed".into()) }),
            _ = cancel.cancelled() => Decision::Rejected { reason: Some("the call was cancelled while waiting".into()) },
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&request.call_id);
        }
        decision
    }
}

#[async_trait]
impl ConfirmBroker for PendingBroker {
    async fn decide(&self, request: &ConfirmRequest, cancel: &CancellationToken) -> Decision {
        let rx = self.register(request);
        self.wait(request, rx, cancel).await
    }

    async fn decide_announced(
        &self,
        request: &ConfirmRequest,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> Decision {
        let rx = self.register(request);
        announce();
        self.wait(request, rx, cancel).await
    }

    fn asks_network(&self) -> bool {
        true
    }

    async fn network(&self, ask: &NetworkAsk, cancel: &CancellationToken) -> NetworkAnswer {
        self.network_announced(ask, cancel, &|| {}).await
    }

    async fn network_announced(
        &self,
        ask: &NetworkAsk,
        cancel: &CancellationToken,
        announce: &(dyn Fn() + Send + Sync),
    ) -> NetworkAnswer {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.network.lock() {
            p.insert(ask.ask_id.clone(), (ask.clone(), tx));
        }
        let _unpark = Unpark(&self.network, &ask.ask_id);
        self.notify.notify_waiters();
        announce();
        tokio::select! {
            a = rx => a.unwrap_or(NetworkAnswer::Deny),
            _ = cancel.cancelled() => NetworkAnswer::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn precedence_table() {
        // (risk, auto_approve_writes, inside_project) -> asks
        let table = [
            (Risk::ReadOnly, false, false, false),
            (Risk::ReadOnly, true, true, false),
            (Risk::Writes, false, true, true),
            (Risk::Writes, true, true, false),
            (Risk::Writes, true, false, true),
            (Risk::HighImpact, true, true, true),
            (Risk::HighImpact, false, false, true),
        ];
        for (risk, auto, inside, expect) in table {
            assert_eq!(
                needs_confirmation(risk, auto, inside),
                expect,
                "{risk:?} {auto} {inside}"
            );
        }
    }

    #[test]
    fn digest_is_canonical_and_specific() {
        let a = call_digest(
            "c1",
            "write_file",
            &json!({"path": "a", "content": "x"}),
            "a",
            &[],
        );
        let a2 = call_digest(
            "c1",
            "write_file",
            &json!({"content": "x", "path": "a"}),
            "a",
            &[],
        );
        let b = call_digest(
            "c1",
            "write_file",
            &json!({"path": "a", "content": "y"}),
            "a",
            &[],
        );
        let c = call_digest(
            "c2",
            "write_file",
            &json!({"path": "a", "content": "x"}),
            "a",
            &[],
        );
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    fn req(call_id: &str, digest: &str) -> ConfirmRequest {
        ConfirmRequest {
            call_id: call_id.into(),
            tool: "write_file".into(),
            risk: Risk::Writes,
            digest: digest.into(),
            target: "a.txt".into(),
            scope: vec![],
            consequence: "creates a.txt".into(),
            diff: None,
            model_says: None,
            display: Default::default(),
        }
        .revealed()
    }

    /// A network question is answerable by its id once announced, exactly once; a cancelled wait
    /// answers deny and leaves nothing pending; brokers that ask nobody refuse.
    #[tokio::test]
    async fn network_questions_are_parked_answered_once_and_unparked() {
        let broker = PendingBroker::new();
        let ask = NetworkAsk {
            ask_id: "n1".into(),
            call_id: "c1".into(),
            tool: "execute".into(),
            host: "example.com".into(),
            port: 443,
            target: "curl https://example.com".into(),
            display: Default::default(),
        }
        .revealed();
        let (b2, a2) = (broker.clone(), ask.clone());
        let task = tokio::spawn(async move {
            b2.network_announced(&a2, &CancellationToken::new(), &|| {})
                .await
        });
        broker.wait_network_pending().await;
        assert_eq!(broker.pending_network(), vec![ask.clone()]);
        assert!(!broker.answer_network("other", NetworkAnswer::Once));
        assert!(broker.answer_network("n1", NetworkAnswer::Project));
        assert!(
            !broker.answer_network("n1", NetworkAnswer::Once),
            "answered once"
        );
        assert_eq!(task.await.unwrap(), NetworkAnswer::Project);

        let cancel = CancellationToken::new();
        let (b3, a3, c3) = (broker.clone(), ask.clone(), cancel.clone());
        let task = tokio::spawn(async move { b3.network(&a3, &c3).await });
        broker.wait_network_pending().await;
        cancel.cancel();
        assert_eq!(task.await.unwrap(), NetworkAnswer::Deny);
        assert!(broker.pending_network().is_empty());

        assert!(broker.asks_network());
        assert!(!ApproveAll.asks_network() && !RejectAll(String::new()).asks_network());
        assert_eq!(
            ApproveAll.network(&ask, &CancellationToken::new()).await,
            NetworkAnswer::Deny,
            "--yes never allows an unlisted host"
        );
    }

    /// Issue 22: every shown field is revealed; the model's words stay apart from the consequence.
    #[test]
    fn the_display_reveals_every_shown_field() {
        let mut r = req("c", "d");
        r.target = "echo a\nrm -rf src\u{200B}".into();
        r.model_says = Some("tidies".into());
        r.diff = Some("+x\u{202E}y\r\n-z\n".into());
        let shown = r.revealed().display;
        let text = |t: &str| DisplaySegment::Text { text: t.into() };
        let code = |c: &str| DisplaySegment::Code { code: c.into() };
        assert_eq!(
            *shown,
            ConfirmDisplay {
                tool: vec![text("write_file")],
                target: vec![
                    text("echo a"),
                    DisplaySegment::LineBreak,
                    text("rm -rf src"),
                    code("U+200B")
                ],
                target_non_ascii: vec![],
                scope: vec![],
                consequence: vec![text("creates a.txt")],
                model_says: Some(vec![text("tidies")]),
                diff: Some(vec![
                    vec![text("+x"), code("U+202E"), text("y"), code("CR")],
                    vec![text("-z")]
                ]),
            }
        );
    }

    #[tokio::test]
    async fn pending_broker_binds_answer_to_digest() {
        let broker = PendingBroker::new();
        let b2 = broker.clone();
        let cancel = CancellationToken::new();
        let r = req("call-b", "digest-b");
        let task = tokio::spawn(async move { b2.decide(&r, &CancellationToken::new()).await });
        broker.wait_pending().await;
        // An approval meant for call A (its digest) delivered to B does not approve B.
        assert!(broker.answer(
            "call-b",
            Decision::Approved {
                digest: "digest-a".into()
            }
        ));
        let d = task.await.unwrap();
        assert!(!d.approves(&req("call-b", "digest-b")));
        // Consumed once: a second answer finds nothing pending.
        assert!(!broker.answer(
            "call-b",
            Decision::Approved {
                digest: "digest-b".into()
            }
        ));
        drop(cancel);
    }

    /// Whoever sees the announcement can answer at once: the request is registered before it.
    #[tokio::test]
    async fn an_answer_given_during_the_announcement_is_accepted() {
        let broker = PendingBroker::new();
        let r = req("call-now", "digest-now");
        let answered = std::sync::atomic::AtomicBool::new(false);
        let announce = || {
            let ok = broker.answer(
                "call-now",
                Decision::Approved {
                    digest: "digest-now".into(),
                },
            );
            answered.store(ok, std::sync::atomic::Ordering::SeqCst);
        };
        let d = broker
            .decide_announced(&r, &CancellationToken::new(), &announce)
            .await;
        assert!(answered.load(std::sync::atomic::Ordering::SeqCst));
        assert!(d.approves(&r));
        assert!(broker.pending().is_empty());
    }

    #[tokio::test]
    async fn cancel_while_waiting_rejects() {
        let broker = PendingBroker::new();
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        let b2 = broker.clone();
        let task = tokio::spawn(async move { b2.decide(&req("c", "d"), &c2).await });
        broker.wait_pending().await;
        cancel.cancel();
        assert!(matches!(task.await.unwrap(), Decision::Rejected { .. }));
        assert!(broker.pending().is_empty());
    }
}
