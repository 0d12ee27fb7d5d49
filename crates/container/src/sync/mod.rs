//! `project: "sync"`: the project is copied into the container instead of bound, and the
//! container's changes are brought back after every command, for an engine that is not on this
//! machine (`tcp://`), or any engine.
//!
//! - The container ([`container::create`]) binds nothing of this machine: no project folder, no
//!   bridge program, no proxy sockets (commands get no network; the report's mode says so). The
//!   project lives in the container's own file system at `workdir`, removed with it.
//! - Before each command ([`push`]): what changed here since the last sync (all of it the first
//!   time) goes in with one archive upload (`PUT /containers/{id}/archive`); what was deleted here
//!   is removed there (`rm -rf --` in one exec). Credential locations (`aibuddy_exec::hide`) are
//!   never copied; files over [`SyncLimits::max_file_bytes`] are not either (said on the call).
//!   The [`manifest::Manifest`] then records what the container holds (hash, kind, exec bit).
//! - After each command, also when it failed, timed out or was stopped ([`pull`]): one archive
//!   download of `workdir` is the listing and the content at once (no program needed in the
//!   image); each entry is compared with the manifest, and the changes are applied here under
//!   [`policy::Policy`] through [`local::LocalTree`] (only `openat` with `O_NOFOLLOW` from the
//!   project's own descriptor: no symlink is ever followed here, nothing is written outside the
//!   project, files are replaced by rename). Protected paths (`aibuddy_exec::protect`, the one
//!   owner of the list) and new git directories are never written, created or removed; a symlink
//!   is recreated only when its target stays inside the project and is not protected; sizes are
//!   bounded ([`SyncLimits`]); a path changed here while the command ran keeps this side's
//!   version. Every refusal and skip is recorded on the call (`ExecOutcome::sync`).
//! - File tools (`read`, `write`, `edit`...) work on this machine's project, as with `bind`: it
//!   stays the source of truth, and their changes go in before the next command.

mod apply;
mod archive;
mod listing;
mod local;
mod policy;
mod pull;
mod push;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use std::path::PathBuf;

use aibuddy_sandbox::aibuddy_exec::{
    ExecOutcome, ExecRequest, ExecSink, SyncReport, hide, protect,
};
use aibuddy_sandbox::{Sandbox, SandboxError};
use tokio_util::sync::CancellationToken;

use crate::engine::engine_error;
use crate::sandbox::ContainerSandbox;
use crate::state::Inner;

use crate::sync_container as container;
pub use crate::sync_state::SyncLimits;
use crate::sync_state::manifest;
use policy::Policy;

/// How the sandbox's location names the project in sync mode.
pub(crate) fn location_phrase(workdir: &str) -> String {
    format!(
        "project copied into the container at {workdir} and its changes brought back after each command (sync: protected paths, links leading out and oversized files are refused), no network"
    )
}

/// `execute` in sync mode: push, the command (`exec.rs`), pull.
pub(crate) async fn exec(
    sb: &ContainerSandbox,
    req: ExecRequest,
    cancel: CancellationToken,
    sink: Arc<dyn ExecSink>,
) -> Result<ExecOutcome, SandboxError> {
    if req.command.trim().is_empty() || cancel.is_cancelled() {
        // exec.rs says which.
        return crate::exec::run(sb, req, cancel, sink).await;
    }
    let inner = &sb.inner;
    let read_only = req.read_only;
    let cancelled = || SandboxError::Cancelled { op: "execute" };
    let created = tokio::select! {
        c = sb.ensure(read_only, &[]) => c?,
        _ = cancel.cancelled() => return Err(cancelled()),
    };
    let container = created.id.clone();
    let policy = {
        let root = inner.files.root().to_path_buf();
        let list = protect::effective_list(&req.protected_paths, &req.unprotected_paths);
        let excluded = excluded_paths(&req);
        tokio::task::spawn_blocking(move || Policy::for_project(&root, &list, &excluded))
            .await
            .map(Arc::new)
            .map_err(|e| sync_error(inner, format!("could not find the protected paths: {e}")))?
    };
    let mut report = SyncReport {
        read_only,
        ..Default::default()
    };
    {
        let mut manifest = inner.sync.of(read_only).lock().await;
        // Bounded like the engine's other requests, and by the stop.
        let bound = inner
            .opts
            .engine_timeout
            .saturating_mul(2)
            .saturating_add(inner.opts.sync.pull_time);
        let pushed = tokio::select! {
            r = tokio::time::timeout(bound, push::push(inner, &container, policy.clone(), &mut manifest, &mut report)) => r,
            // The manifest changes only once a step is done: what a cut push did not finish is
            // copied again next time.
            _ = cancel.cancelled() => return Err(cancelled()),
        };
        match pushed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(sync_error(
                    inner,
                    format!(
                        "did not copy the project into the container within {} s",
                        bound.as_secs()
                    ),
                ));
            }
        }
    }
    let result = crate::exec::run(sb, req, cancel, sink).await;
    // Not cut by a stop (what the command wrote before it comes back), bounded by
    // `SyncLimits::pull_time` and the engine timeout per piece. A read-only command's changes
    // stay in its container (and are undone there by the next push).
    let mut manifest = inner.sync.of(read_only).lock().await;
    let mode = if read_only {
        pull::Mode::Relearn
    } else {
        pull::Mode::Apply
    };
    pull::bring_back(inner, &container, policy, &mut manifest, &mut report, mode).await;
    drop(manifest);
    match result {
        Ok(mut outcome) => {
            outcome.sync = Some(report);
            Ok(outcome)
        }
        Err(SandboxError::Exec { stage, message }) => Err(SandboxError::Exec {
            stage,
            message: format!("{message}; {}", report.summary()),
        }),
        Err(e) => {
            tracing::info!(summary = %report.summary(), "sync after a command that did not run");
            Err(e)
        }
    }
}

/// Paths of this machine never copied into the container nor written from it: the credential
/// locations the request hides (unless exposed) and the app's data directories.
fn excluded_paths(req: &ExecRequest) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match &req.home {
        Some(home) => hide::credential_locations(home, &req.exposed_credentials),
        None => Vec::new(),
    };
    out.extend(
        req.credential_paths
            .iter()
            .filter(|p| !req.exposed_credentials.iter().any(|e| p.starts_with(e)))
            .cloned(),
    );
    out.extend(req.hidden_paths.iter().cloned());
    out
}

/// An Execution-stage error of the sync.
pub(crate) fn sync_error(inner: &Inner, what: impl std::fmt::Display) -> SandboxError {
    engine_error(&inner.opts.endpoint, what)
}

/// The project-relative path as text (lossy), for notes and logs.
pub(crate) fn shown(rel: &[u8]) -> String {
    String::from_utf8_lossy(rel).into_owned()
}
