//! [`ExecOutcome`]: what happened to a command that ran.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Termination {
    /// Exited with this code.
    Exited { code: i32 },
    /// Killed by this signal number.
    Signaled { signal: i32 },
}

impl Termination {
    /// `true` for `Exited { code: 0 }`.
    pub fn success(&self) -> bool {
        matches!(self, Termination::Exited { code: 0 })
    }
}

/// Kernel confinement: what the host supports ([`crate::confinement_support`]) or what a run applied
/// ([`ExecOutcome::confinement`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Confinement {
    /// Not requested (policy `Off`).
    Disabled,
    /// The kernel/platform cannot confine; `reason` says why.
    Unavailable { reason: String },
    /// Landlock at this ABI. `network`: for support, TCP rules are available (ABI >= 4);
    /// for a run, outbound TCP (connect and bind) was denied.
    Landlock { abi: u8, network: bool },
}

impl Confinement {
    /// Short label for display: `landlock-v7`, `landlock-v7+net`, `none`, `disabled`.
    pub fn label(&self) -> String {
        match self {
            Confinement::Disabled => "disabled".into(),
            Confinement::Unavailable { .. } => "none".into(),
            Confinement::Landlock {
                abi,
                network: false,
            } => format!("landlock-v{abi}"),
            Confinement::Landlock { abi, network: true } => format!("landlock-v{abi}+net"),
        }
    }
}

/// Byte counts of one stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamStats {
    /// Bytes the command wrote to this stream.
    pub total_bytes: u64,
    /// Bytes of this stream that did not fit in the spool (beyond `spool_cap`).
    pub spool_omitted_bytes: u64,
}

/// The raw-output spool file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpoolInfo {
    pub path: PathBuf,
    /// Bytes written (at most the cap).
    pub written_bytes: u64,
    /// Bytes not written because the cap was reached.
    pub omitted_bytes: u64,
}

/// Everything known about a command that ran (whatever its exit).
///
/// `head` and `tail` hold the combined output (stdout and stderr interleaved in read order):
/// `head` is the first `head_bytes`, `tail` the last bytes after the head (at most `tail_bytes`);
/// `omitted_middle_bytes` is what lies between them. They never overlap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutcome {
    pub termination: Termination,
    pub duration: Duration,
    /// The sandbox timeout fired.
    pub timed_out: bool,
    /// The cancellation token fired.
    pub cancelled: bool,
    /// Processes of the group were still running after the shell ended and were killed.
    pub killed_leftovers: bool,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub omitted_middle_bytes: u64,
    pub stdout: StreamStats,
    pub stderr: StreamStats,
    pub spool: Option<SpoolInfo>,
    pub confinement: Confinement,
    /// Names of environment variables withheld from the child (sorted).
    pub env_dropped: Vec<String>,
    /// The process group id the command ran in (its session leader's pid).
    pub pgid: i32,
}

impl ExecOutcome {
    /// Total bytes over both streams.
    pub fn total_bytes(&self) -> u64 {
        self.stdout.total_bytes + self.stderr.total_bytes
    }

    /// Whether the in-memory capture cut anything.
    pub fn truncated(&self) -> bool {
        self.omitted_middle_bytes > 0
    }
}
