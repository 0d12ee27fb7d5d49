//! Elicitation: a server asks the person for structured input during a call. Requests go to an
//! [`ElicitationBroker`] supplied by the host: aibuddy adapts its one broker for human questions
//! (`aibuddy::human`, shared with `ask_user_question`), so the terminal prompt and the desktop
//! dialog live with the host, not here. Defaults that the
//! requested schema declares are applied to accepted content for fields the person left out
//! (SEP-1034), so a bare "accept" sends the documented defaults.

//!
//! **Which caller a request belongs to.** A server's `elicitation/create` arrives while one of its
//! `tools/call` requests is in flight, but over stdio nothing in the message names that call. The
//! caller of [`crate::McpManager::call`] may run the call inside [`with_caller`], naming who asks
//! (a key such as the run id, and that call's own broker); the manager keeps the callers of the
//! calls in flight per server ([`Callers`]), and a request goes to the broker of the call in
//! flight on the asking server. Several calls in flight there for the same key: the oldest one's
//! broker. For different keys (two runs calling the same server at once) nobody can tell whose
//! call asked: the request is declined rather than shown to the wrong person. No caller named:
//! the host's broker (`McpHandlers::elicitation`). No call in flight on the asking server at all:
//! the request is declined without asking anyone (a server may only ask in the course of a call
//! it was given; an idle server popping up a form, "enter your token", is refused).
//!
//! **How often.** One call may ask at most [`MAX_PER_CALL`] times; further requests during that
//! call are declined without asking anyone, so a server cannot keep the person in an endless
//! series of forms (each one needs an answer, and a decline just brings the next).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};

/// One elicitation request as the broker sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitationRequest {
    /// Configured name of the server asking.
    pub server: String,
    /// Human-readable message from the server.
    pub message: String,
    /// The requested JSON Schema (an object of primitive properties).
    pub schema: Value,
    /// The defaults declared in `schema`, for pre-filling a form.
    pub defaults: Map<String, Value>,
}

/// What the person decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
pub enum ElicitationResponse {
    /// Submit these values (omitted fields receive the schema's defaults).
    Accept(Map<String, Value>),
    /// Explicitly refuse.
    Decline,
    /// Dismiss without choosing.
    Cancel,
}

/// Asks a person on behalf of an MCP server.
#[async_trait]
pub trait ElicitationBroker: Send + Sync {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse;
}

/// A broker for hosts that cannot ask anyone: declines every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclineElicitation;

#[async_trait]
impl ElicitationBroker for DeclineElicitation {
    async fn elicit(&self, _request: ElicitationRequest) -> ElicitationResponse {
        ElicitationResponse::Decline
    }
}

/// Who makes a call: requests that arrive while it is in flight go to `broker`. `key` groups the
/// calls of one asker (e.g. the run id): calls of one key may share a broker's attention.
#[derive(Clone)]
pub struct CallerElicitation {
    pub key: String,
    pub broker: Arc<dyn ElicitationBroker>,
}

tokio::task_local! {
    static CALLER: CallerElicitation;
}

/// Runs `fut` (which makes MCP calls) as `caller`: elicitations that arrive while its calls are in
/// flight go to `caller.broker`.
pub async fn with_caller<F: Future>(caller: CallerElicitation, fut: F) -> F::Output {
    CALLER.scope(caller, fut).await
}

/// The caller of the current task, if it runs inside [`with_caller`].
pub(crate) fn current_caller() -> Option<CallerElicitation> {
    CALLER.try_with(Clone::clone).ok()
}

struct InFlight {
    seq: u64,
    server: String,
    caller: Option<CallerElicitation>,
    /// Requests routed to someone during this call.
    asked: u32,
}

/// Elicitation requests one call may put to the person; later ones are declined.
pub const MAX_PER_CALL: u32 = 5;

/// The callers of the calls in flight, per server (see the module docs).
#[derive(Default)]
pub(crate) struct Callers {
    next: AtomicU64,
    calls: Mutex<Vec<InFlight>>,
}

