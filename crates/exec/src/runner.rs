//! [`run`]: spawn, supervise, capture and end a command (the I/O half; decisions live elsewhere).

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::capture::{Capture, HeadTail, Spool};
use crate::confine;
use crate::env::filter_env;
use crate::error::ExecError;
use crate::launch::{Launched, Wiring, namespaces_applied, spawn_bwrap, spawn_landlock};
use crate::netwire::{Net, Route};
use crate::outcome::{Confinement, ExecOutcome, StreamStats, Termination};
use crate::process_group::{GroupGuard, group_alive, kill_tree, wait_group_gone};
use crate::protect::{self, Guard, Hold};
use crate::pump::{LiveConfig, Pump};
use crate::request::{ConfinePolicy, ExecRequest, NamespacePolicy};
use crate::sink::ExecSink;
use crate::{bwrap, init, roots, tmpdir};

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

    // A read-only request writes nowhere but its private TMPDIR.
    let writable_roots = if req.read_only {
        Vec::new()
    } else {
        roots::verify(&req.writable_roots)?
    };
    let (kept_env, env_dropped) = filter_env(std::env::vars_os(), &req.env);

    let spool = match &req.spool_path {
        Some(path) => Some(
            Spool::create(path.clone(), req.spool_cap).map_err(|source| ExecError::Prepare {
                what: "the spool file",
                source,
            })?,
        ),
        None => None,
    };

    let started = Instant::now();
    let path = choose_path(&req);
    // Protected paths of every writable root (the project first): held by read-only binds on the
    // namespace path, restored after the command on the Landlock-only one.
    let protect_roots: Vec<PathBuf> =
        std::iter::once(std::fs::canonicalize(&req.cwd).unwrap_or_else(|_| req.cwd.clone()))
            .chain(writable_roots.iter().cloned())
            .collect();
    let protected_list = protect::effective_list(&req.protected_paths, &req.unprotected_paths);
    let hold = match &path {
        LaunchPath::Namespaces { .. } => Hold::Mounts,
        LaunchPath::Landlock { .. } => Hold::Restore,
    };
    let protected = Guard::prepare(&protect_roots, &protected_list, hold);
    // The host temp dir exists only on the Landlock path; in the namespaces TMPDIR is a private
    // tmpfs that vanishes with them.
    let mut host_tmp = None;
    let mut kept_env = kept_env;
    let net;
    let (launched, mut confinement) = match path {
        LaunchPath::Namespaces { bwrap, init } => {
            let n = Net::start(
                &req,
                Route::Namespaces { init: init.is_ok() },
                sink.as_ref(),
            )?;
            n.apply_env(&mut kept_env);
            let wiring = Wiring {
                env: kept_env,
                tmpdir: sandbox_tmpdir(),
                bridge: n.bridge.clone(),
                shape: crate::launch::Shape {
                    stdin_piped: req.stdin_piped,
                    ..Default::default()
                },
            };
            net = n;
            if let Err(reason) = &init {
                tracing::warn!(%reason, "no init program: namespaces without the inner Landlock layer");
            }
            let launched = spawn_bwrap(
                &req,
                &wiring,
                &bwrap,
                &writable_roots,
                &protected,
                init.as_deref().ok(),
            )?;
            (launched, None)
        }
        LaunchPath::Landlock { no_namespaces } => {
            let tmp = tmpdir::create().map_err(|source| ExecError::Prepare {
                what: "the private temp dir",
                source,
            })?;
            let mut writable = vec![tmp.path().to_path_buf()];
            if !req.read_only {
                writable.push(req.cwd.clone());
            }
            writable.extend(writable_roots.iter().cloned());
            let tcp_rules = req.confine != ConfinePolicy::Off
                && confine::landlock_abi().is_some_and(|(_, tcp)| tcp);
            let mut n = Net::start(&req, Route::Landlock { tcp_rules }, sink.as_ref())?;
            n.apply_env(&mut kept_env);
            let (prepared, confinement) = match req.confine {
                ConfinePolicy::Off => (None, Confinement::Disabled),
                policy => match confine::prepare(&writable, req.network_allowed, n.landlock_port) {
                    Ok(mut p) => {
                        if let Confinement::Landlock {
                            no_namespaces: n, ..
                        } = &mut p.applied
                        {
                            *n = no_namespaces;
                        }
                        let applied = p.applied.clone();
                        (Some(p), applied)
                    }
                    Err(reason) if policy == ConfinePolicy::Required => {
                        return Err(ExecError::ConfinementUnavailable(reason));
                    }
                    Err(reason) => {
                        tracing::warn!(%reason, "running without confinement");
                        n.unenforced();
                        (None, Confinement::Unavailable { reason })
                    }
                },
            };
            net = n;
            let wiring = Wiring {
                env: kept_env,
                tmpdir: tmp.path().to_path_buf(),
                bridge: None,
                shape: crate::launch::Shape {
                    stdin_piped: req.stdin_piped,
                    ..Default::default()
                },
            };
            host_tmp = Some(tmp);
            (spawn_landlock(&req, &wiring, prepared)?, Some(confinement))
        }
    };
    let Launched {
        mut child,
        mut control,
        report,
        pgid,
    } = launched;
    let kind = control.group_kind();
    let mut guard = GroupGuard {
        pgid,
        kind,
        armed: true,
    };
    tracing::debug!(pgid, command = %req.command, "command started");
    if let Some(stdin) = child.stdin.take() {
        match stdin.into_owned_fd() {
            Ok(fd) => sink.stdin(fd),
            Err(e) => tracing::warn!(pgid, "the command's stdin is not usable: {e}"),
        }
    }
    let stdout = child.stdout.take().map(|p| p.into_owned_fd()).transpose();
    let stderr = child.stderr.take().map(|p| p.into_owned_fd()).transpose();
    let (stdout, stderr) = match (stdout, stderr) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(source), _) | (_, Err(source)) => {
            return Err(ExecError::Prepare {
                what: "the output pipes",
                source,
            });
        }
    };
    let new_capture = || Capture {
        headtail: HeadTail::new(req.head_bytes, req.tail_bytes),
        spool: None,
        stdout: StreamStats::default(),
        stderr: StreamStats::default(),
    };
    let mut first = new_capture();
    first.spool = spool;
    // Reading, spooling and live output run on the pump's thread; this loop only supervises.
    let mut pump =
        Pump::start(stdout, stderr, first, sink.clone(), live_config(&req)).map_err(|source| {
            ExecError::Prepare {
                what: "the output reader",
                source,
            }
        })?;
    let mut captured: Option<Capture> = None;
    let mut heartbeat =
        tokio::time::interval_at(started + req.heartbeat_interval, req.heartbeat_interval);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Timers and the cancellation future are created once and polled by reference: re-creating
    // them per loop turn costs a timer-wheel insertion per output chunk.
    // An untimed command (a background process) has no deadline: the timer is never armed.
    let timeout_sleep = tokio::time::sleep_until(started + req.timeout);
    tokio::pin!(timeout_sleep);
    let timed = !req.untimed;
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
        if captured.is_some() && status.is_some() {
            break;
        }
        let running = status.is_none();
        tokio::select! {
            biased;
            _ = &mut cancelled_fut, if running && !cancelled => {
                cancelled = true;
                killed = true;
                control.kill();
                phase_sleep.as_mut().reset(Instant::now() + req.kill_grace);
                phase_armed = true;
                tracing::debug!(pgid, "cancelled: group killed");
            }
            c = pump.finished(), if captured.is_none() => {
                captured = Some(c.unwrap_or_else(|| {
                    tracing::warn!(pgid, "the output reader ended without its capture");
                    new_capture()
                }));
            }
            st = &mut wait_fut, if running => {
                let st = st.map_err(ExecError::Wait)?;
                status = Some(st);
                phase_sleep.as_mut().reset(Instant::now() + DRAIN_AFTER_EXIT);
                phase_armed = true;
            }
            _ = &mut timeout_sleep, if timed && running && !timed_out && !cancelled => {
                timed_out = true;
                control.terminate();
                phase_sleep.as_mut().reset(Instant::now() + req.kill_grace);
                phase_armed = true;
                tracing::debug!(pgid, "timeout: SIGTERM sent to the group");
            }
            _ = &mut phase_sleep, if phase_armed => {
                phase_armed = false;
                if running {
                    if !killed {
                        killed = true;
                        control.kill();
                        phase_sleep.as_mut().reset(Instant::now() + req.kill_grace);
                        phase_armed = true;
                        tracing::debug!(pgid, "grace over: SIGKILL sent to the group");
                    } else {
                        // Still running a grace after the kill (an init that no longer answers,
                        // or a sandbox still being set up): SIGKILL the tree; on the namespace
                        // path the kernel then tears the whole PID namespace down.
                        kill_tree(pgid, kind);
                        tracing::warn!(pgid, "kill not honoured: launcher tree SIGKILLed");
                    }
                } else {
                    // A daemon that left the group still holds a pipe: stop reading.
                    tracing::warn!(pgid, "output pipes still open after the command ended; closing them");
                    pump.stop();
                }
            }
            _ = heartbeat.tick(), if running => sink.heartbeat(),
        }
    }

    let status = status.unwrap_or_default();
    let capture = captured.unwrap_or_else(new_capture);
    drop(control);
    let end = report.finish();
    if !end.sandbox_started {
        // bubblewrap failed before the init ran: nothing of the command ran. Its message is
        // on stderr (bounded: the tail ring).
        let captured = capture.finish();
        let (head, tail) = (captured.head, captured.tail);
        let mut all = head;
        all.extend_from_slice(&tail);
        let text = String::from_utf8_lossy(&all);
        let detail: String = text.trim().chars().take(500).collect();
        guard.armed = false;
        return Err(ExecError::SandboxSetup(detail));
    }
    let killed_leftovers = end.killed_leftovers;
    let confinement = match confinement.take() {
        Some(c) => c,
        None => namespaces_applied(&req, &end),
    };
    // The supervisor reaps the whole tree before exiting; this is a safety net.
    if group_alive(pgid) {
        kill_tree(pgid, kind);
        if !wait_group_gone(pgid, Duration::from_secs(2)).await {
            tracing::warn!(pgid, "process group still present after SIGKILL");
        }
    }
    guard.armed = false;
    // Every process of the command is gone: sweep what it created, restore what it changed.
    let protected = protected.finish();
    if !protected.is_empty() {
        tracing::warn!(?protected, "protected paths swept after the command");
    }
    let duration = started.elapsed();

    let termination = match end.wait_status {
        Some(st) => termination_of(std::process::ExitStatus::from_raw(st)),
        None => termination_of(status),
    };
    let captured = capture.finish();
    if let Some(tmp) = host_tmp
        && let Err(e) = tmp.close()
    {
        tracing::warn!(error = %e, "could not remove the private temp dir");
    }
    Ok(ExecOutcome {
        termination,
        duration,
        timed_out,
        cancelled,
        killed_leftovers,
        head: captured.head,
        tail: captured.tail,
        omitted_middle_bytes: captured.omitted_middle_bytes,
        stdout: captured.stdout,
        stderr: captured.stderr,
        spool: captured.spool,
        confinement,
        env_dropped,
        pgid,
        network: Some(net.finish()),
        protected,
        sync: None,
    })
}

