//! [`ExecError`]: why a command could not be run to an outcome, and the [`Stage`] (the one shared
//! by every crate) each failure belongs to.

use std::path::PathBuf;
use std::time::Duration;

pub use aibuddy_common::Stage;

/// The former name of [`Stage`] in this crate, kept so existing callers compile.
pub type ErrorStage = Stage;

/// Failures of [`crate::run`] and [`crate::with_hard_deadline`].
///
/// A command that runs and fails (non-zero exit, signal, timeout, cancellation) is NOT an error:
/// it is an [`crate::ExecOutcome`]. Errors mean there is no outcome to report.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The request is malformed (empty command, timeout out of range, relative path...).
    #[error("invalid exec request: {0}")]
    InvalidRequest(String),
    /// The working directory does not exist or is not a directory.
    #[error("working directory {path} is unusable: {source}")]
    Cwd {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A writable root no longer resolves to the path that was authorized (swapped for a symlink).
    #[error("writable root {} now resolves to {}; refusing to run", root.display(), now.display())]
    RootChanged { root: PathBuf, now: PathBuf },
    /// The namespace sandbox could not be set up (bubblewrap failed before the command started).
    #[error("the sandbox could not be set up, nothing ran: {0}")]
    SandboxSetup(String),
    /// Confinement was required but the kernel cannot apply it.
    #[error("confinement required but unavailable: {0}")]
    ConfinementUnavailable(String),
    /// Building the Landlock ruleset failed.
    #[error("could not prepare confinement: {0}")]
    Confinement(String),
    /// The private temp dir or the spool file could not be created.
    #[error("could not prepare {what}: {source}")]
    Prepare {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The process could not be started.
    #[error("could not start /bin/sh: {0}")]
    Spawn(#[source] std::io::Error),
    /// Waiting on the process failed.
    #[error("could not wait for the command: {0}")]
    Wait(#[source] std::io::Error),
    /// The caller-side hard deadline fired: the operation itself never returned.
    #[error(
        "hard deadline of {} ms fired (sandbox timeout {} ms + grace {} ms): the sandbox operation did not return",
        deadline.as_millis(),
        sandbox_timeout.as_millis(),
        grace.as_millis()
    )]
    HardDeadline {
        deadline: Duration,
        sandbox_timeout: Duration,
        grace: Duration,
    },
}

impl ExecError {
    /// The stage this failure belongs to: Parameters for malformed requests, Execution otherwise.
    pub fn stage(&self) -> Stage {
        match self {
            ExecError::InvalidRequest(_) => Stage::Parameters,
            ExecError::RootChanged { .. } => Stage::Authorization,
            ExecError::Cwd { .. }
            | ExecError::SandboxSetup(_)
            | ExecError::ConfinementUnavailable(_)
            | ExecError::Confinement(_)
            | ExecError::Prepare { .. }
            | ExecError::Spawn(_)
            | ExecError::Wait(_)
            | ExecError::HardDeadline { .. } => Stage::Execution,
        }
    }

    /// A short stable code for typed error values crossing IPC.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::InvalidRequest(_) => "exec.invalid_request",
            ExecError::Cwd { .. } => "exec.cwd",
            ExecError::RootChanged { .. } => "exec.root_changed",
            ExecError::SandboxSetup(_) => "exec.sandbox_setup",
            ExecError::ConfinementUnavailable(_) => "exec.confinement_unavailable",
            ExecError::Confinement(_) => "exec.confinement",
            ExecError::Prepare { .. } => "exec.prepare",
            ExecError::Spawn(_) => "exec.spawn",
            ExecError::Wait(_) => "exec.wait",
            ExecError::HardDeadline { .. } => "exec.hard_deadline",
        }
    }
}
