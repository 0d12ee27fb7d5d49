//! `execute`'s network decider: a host on no `exec.network` list is asked about through the run's
//! confirm broker (`ConfirmBroker::network_announced`; the CLI prompt, the desktop dialog), after
//! the hosts the person allowed for this project earlier ([`super::project_hosts`]).
//!
//! - A broker that asks nobody (`--yes`, no terminal): [`aibuddy_netproxy::Refuse`], refused
//!   without a question (the model is told which host and how to allow it).
//! - The question runs as its own task on the core's runtime, not inside the proxy's connection:
//!   it ends with an answer however the connection ends, so the broker unparks it and the window
//!   closes its dialog. It is bounded by the call: the call's cancellation (a stop), the end of the
//!   command ([`AskScope`], dropped when `execute_on` returns) and the command's timeout plus its
//!   grace each answer `Deny`.
//! - Every answer is announced on the call's events (`NetworkAskRequested`,
//!   `NetworkAskResolved`) and recorded in the proxy's decision log with its rule
//!   (`asked: allowed once`, `asked: allowed for this project`, `asked: denied`,
//!   `project: allowed earlier`), which is stored with the call.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::aibuddy_exec::netproxy::{Answer, Ask, Decider, Refuse};
use tokio_util::sync::CancellationToken;

use super::project_hosts::{self, HostPort};
use crate::confirm::{ConfirmBroker, NetworkAnswer, NetworkAsk};
use crate::events::{Event, EventSink};
use crate::registry::CallContext;

/// Rules recorded with a decision (the proxy's log, `network.events[].rule`).
pub const RULE_ONCE: &str = "asked: allowed once";
pub const RULE_PROJECT: &str = "asked: allowed for this project";
pub const RULE_DENIED: &str = "asked: denied";
pub const RULE_RECORDED: &str = "project: allowed earlier";

/// Asks the person about unlisted hosts of one call.
pub(super) struct NetAsker {
    call_id: String,
    tool: String,
    target: String,
    broker: Arc<dyn ConfirmBroker>,
    events: Arc<dyn EventSink>,
    /// Ends every open question of the call (stop, end of the command).
    scope: CancellationToken,
    /// Bound of one question: the command's timeout plus its grace.
    bound: Duration,
    runtime: tokio::runtime::Handle,
    data_dir: PathBuf,
    project_root: PathBuf,
}

/// Ends the call's open questions when dropped (the command is over).
pub(super) struct AskScope(CancellationToken);

impl Drop for AskScope {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The decider for one call of `execute` and the guard that ends its questions, or `Refuse` when
/// the broker asks nobody. Call on the core's runtime.
pub(super) fn decider(
    ctx: &CallContext,
    target: &str,
    bound: Duration,
) -> (Arc<dyn Decider>, AskScope) {
    let scope = ctx.cancel.child_token();
    let guard = AskScope(scope.clone());
    if !ctx.broker.asks_network() {
        // Hosts the person allowed for the project still count without a person at hand.
        let recorded = Recorded {
            data_dir: ctx.services.data_dir.clone(),
            project_root: ctx.services.project_root.clone(),
        };
        return (Arc::new(recorded), guard);
    }
    let asker = NetAsker {
        call_id: ctx.call_id.clone(),
        tool: ctx.tool.clone(),
        target: target.to_string(),
        broker: ctx.broker.clone(),
        events: ctx.events.clone(),
        scope,
        bound,
        runtime: tokio::runtime::Handle::current(),
        data_dir: ctx.services.data_dir.clone(),
        project_root: ctx.services.project_root.clone(),
    };
    (Arc::new(asker), guard)
}

fn recorded_allows(data_dir: &std::path::Path, root: &std::path::Path, ask: &Ask) -> bool {
    project_hosts::load(data_dir, root)
        .iter()
        .any(|h| h.host == ask.host && h.port == ask.port)
}

/// No person: the project's recorded hosts, otherwise refused as unlisted.
struct Recorded {
    data_dir: PathBuf,
    project_root: PathBuf,
}

impl Decider for Recorded {
    fn decide(&self, ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>> {
        if recorded_allows(&self.data_dir, &self.project_root, &ask) {
            return Box::pin(async {
                Answer::Allow {
                    rule: RULE_RECORDED.to_string(),
                }
            });
        }
        Refuse.decide(ask)
    }
}

impl Decider for NetAsker {
    fn decide(&self, ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>> {
        if recorded_allows(&self.data_dir, &self.project_root, &ask) {
            return Box::pin(async {
                Answer::Allow {
                    rule: RULE_RECORDED.to_string(),
                }
            });
        }
        let question = NetworkAsk {
            ask_id: format!("net_{}", ulid::Ulid::new().to_string().to_lowercase()),
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            host: ask.host.clone(),
            port: ask.port,
            target: self.target.clone(),
            display: Default::default(),
        }
        .revealed();
        let (broker, events, scope, bound) = (
            self.broker.clone(),
            self.events.clone(),
            self.scope.clone(),
            self.bound,
        );
        let (data_dir, root) = (self.data_dir.clone(), self.project_root.clone());
        let task = self.runtime.spawn(async move {
            let announce = || {
                events.emit(Event::NetworkAskRequested {
                    call_id: question.call_id.clone(),
                    ask: question.clone(),
                })
            };
            let asked = broker.network_announced(&question, &scope, &announce);
            let answer = tokio::time::timeout(bound, asked)
                .await
                .unwrap_or(NetworkAnswer::Deny);
            // Stopped or ended while the question was open: deny, whatever came last.
            let answer = if scope.is_cancelled() {
                NetworkAnswer::Deny
            } else {
                answer
            };
            events.emit(Event::NetworkAskResolved {
                call_id: question.call_id.clone(),
                ask_id: question.ask_id.clone(),
                answer,
            });
            to_proxy(answer, &question, &data_dir, &root)
        });
        Box::pin(async move {
            task.await.unwrap_or_else(|_| Answer::Deny {
                rule: Some(RULE_DENIED.to_string()),
                reason: "the network question ended without an answer".to_string(),
            })
        })
    }
}

/// The proxy's answer for the person's; "for this project" is recorded first (a record that
/// cannot be written still allows this once, and says so in the rule).
fn to_proxy(
    answer: NetworkAnswer,
    ask: &NetworkAsk,
    data_dir: &std::path::Path,
    root: &std::path::Path,
) -> Answer {
    match answer {
        NetworkAnswer::Once => Answer::Allow {
            rule: RULE_ONCE.to_string(),
        },
        NetworkAnswer::Project => {
            let entry = HostPort {
                host: ask.host.clone(),
                port: ask.port,
            };
            match project_hosts::add(data_dir, root, entry) {
                Ok(()) => Answer::Allow {
                    rule: RULE_PROJECT.to_string(),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "could not record a host for the project");
                    Answer::Allow {
                        rule: format!("{RULE_ONCE} (recording it for the project failed: {e})"),
                    }
                }
            }
        }
        NetworkAnswer::Deny => Answer::Deny {
            rule: Some(RULE_DENIED.to_string()),
            reason: "refused by the person".to_string(),
        },
    }
}
