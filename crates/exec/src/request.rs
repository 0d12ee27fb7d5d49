//! What a caller asks for: [`ExecRequest`] and its policies, with defaults and validation (pure).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ExecError;

/// Default sandbox timeout of a command (2 minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest timeout a request may ask for (10 minutes).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Grace between SIGTERM and SIGKILL when the timeout fires.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// Default heartbeat cadence (30 seconds).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);
/// Default cap of the raw-output spool file (256 MiB).
pub const DEFAULT_SPOOL_CAP: u64 = 256 * 1024 * 1024;
/// Default size of the in-memory head buffer (bytes of combined output kept from the start).
pub const DEFAULT_HEAD_BYTES: usize = 64 * 1024;
/// Default size of the in-memory tail ring (bytes of combined output kept from the end).
pub const DEFAULT_TAIL_BYTES: usize = 64 * 1024;
/// Default time slice of live output: reads are coalesced into one delivery per stream at most
/// this long after its first byte.
pub const DEFAULT_LIVE_INTERVAL: Duration = Duration::from_millis(32);
/// Default size limit of one live delivery.
pub const DEFAULT_LIVE_MAX_BYTES: usize = 64 * 1024;
/// Largest `live_interval` a request may ask for.
pub const MAX_LIVE_INTERVAL: Duration = Duration::from_secs(1);
/// Largest `live_max_bytes` a request may ask for.
pub const MAX_LIVE_MAX_BYTES: usize = 1024 * 1024;

/// Default cap on the processes (and threads) a command may have at once (`RLIMIT_NPROC`).
pub const DEFAULT_MAX_PROCESSES: u32 = 4096;
/// Largest `max_processes` a request may ask for (the kernel's largest `pid_max`).
pub const MAX_MAX_PROCESSES: u32 = 4 * 1024 * 1024;

/// Whether the child runs under kernel confinement (Landlock on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConfinePolicy {
    /// Run without confinement.
    Off,
    /// Confine when the kernel supports it; otherwise run and report `Confinement::Unavailable`.
    #[default]
    BestEffort,
    /// Refuse to run (Execution-stage error) when confinement cannot be applied.
    Required,
}

/// Whether the command runs in its own namespaces (bubblewrap) when the host allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NamespacePolicy {
    /// Use namespaces when `bwrap` works on this host (probed once); otherwise the Landlock-only
    /// path, reported as such in the outcome's `confinement`.
    #[default]
    Auto,
    /// Never use namespaces: the Landlock-only path (reported with this reason). For tests and for
    /// hosts where the person turned namespaces off.
    Off,
}

