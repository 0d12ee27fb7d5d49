//! Running one hook (I/O): `sh -c COMMAND` in the project root, in a process group of its own,
//! the input JSON on stdin, stdout and stderr read up to [`MAX_KEPT_BYTES`] each (the rest is
//! drained and dropped), bounded by its timeout and by the run's cancellation: either kills the
//! whole group (`SIGKILL`). When the hook's shell exits, what it left running in its group is
//! killed too, so a hook leaves nothing behind that outlives it.
//!
//! A user-level hook gets the person's environment as the app has it (it runs with their
//! authority, like their shell). A project hook runs confined like a command, with the
//! environment commands get (`super::confined`). Both get `AIBUDDY_PROJECT_ROOT`,
//! `AIBUDDY_HOOK_EVENT` and Claude Code's `CLAUDE_PROJECT_DIR`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::record::MAX_KEPT_BYTES;
use super::verdict::Exit;
use crate::settings::{ExecSettings, HookEntry, HookLevel, MAX_HOOK_TIMEOUT_SECS};

/// How long the output pipes are still read after the hook's group was ended (a process that left
/// the group may hold them open).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Where a hook runs: the project, the data directory in use (hidden from a confined hook) and
/// the command settings a confined hook gets.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub project: &'a Path,
    pub data_dir: &'a Path,
    pub exec: &'a ExecSettings,
    /// The approval mode is `read-only`: a confined hook gets the project read-only, no network.
    pub read_only: bool,
}

/// What one run of a hook's process produced.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
    pub duration: Duration,
}

impl Ran {
    /// A hook that did not start (or was never watched), `why`, after `started`.
    pub(super) fn not_started(why: String, started: Instant) -> Ran {
        Ran {
            exit: Exit::NotStarted(why),
            stdout: String::new(),
            stderr: String::new(),
            truncated: false,
            duration: started.elapsed(),
        }
    }
}

/// Read everything from `r`, keeping the first `MAX_KEPT_BYTES`.
async fn read_capped(mut r: impl AsyncRead + Unpin) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    let mut cut = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_KEPT_BYTES.saturating_sub(kept.len());
                if n > room {
                    cut = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, cut)
}

fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals one process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Run `hook` for `event` with `input` on stdin: a project's hook confined (`super::confined`),
/// the person's own with their authority.
pub async fn run(
    hook: &HookEntry,
    event: &str,
    input: &serde_json::Value,
    place: Place<'_>,
    cancel: &CancellationToken,
) -> Ran {
    let started = Instant::now();
    let secs = hook.timeout_secs.clamp(1, MAX_HOOK_TIMEOUT_SECS);
    let project = place.project;
    if hook.level == HookLevel::Project {
        return super::confined::run(hook, event, input, project, place, secs, cancel).await;
    }
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.env("AIBUDDY_PROJECT_ROOT", project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("AIBUDDY_HOOK_EVENT", event);
    let not_started = |why: String| Ran::not_started(why, started);
    if cancel.is_cancelled() {
        return Ran {
            exit: Exit::Cancelled,
            ..not_started(String::new())
        };
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return not_started(e.to_string()),
    };
    let Some(pgid) = child.id() else {
        return not_started("it exited before it could be watched".into());
    };
    let stdin = child.stdin.take();
    let body = serde_json::to_vec(input).unwrap_or_default();
    // A hook that does not read its stdin must not hold us up: written beside, errors ignored.
    let writer = tokio::spawn(async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&body).await;
            let _ = stdin.shutdown().await;
        }
    });
    let out = child.stdout.take().map(|o| tokio::spawn(read_capped(o)));
    let err = child.stderr.take().map(|e| tokio::spawn(read_capped(e)));
    let exit = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                match (s.code(), s.signal()) {
                    (Some(c), _) => Exit::Code(c),
                    (None, Some(sig)) => Exit::Signal(sig),
                    (None, None) => Exit::Signal(0),
                }
            }
            Err(e) => Exit::NotStarted(e.to_string()),
        },
        _ = tokio::time::sleep(Duration::from_secs(secs)) => {
            kill_group(pgid);
            let _ = child.wait().await;
            Exit::TimedOut { after_secs: secs }
        }
        _ = cancel.cancelled() => {
            kill_group(pgid);
            let _ = child.wait().await;
            Exit::Cancelled
        }
    };
    // Whatever it left running in its group ends with it. (The group id stays taken while any
    // member lives; once none does, the kill finds nothing: a new process would have to reuse the
    // shell's pid and make itself a group leader in between for it to land elsewhere.)
    kill_group(pgid);
    writer.abort();
    let collect = |h: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>| async move {
        match h {
            Some(h) => {
                let abort = h.abort_handle();
                match tokio::time::timeout(DRAIN_GRACE, h).await {
                    Ok(Ok(r)) => r,
                    _ => {
                        abort.abort();
                        (Vec::new(), false)
                    }
                }
            }
            None => (Vec::new(), false),
        }
    };
    let (stdout, cut_out) = collect(out).await;
    let (stderr, cut_err) = collect(err).await;
    Ran {
        exit,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        truncated: cut_out || cut_err,
        duration: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(command: &str, timeout_secs: u64) -> HookEntry {
        HookEntry {
            matcher: "*".into(),
            command: command.into(),
            timeout_secs,
            level: HookLevel::User,
        }
    }

    #[tokio::test]
    async fn stopping_the_run_kills_a_running_hook() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stop.cancel();
        });
        let t = Instant::now();
        let ran = run(
            &hook("sleep 30", 60),
            "run_start",
            &json!({}),
            Place {
                project: dir.path(),
                data_dir: dir.path(),
                exec: &ExecSettings::default(),
                read_only: false,
            },
            &cancel,
        )
        .await;
        assert_eq!(ran.exit, Exit::Cancelled);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn output_is_capped_and_stdin_carries_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            &hook("cat; head -c 100000 /dev/zero | tr '\\0' x", 30),
            "pre_tool_call",
            &json!({"tool": "execute"}),
            Place {
                project: dir.path(),
                data_dir: dir.path(),
                exec: &ExecSettings::default(),
                read_only: false,
            },
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(ran.exit, Exit::Code(0));
        assert!(ran.truncated);
        assert_eq!(ran.stdout.len(), MAX_KEPT_BYTES);
        assert!(
            ran.stdout.starts_with(r#"{"tool":"execute"}"#),
            "{}",
            &ran.stdout[..40]
        );
    }
}
