//! Running a **project** hook confined (I/O): the same sandbox as `execute` (the project writable,
//! the rest of the machine read-only, both data directories and the credentials hidden, the
//! filtered environment, the network policy with unlisted hosts refused). A trusted project's
//! hook script is pinned, but what it runs in turn (a Makefile, `package.json`, a script under
//! `node_modules`) is project content a confined command may have rewritten: confined, it gains
//! nothing a command could not do itself. User-level hooks run with the person's authority
//! (`process`).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy_sandbox::aibuddy_exec::{self, ExecSink, Stream, Termination};
use tokio_util::sync::CancellationToken;

use super::process::Ran;
use super::record::MAX_KEPT_BYTES;
use super::verdict::Exit;
use crate::exec_request::{ExecArgs, build_request, data_dirs, make_read_only};
use crate::settings::HookEntry;

/// Keeps the first [`MAX_KEPT_BYTES`] of each stream and feeds the input to stdin.
struct HookSink {
    input: Vec<u8>,
    out: Mutex<(Vec<u8>, Vec<u8>, bool)>,
}

impl ExecSink for HookSink {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        let Ok(mut kept) = self.out.lock() else {
            return;
        };
        let (out, err, cut) = &mut *kept;
        let buf = match stream {
            Stream::Stdout => out,
            Stream::Stderr => err,
        };
        let room = MAX_KEPT_BYTES.saturating_sub(buf.len());
        if chunk.len() > room {
            *cut = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    fn heartbeat(&self) {}

    fn stdin(&self, pipe: OwnedFd) {
        // Written beside (a hook that does not read its stdin must not hold the run up); errors
        // (it exited first) are ignored, and the pipe closes when the writer ends.
        let body = self.input.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::File::from(pipe);
            let _ = file.write_all(&body);
        });
    }
}

/// Run a project `hook` for `event` inside the sandbox, `input` on its stdin.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    hook: &HookEntry,
    event: &str,
    input: &serde_json::Value,
    project: &Path,
    place: super::process::Place<'_>,
    secs: u64,
    cancel: &CancellationToken,
) -> Ran {
    let started = Instant::now();
    let not_started = |why: String| Ran::not_started(why, started);
    let home = dirs::home_dir();
    let args = ExecArgs {
        command: hook.command.clone(),
        timeout_ms: Some(secs.saturating_mul(1000)),
        description: None,
        background: false,
    };
    let mut req = match build_request(&args, place.exec, project, home.as_deref(), None) {
        Ok(r) => r,
        Err(e) => return not_started(e.message),
    };
    req.hidden_paths = data_dirs(place.data_dir, &crate::data_dir::default_data_dir());
    req.credential_paths =
        aibuddy_exec::hide::env_credential_paths(|n| std::env::var_os(n), home.as_deref());
    // Never unconfined: where the sandbox cannot hold, a project's hook does not run (its run
    // record says why) rather than run with the person's authority unasked.
    req.confine = aibuddy_exec::ConfinePolicy::Required;
    if place.read_only {
        make_read_only(&mut req);
    }
    req.stdin_piped = true;
    req.heartbeat_interval = Duration::from_secs(3600);
    let project_text = project.to_string_lossy().into_owned();
    req.env.set.extend([
        ("AIBUDDY_PROJECT_ROOT".to_string(), project_text.clone()),
        ("CLAUDE_PROJECT_DIR".to_string(), project_text),
        ("AIBUDDY_HOOK_EVENT".to_string(), event.to_string()),
    ]);
    let sink = Arc::new(HookSink {
        input: serde_json::to_vec(input).unwrap_or_default(),
        out: Mutex::new((Vec::new(), Vec::new(), false)),
    });
    let outcome = aibuddy_exec::with_hard_deadline(
        aibuddy_exec::run(req, cancel.child_token(), sink.clone()),
        Duration::from_secs(secs),
        aibuddy_exec::HARD_DEADLINE_GRACE,
    )
    .await;
    let exit = match outcome {
        Ok(Ok(o)) if o.cancelled => Exit::Cancelled,
        Ok(Ok(o)) if o.timed_out => Exit::TimedOut { after_secs: secs },
        Ok(Ok(o)) => match o.termination {
            Termination::Exited { code } => Exit::Code(code),
            Termination::Signaled { signal } => Exit::Signal(signal),
        },
        Ok(Err(e)) | Err(e) => return not_started(e.to_string()),
    };
    let (out, err, cut) = sink
        .out
        .lock()
        .map(|k| k.clone())
        .unwrap_or_else(|p| p.into_inner().clone());
    Ran {
        exit,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        truncated: cut,
        duration: started.elapsed(),
    }
}