/// Which environment variables reach the child.
///
/// Precedence, first match wins (see `env::decide`):
/// 1. `always_drop` (e.g. the app's provider keys) -> dropped, whatever the lists say;
/// 2. `exclude` -> dropped;
/// 3. `include` -> kept;
/// 4. the name looks secret (any case): it contains `KEY`, `SECRET`, `TOKEN`, `PASSWORD`,
///    `PASSWD`, `CREDENTIAL`, `COOKIE` or `WEBHOOK`, or one of its `_`-separated words is a short
///    marker (`PASS`, `PWD`, `AUTH`, `CRED`, `JWT`, `DSN`, `PAT`, `SESSION`, `PRIVATE`; `PATH`,
///    `PWD`, `OLDPWD`, `GIT_AUTHOR_*` and `XDG_SESSION_*` survive; see `env`) -> dropped;
/// 5. the value carries URL credentials (`scheme://user:pass@`, `redis://:pass@`) -> dropped;
/// 6. otherwise kept.
///
/// Names in the lists match exactly (case-sensitive), as environment names do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Names kept even though they look secret.
    #[serde(default)]
    pub include: Vec<String>,
    /// Names dropped even though they look harmless.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Names dropped always (the app's provider keys); not overridable by `include`.
    #[serde(default)]
    pub always_drop: Vec<String>,
    /// Variables set for the child after filtering (`TMPDIR` is set by the runner itself).
    #[serde(default)]
    pub set: Vec<(String, String)>,
}

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRequest {
    /// Shell command, run as `/bin/sh -c <command>`.
    pub command: String,
    /// Working directory (the project root); also writable under confinement.
    pub cwd: PathBuf,
    /// Sandbox timeout: SIGTERM to the group, then SIGKILL after `kill_grace`.
    pub timeout: Duration,
    /// Grace between SIGTERM and SIGKILL on timeout.
    pub kill_grace: Duration,
    /// Cadence of `ExecSink::heartbeat`.
    pub heartbeat_interval: Duration,
    /// Environment filtering.
    pub env: EnvPolicy,
    /// Extra writable roots under confinement (caches such as `~/.cargo`).
    pub writable_roots: Vec<PathBuf>,
    /// The project (`cwd`) and every writable root are read-only to the command (the approval
    /// mode `read-only`): bound read-only on the namespace path, left out of Landlock's writable
    /// list on the other; only the private `TMPDIR` is writable. Pair it with
    /// `network_allowed = false` and `ConfinePolicy::Required`.
    #[serde(default)]
    pub read_only: bool,
    /// Outbound network allowed, through the allow-list proxy only (see `netwire`); `false`: no
    /// egress at all (an empty network namespace; Landlock denies TCP bind/connect on the
    /// fallback path).
    pub network_allowed: bool,
    /// The proxy's lists when the network is allowed; `None`: every public host (`*`).
    #[serde(default)]
    pub network_policy: Option<aibuddy_netproxy::Policy>,
    /// Confinement policy.
    pub confine: ConfinePolicy,
    /// File receiving the raw combined output (stdout and stderr interleaved as read); `None` = no spool.
    pub spool_path: Option<PathBuf>,
    /// Bytes written to the spool at most; the rest is counted as omitted.
    pub spool_cap: u64,
    /// Bytes of combined output kept from the start.
    pub head_bytes: usize,
    /// Bytes of combined output kept from the end.
    pub tail_bytes: usize,
    /// Namespace confinement (the bubblewrap path) or the Landlock-only fallback.
    #[serde(default)]
    pub namespaces: NamespacePolicy,
    /// The person's home directory: its well-known credential locations (`~/.ssh`, `~/.aws`...,
    /// see `hide::credential_locations`) are hidden from the command on the namespace path.
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// Further credential locations, hidden like the home ones unless exposed: those the app's
    /// environment names (`hide::env_credential_paths`: `GOOGLE_APPLICATION_CREDENTIALS`,
    /// `KUBECONFIG`, `$XDG_CONFIG_HOME/...`). Absolute; the host reads its environment.
    #[serde(default)]
    pub credential_paths: Vec<PathBuf>,
    /// Further paths the command may neither read nor write (the app's data directories).
    #[serde(default)]
    pub hidden_paths: Vec<PathBuf>,
    /// Credential locations the person chose to expose (`exec.expose_credentials`), absolute.
    #[serde(default)]
    pub exposed_credentials: Vec<PathBuf>,
    /// The in-sandbox init program (`aibuddy-exec-init` or a binary dispatching to
    /// [`crate::init_main`]); `None` = located next to the current executable.
    #[serde(default)]
    pub init_program: Option<PathBuf>,
    /// Live output coalescing: consecutive reads of a stream are delivered to the sink together,
    /// at most this long after the first of them was read (default 32 ms, at most 1 s; zero
    /// delivers every read as it comes).
    #[serde(default = "default_live_interval")]
    pub live_interval: Duration,
    /// Live output coalescing: bytes per delivery at most (default 64 KiB, at most 1 MiB; zero
    /// delivers every read as it comes).
    #[serde(default = "default_live_max_bytes")]
    pub live_max_bytes: usize,
    /// Processes (and threads) the command may have at once, applied as `RLIMIT_NPROC` before the
    /// shell starts (default 4096, between 1 and 4,194,304). Namespace path: counted inside the
    /// command's own user namespace (the init included); Landlock-only path: the person's count
    /// of processes when the command starts plus this. A fork fails with `EAGAIN` beyond it. Not
    /// enforced by the kernel for root (see the crate README).
    #[serde(default = "default_max_processes")]
    pub max_processes: u32,
    /// Protected paths added to the built-in table (`protect::PROTECTED_PATHS`), relative to each
    /// writable root: read-only to the command, and not left behind when absent (a trailing `/`
    /// makes an absent one a directory placeholder).
    #[serde(default)]
    pub protected_paths: Vec<String>,
    /// Built-in protected paths that are not protected (the person's choice: it widens what a
    /// command may change).
    #[serde(default)]
    pub unprotected_paths: Vec<String>,
    /// stdin is a pipe instead of `/dev/null`: its write end is handed to the sink once the
    /// command started ([`crate::ExecSink::stdin`]; a background process's `process_input`).
    /// Closing it gives the command end of file.
    #[serde(default)]
    pub stdin_piped: bool,
    /// No sandbox timeout: the command runs until it ends or the caller's cancellation token
    /// fires (a background process, stopped by its owner). `timeout` is then not used.
    #[serde(default)]
    pub untimed: bool,
}

