//! [`run`]: spawn, supervise, capture and end a command (the I/O half; decisions live elsewhere).

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::capture::{Capture, HeadTail, Spool};
use crate::confine;
use crate::env::filter_env;
use crate::error::ExecError;
use crate::outcome::{Confinement, ExecOutcome, StreamStats, Termination};
use crate::process_group::{GroupGuard, group_alive, signal_group, wait_group_gone};
use crate::request::{ConfinePolicy, ExecRequest};
use crate::sink::{ExecSink, Stream};
use crate::supervisor::{self, Plan};

/// Read size per pipe read.
const READ_CHUNK: usize = 64 * 1024;
/// After the command ended, how long pipes held open by escaped daemons are still read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

pub(crate) async fn run(
    req: ExecRequest,
    cancel: CancellationToken,
    sink: Arc<dyn ExecSink>,
) -> Result<ExecOutcome, ExecError> {
    req.validate()?;
    match std::fs::metadata(&req.cwd) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ExecError::Cwd {
                path: req.cwd.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        Err(source) => {
            return Err(ExecError::Cwd {
                path: req.cwd.clone(),
                source,
            });
        }
    }

    let (kept_env, env_dropped) = filter_env(std::env::vars_os(), &req.env);
    let tmp = tempfile::Builder::new()
        .prefix("aibuddy-exec-")
        .tempdir()
        .map_err(|source| ExecError::Prepare {
            what: "the private temp dir",
            source,
        })?;

    let mut writable = vec![req.cwd.clone(), tmp.path().to_path_buf()];
    writable.extend(req.writable_roots.iter().cloned());
    let (prepared, confinement) = match req.confine {
        ConfinePolicy::Off => (None, Confinement::Disabled),
        policy => match confine::prepare(&writable, req.network_allowed) {
            Ok(p) => {
                let applied = p.applied.clone();
                (Some(p), applied)
            }
            Err(reason) if policy == ConfinePolicy::Required => {
                return Err(ExecError::ConfinementUnavailable(reason));
            }
            Err(reason) => {
                tracing::warn!(%reason, "running without confinement");
                (None, Confinement::Unavailable { reason })
            }
        },
    };

    let spool = match &req.spool_path {
        Some(path) => Some(
            Spool::create(path.clone(), req.spool_cap).map_err(|source| ExecError::Prepare {
                what: "the spool file",
                source,
            })?,
        ),
        None => None,
    };

    let (report_read, report_write) = report_pipe().map_err(|source| ExecError::Prepare {
        what: "the supervisor pipe",
        source,
    })?;

    let plan = Plan {
        app_pid: std::process::id() as libc::pid_t,
        landlock_fd: prepared.as_ref().map(|p| p.fd.as_raw_fd()),
        report_fd: report_write.as_raw_fd(),
    };
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&req.command)
        .current_dir(&req.cwd)
        .env_clear()
        .envs(kept_env)
        .env("TMPDIR", tmp.path())
        .envs(req.env.set.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: the closure only performs async-signal-safe system calls (see `supervisor`).
    unsafe {
        cmd.pre_exec(move || supervisor::pre_exec(plan));
    }

    let started = Instant::now();
    let spawned = cmd.spawn();
    drop(report_write);
    drop(prepared);
    let mut child = spawned.map_err(ExecError::Spawn)?;
    let mut report = std::fs::File::from(report_read);
    let mut pid_bytes = [0u8; 4];
    // The supervisor writes the command's pid right after its fork, before spawn() returns.
    if let Err(e) = report.read_exact(&mut pid_bytes) {
        let _ = child.start_kill();
        return Err(ExecError::Spawn(e));
    }
    let pgid = i32::from_ne_bytes(pid_bytes);
    let mut guard = GroupGuard { pgid, armed: true };
    tracing::debug!(pgid, command = %req.command, "command started");

    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut capture = Capture {
        headtail: HeadTail::new(req.head_bytes, req.tail_bytes),
        spool,
        stdout: StreamStats::default(),
        stderr: StreamStats::default(),
    };
    let mut out_buf = vec![0u8; READ_CHUNK];
    let mut err_buf = vec![0u8; READ_CHUNK];
    let mut heartbeat =
        tokio::time::interval_at(started + req.heartbeat_interval, req.heartbeat_interval);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Timers and the cancellation future are created once and polled by reference: re-creating
    // them per loop turn costs a timer-wheel insertion per output chunk.
    let timeout_sleep = tokio::time::sleep_until(started + req.timeout);
    tokio::pin!(timeout_sleep);
    // One timer for the next phase: the SIGKILL after the grace, then the post-exit drain limit.
    let phase_sleep = tokio::time::sleep_until(started + req.timeout);
    tokio::pin!(phase_sleep);
    let mut phase_armed = false;
    let cancelled_fut = cancel.cancelled();
    tokio::pin!(cancelled_fut);
    // Polling a fresh `wait()` each turn would cost a waitpid per chunk.
    let wait_fut = child.wait();
    tokio::pin!(wait_fut);
    let mut status: Option<std::process::ExitStatus> = None;
    let (mut timed_out, mut cancelled, mut killed) = (false, false, false);

    loop {
        if stdout.is_none() && stderr.is_none() && status.is_some() {
            break;
        }
        let running = status.is_none();
        tokio::select! {
            biased;
            _ = &mut cancelled_fut, if running && !cancelled => {
                cancelled = true;
                killed = true;
                signal_group(pgid, libc::SIGKILL);
                tracing::debug!(pgid, "cancelled: group killed");
            }
            r = read_some(&mut stdout, &mut out_buf) => {
                deliver(r, Stream::Stdout, &mut stdout, &out_buf, &mut capture, sink.as_ref());
            }
            r = read_some(&mut stderr, &mut err_buf) => {
                deliver(r, Stream::Stderr, &mut stderr, &err_buf, &mut capture, sink.as_ref());
            }
            st = &mut wait_fut, if running => {
                let st = st.map_err(ExecError::Wait)?;
                status = Some(st);
                phase_sleep.as_mut().reset(Instant::now() + DRAIN_AFTER_EXIT);
                phase_armed = true;
            }
            _ = &mut timeout_sleep, if running && !timed_out && !cancelled => {
                timed_out = true;
                signal_group(pgid, libc::SIGTERM);
                phase_sleep.as_mut().reset(Instant::now() + req.kill_grace);
                phase_armed = true;
                tracing::debug!(pgid, "timeout: SIGTERM sent to the group");
            }
            _ = &mut phase_sleep, if phase_armed => {
                phase_armed = false;
                if running {
                    if !killed {
                        killed = true;
                        signal_group(pgid, libc::SIGKILL);
                        tracing::debug!(pgid, "grace over: SIGKILL sent to the group");
                    }
                } else {
                    // A daemon that left the group still holds a pipe: stop reading.
                    tracing::warn!(pgid, "output pipes still open after the command ended; closing them");
                    stdout = None;
                    stderr = None;
                }
            }
            _ = heartbeat.tick(), if running => sink.heartbeat(),
        }
    }

    let status = status.unwrap_or_default();
    let mut flag = [0u8; 1];
    let killed_leftovers = matches!(report.read(&mut flag), Ok(1)) && flag[0] == 1;
    // The supervisor reaps the whole tree before exiting; this is a safety net.
    if group_alive(pgid) {
        signal_group(pgid, libc::SIGKILL);
        if !wait_group_gone(pgid, Duration::from_secs(2)).await {
            tracing::warn!(pgid, "process group still present after SIGKILL");
        }
    }
    guard.armed = false;
    let duration = started.elapsed();

    let termination = termination_of(status);
    let (head, tail, omitted_middle_bytes) = capture.headtail.finish();
    let spool = capture.spool.map(Spool::finish);
    if let Err(e) = tmp.close() {
        tracing::warn!(error = %e, "could not remove the private temp dir");
    }
    Ok(ExecOutcome {
        termination,
        duration,
        timed_out,
        cancelled,
        killed_leftovers,
        head,
        tail,
        omitted_middle_bytes,
        stdout: capture.stdout,
        stderr: capture.stderr,
        spool,
        confinement,
        env_dropped,
        pgid,
    })
}

fn termination_of(status: std::process::ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited { code },
        (None, Some(signal)) => Termination::Signaled { signal },
        (None, None) => Termination::Exited { code: -1 },
    }
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

fn deliver<R>(
    r: std::io::Result<usize>,
    stream: Stream,
    pipe: &mut Option<R>,
    buf: &[u8],
    capture: &mut Capture,
    sink: &dyn ExecSink,
) {
    match r {
        Ok(0) => *pipe = None,
        Ok(n) => {
            let chunk = &buf[..n];
            sink.output(stream, chunk);
            capture.push(stream, chunk);
        }
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
        Err(e) => {
            tracing::warn!(stream = stream.as_str(), error = %e, "reading output failed");
            *pipe = None;
        }
    }
}

/// A CLOEXEC pipe: (read end, write end).
fn report_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fresh descriptors that we immediately own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