/// Which launch path a request takes on this host.
enum LaunchPath {
    /// bubblewrap, with the init program or why it is missing.
    Namespaces {
        bwrap: PathBuf,
        init: Result<PathBuf, String>,
    },
    /// Landlock only, with why there are no namespaces (`None` when confinement is off).
    Landlock { no_namespaces: Option<String> },
}

fn choose_path(req: &ExecRequest) -> LaunchPath {
    if req.confine == ConfinePolicy::Off {
        return LaunchPath::Landlock {
            no_namespaces: None,
        };
    }
    if req.namespaces == NamespacePolicy::Off {
        return LaunchPath::Landlock {
            no_namespaces: Some("namespaces turned off for this request".into()),
        };
    }
    match bwrap::probe() {
        Ok(bwrap) => LaunchPath::Namespaces {
            bwrap,
            init: init::locate(req.init_program.as_deref()),
        },
        Err(reason) => LaunchPath::Landlock {
            no_namespaces: Some(reason),
        },
    }
}

/// A fresh `TMPDIR` path inside the sandbox's private `/tmp`.
fn sandbox_tmpdir() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    PathBuf::from(format!(
        "/tmp/{}{}-{}",
        tmpdir::TMP_PREFIX,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn termination_of(status: std::process::ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited { code },
        (None, Some(signal)) => Termination::Signaled { signal },
        (None, None) => Termination::Exited { code: -1 },
    }
}

/// The request's live-output coalescing (bounded by `ExecRequest::validate`).
fn live_config(req: &ExecRequest) -> LiveConfig {
    LiveConfig {
        max_bytes: req.live_max_bytes,
        interval: req.live_interval,
    }
}