fn default_max_processes() -> u32 {
    DEFAULT_MAX_PROCESSES
}

fn default_live_interval() -> Duration {
    DEFAULT_LIVE_INTERVAL
}

fn default_live_max_bytes() -> usize {
    DEFAULT_LIVE_MAX_BYTES
}

impl ExecRequest {
    /// A request with every default: 2 min timeout, 30 s heartbeats, best-effort confinement,
    /// network allowed, no spool, 64 KiB head and tail.
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            command: command.into(),
            cwd: cwd.into(),
            timeout: DEFAULT_TIMEOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            heartbeat_interval: DEFAULT_HEARTBEAT,
            env: EnvPolicy::default(),
            writable_roots: Vec::new(),
            read_only: false,
            network_allowed: true,
            network_policy: None,
            confine: ConfinePolicy::BestEffort,
            spool_path: None,
            spool_cap: DEFAULT_SPOOL_CAP,
            head_bytes: DEFAULT_HEAD_BYTES,
            tail_bytes: DEFAULT_TAIL_BYTES,
            namespaces: NamespacePolicy::Auto,
            home: None,
            credential_paths: Vec::new(),
            hidden_paths: Vec::new(),
            exposed_credentials: Vec::new(),
            init_program: None,
            live_interval: DEFAULT_LIVE_INTERVAL,
            live_max_bytes: DEFAULT_LIVE_MAX_BYTES,
            max_processes: DEFAULT_MAX_PROCESSES,
            protected_paths: Vec::new(),
            unprotected_paths: Vec::new(),
            stdin_piped: false,
            untimed: false,
        }
    }

    /// Checks what can be checked without touching the system (Parameters-stage errors).
    pub fn validate(&self) -> Result<(), ExecError> {
        if self.command.trim().is_empty() {
            return Err(ExecError::InvalidRequest("command is empty".into()));
        }
        if self.command.contains('\0') {
            return Err(ExecError::InvalidRequest(
                "command contains a NUL byte".into(),
            ));
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(ExecError::InvalidRequest(format!(
                "timeout must be between 1 ms and {} ms, got {} ms",
                MAX_TIMEOUT.as_millis(),
                self.timeout.as_millis()
            )));
        }
        if self.heartbeat_interval.is_zero() {
            return Err(ExecError::InvalidRequest(
                "heartbeat interval must be positive".into(),
            ));
        }
        if self.live_interval > MAX_LIVE_INTERVAL || self.live_max_bytes > MAX_LIVE_MAX_BYTES {
            return Err(ExecError::InvalidRequest(format!(
                "live output coalescing must be at most {} ms and {} bytes, got {} ms and {} bytes",
                MAX_LIVE_INTERVAL.as_millis(),
                MAX_LIVE_MAX_BYTES,
                self.live_interval.as_millis(),
                self.live_max_bytes
            )));
        }
        if self.max_processes == 0 || self.max_processes > MAX_MAX_PROCESSES {
            return Err(ExecError::InvalidRequest(format!(
                "max_processes must be between 1 and {MAX_MAX_PROCESSES}, got {}",
                self.max_processes
            )));
        }
        if !self.cwd.is_absolute() {
            return Err(ExecError::InvalidRequest(format!(
                "cwd must be absolute: {}",
                self.cwd.display()
            )));
        }
        if let Some(p) = self
            .hidden_paths
            .iter()
            .chain(&self.credential_paths)
            .chain(&self.exposed_credentials)
            .chain(&self.home)
            .find(|p| !p.is_absolute())
        {
            return Err(ExecError::InvalidRequest(format!(
                "hidden, exposed and home paths must be absolute: {}",
                p.display()
            )));
        }
        if let Some(p) = self
            .protected_paths
            .iter()
            .chain(&self.unprotected_paths)
            .find(|p| !crate::protect::valid_entry(p))
        {
            return Err(ExecError::InvalidRequest(format!(
                "protected paths must be relative, without `.` or `..`: {p:?}"
            )));
        }
        if let Some(root) = self.writable_roots.iter().find(|r| !r.is_absolute()) {
            return Err(ExecError::InvalidRequest(format!(
                "writable root must be absolute: {}",
                root.display()
            )));
        }
        Ok(())
    }
}

