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
    /// Landlock alone at this ABI (the fallback when namespaces are unavailable or turned off).
    /// `network`: for support, TCP rules are available (ABI >= 4); for a run, outbound TCP
    /// (connect and bind) was denied. `scopes`: signals and abstract Unix sockets are scoped to the
    /// sandbox (ABI >= 6). `no_namespaces`: why the namespace path was not used.
    Landlock {
        abi: u8,
        network: bool,
        #[serde(default)]
        scopes: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_namespaces: Option<String>,
    },
    /// Own user, PID, IPC and mount namespaces through bubblewrap: read-only system, writes only
    /// in the project and the writable roots, private `/tmp` and `/run`, credentials and the data
    /// directory hidden. `landlock_abi`: the second layer applied inside by the init program
    /// (`None`: the init program was not found, namespaces only). `network_isolated`: for a run,
    /// the command had no network at all (an empty network namespace); for support, always
    /// `false` (any run with the network off gets one).
    /// `scopes`: Landlock scopes signals and abstract Unix sockets (ABI >= 6).
    Namespaces {
        landlock_abi: Option<u8>,
        network_isolated: bool,
        scopes: bool,
    },
    /// A container of a Docker Engine API host (`sandbox.kind: "container"`): the command ran
    /// inside `container` (from `image`) on `engine`, not on this machine. The container never
    /// has a network of its own (`NetworkMode: none`); `network_isolated`: for a run, the command
    /// had no network at all (no allow-list proxy bridged in); for support, always `false`.
    /// `synced`: the project was copied into the container and its changes brought back
    /// (`project: "sync"`) instead of the folder being bound.
    Container {
        engine: String,
        image: String,
        container: String,
        network_isolated: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        synced: bool,
    },
}

impl Confinement {
    /// Short label for display: `namespaces+landlock-v7`, `namespaces+landlock-v7+nonet`,
    /// `namespaces (no landlock)`, `landlock-v7`, `landlock-v7+net`,
    /// `landlock-v7 (no namespaces)`, `container`, `container+nonet`, `none`, `disabled`.
    pub fn label(&self) -> String {
        match self {
            Confinement::Disabled => "disabled".into(),
            Confinement::Unavailable { .. } => "none".into(),
            Confinement::Landlock {
                abi,
                network,
                no_namespaces,
                ..
            } => {
                let net = if *network { "+net" } else { "" };
                let ns = if no_namespaces.is_some() {
                    " (no namespaces)"
                } else {
                    ""
                };
                format!("landlock-v{abi}{net}{ns}")
            }
            Confinement::Namespaces {
                landlock_abi,
                network_isolated,
                ..
            } => {
                let net = if *network_isolated { "+nonet" } else { "" };
                match landlock_abi {
                    Some(abi) => format!("namespaces+landlock-v{abi}{net}"),
                    None => format!("namespaces{net} (no landlock)"),
                }
            }
            Confinement::Container {
                network_isolated,
                synced,
                ..
            } => {
                let sync = if *synced { "+sync" } else { "" };
                let net = if *network_isolated { "+nonet" } else { "" };
                format!("container{sync}{net}")
            }
        }
    }

    /// Whether the kernel confines the command at all (namespaces or Landlock).
    pub fn is_confined(&self) -> bool {
        matches!(
            self,
            Confinement::Landlock { .. }
                | Confinement::Namespaces { .. }
                | Confinement::Container { .. }
        )
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
    /// Processes were still running after the shell ended and were killed (true only when
    /// something was actually killed).
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
    /// The process group the app signals, in the app's pid numbering: the shell's group on the
    /// Landlock path, bubblewrap's own group on the namespace path (whose whole tree is gone when
    /// `run` returns).
    pub pgid: i32,
    /// How the command reached the network and every decision of its proxy (absent in outcomes
    /// stored before the proxy existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<aibuddy_netproxy::NetReport>,
    /// Protected paths the command created (removed) or changed (restored, Landlock-only path)
    /// after it ended (see `protect`).
    #[serde(default)]
    pub protected: crate::protect::ProtectedReport,
    /// A container sandbox with `project: "sync"`: what was copied in before the command and
    /// brought back after it (absent for every other run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<crate::SyncReport>,
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
