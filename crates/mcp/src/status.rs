//! Per-server connection status and the reconnect backoff schedule.

use std::time::Duration;

use serde::Serialize;

/// Where one server's connection stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// Disabled in its configuration: never started.
    Disabled,
    /// First connection attempt in progress.
    Connecting,
    /// Initialized; its tools are in the catalog.
    Connected,
    /// Lost or never reached; its tools are out of the catalog. The next attempt comes after
    /// `retry_in` (None when no retry is planned, e.g. after shutdown).
    Failed {
        reason: String,
        retry_in_ms: Option<u64>,
    },
    /// A reconnect attempt (`attempt` counts from 1) after a failure with `last_reason`.
    Reconnecting { attempt: u32, last_reason: String },
    /// The server answered 401 (or 403 `insufficient_scope` at `initialize`) and no stored token
    /// serves: its tools are absent (reason [`NEEDS_LOGIN`]) until the person logs in; it is not
    /// retried until `McpManager::reconnect`.
    NeedsLogin,
}

/// The absence reason of a [`ServerState::NeedsLogin`] server's tools.
pub const NEEDS_LOGIN: &str = "needs login";

impl ServerState {
    /// Whether this is [`ServerState::NeedsLogin`].
    pub fn needs_login(&self) -> bool {
        matches!(self, ServerState::NeedsLogin)
    }
}

/// Status of one configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub server: String,
    pub state: ServerState,
    /// Protocol version the server agreed to in `initialize`, once connected.
    pub protocol_version: Option<String>,
    /// `serverInfo.name` / `version` from `initialize`, once connected.
    pub server_info: Option<String>,
    /// Tools of this server currently in the catalog.
    pub tool_count: usize,
    /// `"sandbox"` in its entry: how it runs confined (None: it runs unconfined).
    pub sandbox: Option<SandboxStatus>,
    /// How many times the tool list was fetched again after `notifications/tools/list_changed`.
    pub tools_refreshed: u32,
    /// Tools this server listed but the client left out (bad schema), with reasons.
    pub rejected_tools: Vec<RejectedTool>,
    /// Tools this server listed that its `tools` allow/deny lists in `mcp.json` leave out, with
    /// the reason (`denied by mcp.json`, `not in allow list`).
    pub filtered_tools: Vec<RejectedTool>,
}

/// How a server with `"sandbox"` runs confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    /// The confinement its running process got (`namespaces+landlock-v7+nonet`,
    /// `landlock-v7 (no namespaces)`); None until it started once. Where none can be applied it
    /// never starts: its state is `failed` with the reason.
    pub confinement: Option<String>,
    /// Where it may connect: `off`, `default registries`, `allow: a, b; deny: c`.
    pub network: String,
    /// Its writable roots besides its private `TMPDIR`, as configured, with configured values
    /// cut out as in every text about a server ([`crate::Redactor`]).
    pub writable_roots: Vec<String>,
    /// Destinations (`host:port`) it tried and its proxy refused, in the order first tried, at
    /// most [`MAX_REFUSED_SHOWN`] (of its latest [`NETWORK_WATCHES`] processes). Chosen by the
    /// server: untrusted text (escape it before printing).
    pub refused_hosts: Vec<String>,
    /// How many more refused destinations there were.
    pub refused_more: usize,
}

/// Refused destinations a status lists at most.
pub const MAX_REFUSED_SHOWN: usize = 20;
/// Processes of one server whose proxy decisions a status covers (the newest).
pub const NETWORK_WATCHES: usize = 4;

/// Keeps `w` as the newest of `watches` (once), dropping the oldest beyond [`NETWORK_WATCHES`].
pub(crate) fn keep_watch(
    watches: &mut Vec<aibuddy_exec::netproxy::NetWatch>,
    w: aibuddy_exec::netproxy::NetWatch,
) {
    if watches.iter().any(|old| old.same(&w)) {
        return;
    }
    watches.push(w);
    if watches.len() > NETWORK_WATCHES {
        watches.remove(0);
    }
}

/// The distinct refused destinations of `lists` (oldest process first), the first
/// [`MAX_REFUSED_SHOWN`] and how many more. Pure.
fn refused_of(lists: impl IntoIterator<Item = Vec<String>>) -> (Vec<String>, usize) {
    let mut all: Vec<String> = Vec::new();
    for host in lists.into_iter().flatten() {
        if !all.contains(&host) {
            all.push(host);
        }
    }
    let more = all.len().saturating_sub(MAX_REFUSED_SHOWN);
    all.truncate(MAX_REFUSED_SHOWN);
    (all, more)
}

