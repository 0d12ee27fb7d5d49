//! aibuddy-netproxy: the only way out of a command's network namespace.
//!
//! - [`policy`] (pure): `exec.network`'s allow and deny entries (`host`, `*.suffix`, `*`, an IP
//!   literal, each with an optional `:port`; deny wins), the decision for a host and port, and the
//!   check of the addresses a name resolved to (loopback, private, link-local... only when an entry
//!   names the host: DNS rebinding is decided on addresses, not names).
//! - [`server`] (I/O, tokio): one proxy per command, on a Unix socket (bridged into the command's
//!   network namespace by the exec init) or on a loopback TCP port (the Landlock-only path).
//!   It speaks HTTP `CONNECT`, absolute-form HTTP requests (`GET http://host/...`) and SOCKS5
//!   (`CONNECT` only), resolves names itself and connects only to addresses it checked. An
//!   admitted tunnel is copied by a blocking thread per direction (`server/threaded.rs`: less
//!   CPU than `splice(2)` on loopback; at most 128 tunnels on threads, the rest on the runtime).
//! - [`log`]: every decision and refused connection, aggregated per host, port and verdict,
//!   returned when the proxy stops (stored with the call).
//! - [`Decider`]: asked about a host on no list (once per host and port and command, however many
//!   connections ask at once). [`Refuse`] is the non-interactive answer.

pub mod log;
pub mod policy;
pub mod server;

pub use log::{NetEvent, NetReport, NetWatch, Protocol};
pub use policy::{DEFAULT_ALLOW, Entry, EntryError, Policy, Verdict, is_public};
pub use server::{Proxy, ProxyConfig};

use std::future::Future;
use std::pin::Pin;

/// A host on neither list, asked about once per command (the answer is kept for the command;
/// connections to the same host and port that arrive while the question is open wait for its
/// answer instead of asking again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub host: String,
    pub port: u16,
}

/// What a [`Decider`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This host and port, for the rest of this command. `rule` names the decision in the log
    /// (`asked: allowed once`). The resolved addresses must be public unless the host is an IP
    /// literal or `localhost`: what the person was shown is then what is reached (a name that
    /// resolves to a private address is refused, as DNS rebinding would have it).
    Allow { rule: String },
    /// Refused: `rule` (when someone decided, `asked: denied`) and `reason`, the refusal's text
    /// for the person and the model.
    Deny {
        rule: Option<String>,
        reason: String,
    },
}

impl Answer {
    /// The refusal of a host on no list when nobody is asked.
    pub fn unlisted() -> Answer {
        Answer::Deny {
            rule: None,
            reason: "not on exec.network.allow".to_string(),
        }
    }
}

/// Decides about hosts on no list (the core implements it: refuse, or ask the person).
pub trait Decider: Send + Sync + 'static {
    fn decide(&self, ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>>;
}

/// The non-interactive decider: every unlisted host is refused ([`Answer::unlisted`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Refuse;

impl Decider for Refuse {
    fn decide(&self, _ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>> {
        Box::pin(async { Answer::unlisted() })
    }
}
