//! aibuddy-exec: the process runner behind the `execute` tool.
//!
//! [`run`] starts `/bin/sh -c <command>` in the project root and returns an [`ExecOutcome`]:
//!
//! - **namespaces** (see `bwrap`, `init`): where bubblewrap works, each command runs in its own
//!   user, PID, IPC and mount namespaces (and an empty network namespace when the network is off),
//!   with the system read-only, credentials and the data directory hidden, and an init program as
//!   PID 1 that applies Landlock inside and ends every process of the namespace; elsewhere the
//!   Landlock-only path below, reported as such;
//! - **own session and process group** (`setsid`), stdin from `/dev/null`, output through pipes,
//!   no inherited descriptor beyond stdin, stdout and stderr;
//! - **parent death**: a tiny supervisor forked inside `pre_exec` (see `supervisor`) holds
//!   `PR_SET_PDEATHSIG` and kills the whole group when the app dies, even by `kill -9`;
//! - **environment policy** (see [`EnvPolicy`]): secret-looking names dropped and reported;
//! - **Landlock** (see `confine`): read the system, write only the project root, a private
//!   `TMPDIR`, a few device files and extra writable roots; optionally no TCP;
//! - **timeout**: SIGTERM to the group, SIGKILL after a grace; **cancellation**: SIGKILL to the group
//!   at once; leftovers (`cmd &`) are killed when the shell ends: nothing runs on unobserved;
//! - **heartbeats** and **live output** to an [`ExecSink`];
//! - **bounded memory**: raw output spooled to a capped file, a head buffer and a tail ring in memory;
//!   [`project_for_model`] turns an outcome into the 30,000-character model text.
//!
//! [`with_hard_deadline`] is the caller-side deadline (sandbox timeout + 30 s).
//!
//! [`spawn_server`] starts a long-lived process (an MCP server with `"sandbox"`) under the same
//! launch, with stdin piped, no deadline, and its tree killed when the [`ConfinedServer`] drops.

mod bridged;
mod bwrap;
mod capture;
mod coalesce;
mod confine;
mod deadline;
mod env;
mod error;
mod gitconfig;
pub mod hide;
mod init;
mod launch;
mod netbridge;
mod netdirs;
mod netwire;
mod outcome;
mod output_capture;
mod process_group;
mod projection;
pub mod protect;
mod pump;
mod request;
pub mod roots;
mod runner;
mod server;
mod sink;
mod supervisor;
mod support;
mod sync_report;
mod syscall_filter;
pub mod tmpdir;

/// The allow-list proxy crate (policy, decider, report types).
pub use aibuddy_netproxy as netproxy;
pub use bridged::{BRIDGE_MARKER, bridge_main};
pub use confine::landlock_support;
pub use deadline::{HARD_DEADLINE_GRACE, with_hard_deadline};
pub use env::{
    EnvDecision, decide as env_decide, decide_var as env_decide_var, filter_env,
    has_url_credentials, looks_secret as env_name_looks_secret,
};
pub use error::{ErrorStage, ExecError};
pub use init::{INIT_BINARY, INIT_MARKER, dispatch_init, init_main, init_program};
pub use netwire::{ContainerProxy, PROXY_VARS};
pub use outcome::{Confinement, ExecOutcome, SpoolInfo, StreamStats, Termination};
pub use output_capture::{CapturedOutput, OutputCapture};
pub use process_group::group_alive;
pub use projection::{
    MODEL_CHAR_CAP, ModelText, model_text, model_text_with_cap, project_for_model,
};
pub use protect::{MountGuard, PROTECTED_PATHS, ProtectedReport};
pub use request::{
    ConfinePolicy, DEFAULT_HEAD_BYTES, DEFAULT_HEARTBEAT, DEFAULT_KILL_GRACE,
    DEFAULT_LIVE_INTERVAL, DEFAULT_LIVE_MAX_BYTES, DEFAULT_MAX_PROCESSES, DEFAULT_SPOOL_CAP,
    DEFAULT_TAIL_BYTES, DEFAULT_TIMEOUT, EnvPolicy, ExecRequest, MAX_LIVE_INTERVAL,
    MAX_LIVE_MAX_BYTES, MAX_MAX_PROCESSES, MAX_TIMEOUT, NamespacePolicy, timeout_from_ms,
};
pub use server::{ConfinedServer, shell_line, spawn_server};
pub use sink::{ExecSink, NullSink, Stream};
pub use support::{confinement_for, confinement_support, prewarm_probes};
pub use sync_report::{SYNC_NOTES_CAP, SyncNote, SyncReport};

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// Runs `req.command` to an outcome. See the crate documentation for the guarantees.
///
/// Returns `Err` only when there is no outcome to report (bad request, spawn failure,
/// confinement required but unavailable). Timeouts, cancellations and failing exits are outcomes.
pub async fn run(
    req: ExecRequest,
    cancel: CancellationToken,
    sink: Arc<dyn ExecSink>,
) -> Result<ExecOutcome, ExecError> {
    runner::run(req, cancel, sink).await
}