/// Where one elicitation request goes. Pure outcome of [`Callers::route`].
pub(crate) enum Route {
    /// No call is in flight on the server: nobody is asked, the request is declined.
    Idle,
    /// No call in flight on the server names a caller: the host's broker.
    Host,
    Caller(Arc<dyn ElicitationBroker>),
    /// Calls of different callers (or a caller and an anonymous call) are in flight there.
    Ambiguous(Vec<String>),
    /// The call it belongs to already asked [`MAX_PER_CALL`] times.
    TooMany,
}

impl Callers {
    /// Records a call in flight on `server` until the guard drops.
    pub fn enter(self: &Arc<Self>, server: &str, caller: Option<CallerElicitation>) -> CallerGuard {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(InFlight {
                seq,
                server: server.to_owned(),
                caller,
                asked: 0,
            });
        CallerGuard {
            callers: self.clone(),
            seq,
        }
    }

    /// Where a request of `server` goes; a request that reaches someone counts against the call
    /// it belongs to (the oldest in flight on the server).
    pub fn route(&self, server: &str) -> Route {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let route = Self::decide(&calls, server);
        if matches!(route, Route::Host | Route::Caller(_))
            && let Some(call) = calls
                .iter_mut()
                .filter(|c| c.server == server)
                .min_by_key(|c| c.seq)
        {
            if call.asked >= MAX_PER_CALL {
                return Route::TooMany;
            }
            call.asked += 1;
        }
        route
    }

    fn decide(calls: &[InFlight], server: &str) -> Route {
        let here: Vec<&InFlight> = calls.iter().filter(|c| c.server == server).collect();
        let mut keys: Vec<String> = here
            .iter()
            .map(|c| c.caller.as_ref().map_or(String::new(), |c| c.key.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        match (keys.len(), here.iter().min_by_key(|c| c.seq)) {
            (
                1,
                Some(InFlight {
                    caller: Some(c), ..
                }),
            ) => Route::Caller(c.broker.clone()),
            (_, None) => Route::Idle,
            (0 | 1, _) => Route::Host,
            _ => Route::Ambiguous(keys),
        }
    }
}

/// Removes its call from [`Callers`] when the call ends, however it ends.
pub(crate) struct CallerGuard {
    callers: Arc<Callers>,
    seq: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        self.callers
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|c| c.seq != self.seq);
    }
}

/// The manager's broker: routes each request to its caller's broker, or to the host's.
pub(crate) struct RoutedElicitation {
    pub host: Arc<dyn ElicitationBroker>,
    pub callers: Arc<Callers>,
}

#[async_trait]
impl ElicitationBroker for RoutedElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        match self.callers.route(&request.server) {
            Route::Idle => {
                tracing::warn!(
                    server = %request.server,
                    "elicitation declined: no call is in flight on this server"
                );
                ElicitationResponse::Decline
            }
            Route::Host => self.host.elicit(request).await,
            Route::Caller(broker) => broker.elicit(request).await,
            Route::Ambiguous(keys) => {
                tracing::warn!(
                    server = %request.server,
                    callers = keys.len(),
                    "elicitation declined: calls of several callers are in flight on this server, \
                so whose call asked is unknown"
                );
                ElicitationResponse::Decline
            }
            Route::TooMany => {
                tracing::warn!(
                    server = %request.server,
                    max = MAX_PER_CALL,
                    "elicitation declined: this call already asked the person its allowance"
                );
                ElicitationResponse::Decline
            }
        }
    }
}

/// The `default` of every property in an object schema. Pure.
pub fn schema_defaults(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                out.insert(name.clone(), default.clone());
            }
        }
    }
    out
}