impl SandboxStatus {
    /// The status of `config`'s sandbox with the confinement its process got (pure).
    pub fn of(
        config: &crate::ServerConfig,
        redactor: &crate::Redactor,
        confinement: Option<&str>,
        watches: &[aibuddy_exec::netproxy::NetWatch],
    ) -> Option<SandboxStatus> {
        let sandbox = config.sandbox.as_ref()?;
        let (refused_hosts, refused_more) = refused_of(
            watches
                .iter()
                .map(aibuddy_exec::netproxy::NetWatch::refused_hosts),
        );
        Some(SandboxStatus {
            refused_hosts,
            refused_more,
            confinement: confinement.map(str::to_owned),
            network: sandbox.network.describe(),
            writable_roots: (sandbox.writable_roots.iter())
                .map(|r| redactor.apply(r))
                .collect(),
        })
    }

    /// One line: `sandboxed: namespaces+landlock-v7+nonet, network: off, writable: /a, /b`,
    /// then `, refused: evil.example:443, 10.0.0.5:80` when its proxy refused hosts (untrusted
    /// text: print it through `aibuddy_common::term`).
    pub fn describe(&self) -> String {
        let how = self.confinement.as_deref().unwrap_or("not started yet");
        let mut out = format!("sandboxed: {how}, network: {}", self.network);
        if !self.writable_roots.is_empty() {
            out.push_str(&format!(", writable: {}", self.writable_roots.join(", ")));
        }
        if !self.refused_hosts.is_empty() {
            out.push_str(&format!(", refused: {}", self.refused_hosts.join(", ")));
            if self.refused_more > 0 {
                out.push_str(&format!(" and {} more", self.refused_more));
            }
        }
        out
    }
}

/// A tool a server listed that cannot be offered, with a Discovery-stage reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedTool {
    pub server: String,
    pub tool: String,
    pub reason: String,
}

/// Exponential reconnect backoff: `base * 2^(attempt-1)`, capped at `max`. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

/// Default first retry delay.
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// Default longest retry delay.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(60);

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: DEFAULT_BACKOFF_BASE,
            max: DEFAULT_BACKOFF_MAX,
        }
    }
}

impl Backoff {
    /// Delay before reconnect attempt `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(30);
        let factor = 1u32 << exp;
        self.base.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_hosts_are_distinct_oldest_first_and_capped() {
        let old = vec!["a.example:443".to_string(), "b.example:80".to_string()];
        let new: Vec<String> = std::iter::once("a.example:443".to_string())
            .chain((0..30).map(|i| format!("h{i}.example:443")))
            .collect();
        let (shown, more) = refused_of([old, new]);
        assert_eq!(shown.len(), MAX_REFUSED_SHOWN);
        assert_eq!(
            &shown[..3],
            ["a.example:443", "b.example:80", "h0.example:443"]
        );
        assert_eq!(more, 2 + 30 - MAX_REFUSED_SHOWN);
        let status = SandboxStatus {
            confinement: Some("namespaces+landlock-v7".into()),
            network: "allow: x.example".into(),
            writable_roots: Vec::new(),
            refused_hosts: shown[..2].to_vec(),
            refused_more: 3,
        };
        assert_eq!(
            status.describe(),
            "sandboxed: namespaces+landlock-v7, network: allow: x.example, refused: \
             a.example:443, b.example:80 and 3 more"
        );
    }

    #[test]
    fn needs_login_is_its_own_state() {
        assert!(ServerState::NeedsLogin.needs_login());
        let failed = ServerState::Failed {
            reason: NEEDS_LOGIN.into(),
            retry_in_ms: None,
        };
        assert!(!failed.needs_login());
        assert!(!ServerState::Connected.needs_login());
        assert_eq!(
            serde_json::to_value(ServerState::NeedsLogin).unwrap(),
            serde_json::json!({"state": "needs_login"})
        );
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        let delays: Vec<u128> = (1..=6).map(|a| b.delay(a).as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.delay(0), Duration::from_millis(100));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(1));
        assert_eq!(Backoff::default().delay(1), Duration::from_secs(1));
    }
}