/// Turns an optional `timeout_ms` argument into a timeout: `None` -> 2 min; 0 or above 10 min is refused.
pub fn timeout_from_ms(timeout_ms: Option<u64>) -> Result<Duration, ExecError> {
    match timeout_ms {
        None => Ok(DEFAULT_TIMEOUT),
        Some(0) => Err(ExecError::InvalidRequest(
            "timeout_ms must be positive".into(),
        )),
        Some(ms) if Duration::from_millis(ms) > MAX_TIMEOUT => {
            Err(ExecError::InvalidRequest(format!(
                "timeout_ms {ms} exceeds the maximum of {} ms",
                MAX_TIMEOUT.as_millis()
            )))
        }
        Some(ms) => Ok(Duration::from_millis(ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        assert!(ExecRequest::new("true", "/tmp").validate().is_ok());
    }

    #[test]
    fn bad_requests_are_parameters_errors() {
        let mut r = ExecRequest::new("  ", "/tmp");
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.command = "true".into();
        r.timeout = MAX_TIMEOUT + Duration::from_millis(1);
        let err = r.validate().unwrap_err();
        assert_eq!(err.stage(), crate::ErrorStage::Parameters);
        r.timeout = DEFAULT_TIMEOUT;
        r.cwd = "relative".into();
        assert!(r.validate().is_err());
        r.cwd = "/tmp".into();
        r.writable_roots = vec!["rel".into()];
        assert!(r.validate().is_err());
        r.writable_roots.clear();
        r.live_interval = MAX_LIVE_INTERVAL + Duration::from_millis(1);
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.live_interval = Duration::ZERO;
        r.live_max_bytes = MAX_LIVE_MAX_BYTES + 1;
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.live_max_bytes = 0;
        assert!(r.validate().is_ok(), "zero turns coalescing off");
        r.max_processes = 0;
        let err = r.validate().unwrap_err();
        assert_eq!(err.stage(), crate::ErrorStage::Parameters);
        r.max_processes = MAX_MAX_PROCESSES + 1;
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.max_processes = 1;
        assert!(r.validate().is_ok());
        r.protected_paths = vec!["../up".into()];
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.protected_paths = vec![".github/workflows/".into()];
        r.unprotected_paths = vec!["/abs".into()];
        assert!(matches!(r.validate(), Err(ExecError::InvalidRequest(_))));
        r.unprotected_paths = vec![".idea".into()];
        assert!(r.validate().is_ok());
    }

    #[test]
    fn a_request_without_live_fields_deserializes_with_the_defaults() {
        let mut v = serde_json::to_value(ExecRequest::new("true", "/tmp")).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("live_interval");
        o.remove("live_max_bytes");
        o.remove("max_processes");
        let r: ExecRequest = serde_json::from_value(v).unwrap();
        assert_eq!(r.max_processes, DEFAULT_MAX_PROCESSES);
        assert_eq!(r.live_interval, DEFAULT_LIVE_INTERVAL);
        assert_eq!(r.live_max_bytes, DEFAULT_LIVE_MAX_BYTES);
    }

    #[test]
    fn timeout_from_ms_bounds() {
        assert_eq!(timeout_from_ms(None).unwrap(), DEFAULT_TIMEOUT);
        assert_eq!(timeout_from_ms(Some(600_000)).unwrap(), MAX_TIMEOUT);
        assert!(timeout_from_ms(Some(600_001)).is_err());
        assert!(timeout_from_ms(Some(0)).is_err());
        assert_eq!(timeout_from_ms(Some(5)).unwrap(), Duration::from_millis(5));
    }
}