/// Fills every property missing from `content` with its schema default. Pure.
pub fn apply_schema_defaults(schema: &Value, content: &mut Map<String, Value>) {
    for (name, default) in schema_defaults(schema) {
        content.entry(name).or_insert(default);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }})
    }

    #[test]
    fn defaults_fill_only_missing_fields() {
        let mut content = Map::new();
        content.insert("name".into(), json!("Ada"));
        apply_schema_defaults(&schema(), &mut content);
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
    }

    struct Named(&'static str);

    #[async_trait]
    impl ElicitationBroker for Named {
        async fn elicit(&self, _request: ElicitationRequest) -> ElicitationResponse {
            let mut m = Map::new();
            m.insert("by".into(), json!(self.0));
            ElicitationResponse::Accept(m)
        }
    }

    fn caller(key: &str, name: &'static str) -> Option<CallerElicitation> {
        Some(CallerElicitation {
            key: key.into(),
            broker: Arc::new(Named(name)),
        })
    }

    fn request(server: &str) -> ElicitationRequest {
        ElicitationRequest {
            server: server.into(),
            message: "m".into(),
            schema: json!({"type": "object"}),
            defaults: Map::new(),
        }
    }

    async fn asked(broker: &RoutedElicitation, server: &str) -> ElicitationResponse {
        broker.elicit(request(server)).await
    }

    fn by(name: &str) -> ElicitationResponse {
        let mut m = Map::new();
        m.insert("by".into(), json!(name));
        ElicitationResponse::Accept(m)
    }

    #[tokio::test]
    async fn requests_reach_the_caller_of_the_call_in_flight_on_their_server() {
        let callers = Arc::new(Callers::default());
        let routed = RoutedElicitation {
            host: Arc::new(Named("host")),
            callers: callers.clone(),
        };
        assert_eq!(
            asked(&routed, "a").await,
            ElicitationResponse::Decline,
            "nothing in flight: declined, nobody asked"
        );
        let run1 = callers.enter("a", caller("run1", "run1-call1"));
        let run2 = callers.enter("b", caller("run2", "run2-call1"));
        assert_eq!(asked(&routed, "a").await, by("run1-call1"));
        assert_eq!(asked(&routed, "b").await, by("run2-call1"));
        // A second call of the same run on `a`: still that run, the oldest call's broker.
        let run1b = callers.enter("a", caller("run1", "run1-call2"));
        assert_eq!(asked(&routed, "a").await, by("run1-call1"));
        drop(run1);
        assert_eq!(asked(&routed, "a").await, by("run1-call2"));
        // Another run's call on the same server: nobody can tell, so declined.
        let other = callers.enter("a", caller("run2", "run2-call2"));
        assert_eq!(asked(&routed, "a").await, ElicitationResponse::Decline);
        drop(other);
        // An anonymous call beside a run's call is ambiguous too; alone it goes to the host.
        let anon = callers.enter("a", None);
        assert_eq!(asked(&routed, "a").await, ElicitationResponse::Decline);
        drop(run1b);
        assert_eq!(asked(&routed, "a").await, by("host"));
        drop((anon, run2));
        assert!(callers.calls.lock().unwrap().is_empty());
        assert_eq!(asked(&routed, "a").await, ElicitationResponse::Decline);
    }

    #[tokio::test]
    async fn one_call_asks_at_most_its_allowance_the_next_call_starts_afresh() {
        let callers = Arc::new(Callers::default());
        let routed = RoutedElicitation {
            host: Arc::new(Named("host")),
            callers: callers.clone(),
        };
        let call = callers.enter("a", caller("run1", "run1-call1"));
        for _ in 0..MAX_PER_CALL {
            assert_eq!(asked(&routed, "a").await, by("run1-call1"));
        }
        for _ in 0..3 {
            assert_eq!(asked(&routed, "a").await, ElicitationResponse::Decline);
        }
        // Another server's call is not affected.
        let other = callers.enter("b", caller("run1", "run1-call2"));
        assert_eq!(asked(&routed, "b").await, by("run1-call2"));
        drop((call, other));
        let next = callers.enter("a", None);
        assert_eq!(asked(&routed, "a").await, by("host"));
        drop(next);
    }

    #[tokio::test]
    async fn the_caller_is_the_task_running_with_caller() {
        assert!(current_caller().is_none());
        let key = with_caller(caller("r9", "x").unwrap(), async {
            current_caller().map(|c| c.key)
        })
        .await;
        assert_eq!(key.as_deref(), Some("r9"));
    }

    #[test]
    fn schema_without_properties_has_no_defaults() {
        assert!(schema_defaults(&json!({"type": "object"})).is_empty());
        assert_eq!(schema_defaults(&schema()).len(), 5);
    }
}
