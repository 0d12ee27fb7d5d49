//! The decisions of one proxy: one [`NetEvent`] per host, port and verdict (with a connection
//! count), in the order they first happened, at most [`MAX_EVENTS`] of them.

use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Distinct events kept per command; later distinct ones are counted in `events_dropped`.
pub const MAX_EVENTS: usize = 256;

/// How a connection asked the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// HTTP `CONNECT host:port`.
    Connect,
    /// An absolute-form HTTP request (`GET http://host/...`).
    Http,
    Socks5,
}

/// One decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetEvent {
    pub host: String,
    pub port: u16,
    pub protocol: Protocol,
    pub allowed: bool,
    /// The entry that decided (`crates.io`, `*`, `deny: evil.example`), or `asked` when the
    /// decider answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why it was refused, or why an allowed connection failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Connections with this host, port and verdict.
    pub connections: u32,
    /// When the first of them came, in milliseconds since the proxy started.
    pub first_ms: u64,
}

/// What the proxy of one command did (stored with the call).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetReport {
    /// How the command reached the network (set by the runner: `proxy (network namespace)`,
    /// `proxy (landlock: TCP connect only to the proxy; UDP not covered)`, ...).
    pub mode: String,
    /// The lists in force, as text.
    #[serde(default)]
    pub policy: String,
    #[serde(default)]
    pub events: Vec<NetEvent>,
    #[serde(default)]
    pub events_dropped: u64,
}

impl NetReport {
    /// The refused events.
    pub fn refused(&self) -> impl Iterator<Item = &NetEvent> {
        self.events.iter().filter(|e| !e.allowed)
    }
}

/// A live view of one proxy's decisions that outlives the proxy ([`crate::Proxy::watch`]): what
/// a long-running client (a sandboxed MCP server) tried so far, for its status.
#[derive(Debug, Clone)]
pub struct NetWatch(pub(crate) std::sync::Arc<Log>);

impl NetWatch {
    /// The decisions so far and how many distinct ones did not fit.
    pub fn snapshot(&self) -> (Vec<NetEvent>, u64) {
        self.0.snapshot()
    }

    /// Whether both view the same proxy.
    pub fn same(&self, other: &NetWatch) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }

    /// `host:port` of every refused destination so far, in the order first tried.
    pub fn refused_hosts(&self) -> Vec<String> {
        let (events, _) = self.snapshot();
        (events.iter().filter(|e| !e.allowed))
            .map(|e| crate::policy::host_port(&e.host, e.port))
            .collect()
    }
}

#[derive(Debug)]
pub(crate) struct Log {
    started: Instant,
    inner: Mutex<(Vec<NetEvent>, u64)>,
}

impl Log {
    pub(crate) fn new() -> Self {
        Log {
            started: Instant::now(),
            inner: Mutex::new((Vec::new(), 0)),
        }
    }

    pub(crate) fn record(
        &self,
        host: &str,
        port: u16,
        protocol: Protocol,
        allowed: bool,
        rule: Option<String>,
        reason: Option<String>,
    ) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (events, dropped) = &mut *g;
        if let Some(e) = events
            .iter_mut()
            .find(|e| e.host == host && e.port == port && e.allowed == allowed)
        {
            e.connections = e.connections.saturating_add(1);
            if e.reason.is_none() {
                e.reason = reason;
            }
            return;
        }
        if events.len() >= MAX_EVENTS {
            *dropped += 1;
            return;
        }
        events.push(NetEvent {
            host: host.to_string(),
            port,
            protocol,
            allowed,
            rule,
            reason,
            connections: 1,
            first_ms: self.started.elapsed().as_millis() as u64,
        });
    }

    pub(crate) fn snapshot(&self) -> (Vec<NetEvent>, u64) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
