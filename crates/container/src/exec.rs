//! A command in the container: exec create/start over the Engine API under the wrapper of
//! `wrapper.rs`, output streamed into the runner's bounded capture (the same head, tail, spool
//! and 30,000-character projection as a local run), heartbeats, the sandbox timeout (TERM, then
//! KILL after the grace), a stop (the HTTP request dropped and the command's processes killed),
//! and a bound on the whole call that holds when the engine stops answering. With the network
//! on, the command's own allow-list proxy (`aibuddy_exec::ContainerProxy`) listens on a socket
//! of the bound folder and the command runs under the bridge program; its report is the call's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aibuddy_sandbox::aibuddy_exec::netproxy::NetReport;
use aibuddy_sandbox::aibuddy_exec::{
    Confinement, ContainerProxy, ExecOutcome, ExecRequest, ExecSink, OutputCapture, Stream,
    Termination,
};
use aibuddy_sandbox::{SandboxError, Stage};
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::engine::{engine_error, exit_code};
use crate::sandbox::ContainerSandbox;
use crate::wrapper::{CLOSE_FRAME, FRAME_DATA_MAX, command_argv, data_frame, kill_argv};

/// How long a stop waits for the kill exec before returning anyway.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// An id for one command's marker: this process, the time, a counter (letters and digits only,
/// fixed width: the wrapper's sweep matches the marker as a substring, so no id may be a prefix
/// of another).
fn exec_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:08x}x{:032x}x{:016x}",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn cancelled_error() -> SandboxError {
    SandboxError::Cancelled { op: "execute" }
}

/// Run `req` in the sandbox's container. The whole call is bounded by the sandbox timeout, the
/// kill grace and twice the engine timeout (none for an `untimed` request, which ends on cancel).
pub(crate) async fn run(
    sb: &ContainerSandbox,
    req: ExecRequest,
    cancel: CancellationToken,
    sink: Arc<dyn ExecSink>,
) -> Result<ExecOutcome, SandboxError> {
    if req.command.trim().is_empty() {
        return Err(SandboxError::Exec {
            stage: Stage::Parameters,
            message: "invalid exec request: empty command".into(),
        });
    }
    if cancel.is_cancelled() {
        return Err(cancelled_error());
    }
    let id = exec_id();
    let engine_timeout = sb.inner.opts.engine_timeout;
    let bound = (!req.untimed).then(|| {
        req.timeout
            .saturating_add(req.kill_grace)
            .saturating_add(engine_timeout.saturating_mul(2))
    });
    let work = run_inner(sb, &id, &req, &cancel, sink);
    match bound {
        None => work.await,
        Some(bound) => match tokio::time::timeout(bound, work).await {
            Ok(r) => r,
            Err(_) => {
                // The engine stopped answering: try to end the command (in the background, it
                // may not answer that either) and give the call back now.
                spawn_kill(sb, req.read_only, &id, "KILL");
                Err(engine_error(
                    &sb.inner.opts.endpoint,
                    format!(
                        "did not finish the command within {} ms (timeout {} ms + kill grace + engine time): the engine stopped answering; the command was asked to stop",
                        bound.as_millis(),
                        req.timeout.as_millis()
                    ),
                ))
            }
        },
    }
}

/// `fut`, or `Cancelled` when the token fires first.
async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, SandboxError> {
    tokio::select! {
        v = fut => Ok(v),
        _ = cancel.cancelled() => Err(cancelled_error()),
    }
}

async fn run_inner(
    sb: &ContainerSandbox,
    id: &str,
    req: &ExecRequest,
    cancel: &CancellationToken,
    sink: Arc<dyn ExecSink>,
) -> Result<ExecOutcome, SandboxError> {
    let started = Instant::now();
    let inner = &sb.inner;
    let endpoint = &inner.opts.endpoint;
    let docker = &inner.docker;
    let protected = aibuddy_sandbox::aibuddy_exec::protect::effective_list(
        &req.protected_paths,
        &req.unprotected_paths,
    );
    // A piped stdin: the write end of a pipe of ours goes to the sink at once (the container may
    // take seconds to be created; what is written meanwhile waits in the pipe), and what is
    // written to it reaches the command as frames once the exec is attached.
    let stdin = if req.stdin_piped {
        let (rx, tx) = stdin_pipe().map_err(|e| SandboxError::Exec {
            stage: Stage::Execution,
            message: format!("could not make the command's stdin pipe: {e}"),
        })?;
        sink.stdin(tx);
        Some(rx)
    } else {
        None
    };
    let created = unless_cancelled(cancel, sb.ensure(req.read_only, &protected)).await??;
    let container = created.id.clone();
    // This command's allow-list proxy (with the network on): the local path's policy, decider
    // and report, on a socket the container sees; the socket file goes when the call ends.
    let socket = sb.proxy_socket(created, id);
    let _socket_file = socket
        .as_ref()
        .ok()
        .map(|(host, _)| RemoveOnDrop(host.clone()));
    let net = ContainerProxy::start(
        req,
        socket
            .as_ref()
            .map(|(h, _)| h.as_path())
            .map_err(String::as_str),
        &*sink,
    )
    .map_err(|e| SandboxError::Exec {
        stage: Stage::Execution,
        message: format!("could not start the network proxy: {e}"),
    })?;
    let bridged = socket
        .as_ref()
        .ok()
        .filter(|_| net.serving())
        .map(|(_, inside)| inside.as_str());
    let config = CreateExecOptions {
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        cmd: Some(command_argv(id, &req.command, req.stdin_piped, bridged)),
        env: Some(crate::env::passed_env(std::env::vars_os(), &req.env)),
        working_dir: Some(inner.opts.workdir.clone()),
        ..Default::default()
    };
    let exec = unless_cancelled(cancel, docker.create_exec(&container, config))
        .await?
        .map_err(|e| engine_error(endpoint, format!("could not create the exec: {e}")))?;
    let mut capture = OutputCapture::for_request(req).map_err(|e| SandboxError::Exec {
        stage: Stage::Execution,
        message: format!("could not prepare the spool file: {e}"),
    })?;
    let start = StartExecOptions {
        detach: false,
        tty: false,
        output_capacity: Some(64 * 1024),
    };
    let attached = unless_cancelled(cancel, docker.start_exec(&exec.id, Some(start)))
        .await
        .inspect_err(|_| spawn_kill(sb, req.read_only, id, "KILL"))?
        .map_err(|e| engine_error(endpoint, format!("could not start the exec: {e}")))?;
    let StartExecResults::Attached {
        mut output,
        mut input,
    } = attached
    else {
        return Err(engine_error(endpoint, "the exec started detached"));
    };
    let mut pump = Box::pin(async {
        match stdin {
            Some(rx) => pump_stdin(rx, &mut input).await,
            // Never written, held open while we listen: its close is the wrapper's signal.
            None => std::future::pending().await,
        }
    });
    let mut pumping = true;
    let wants_output = sink.wants_output();
    let heartbeat_every = req.heartbeat_interval.max(Duration::from_millis(10));
    let mut heartbeat = tokio::time::interval_at(
        tokio::time::Instant::now() + heartbeat_every,
        heartbeat_every,
    );
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let timeout_at = if req.untimed {
        far
    } else {
        tokio::time::Instant::now() + req.timeout
    };
    let mut kill_at = far;
    let (mut timed_out, mut cancelled) = (false, false);
    let mut lost: Option<String> = None;
    loop {
        tokio::select! {
            item = output.next() => match item {
                Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message })) => {
                    capture.push(Stream::Stdout, &message);
                    if wants_output { sink.output(Stream::Stdout, &message); }
                }
                Some(Ok(LogOutput::StdErr { message })) => {
                    capture.push(Stream::Stderr, &message);
                    if wants_output { sink.output(Stream::Stderr, &message); }
                }
                Some(Ok(LogOutput::StdIn { .. })) => {}
                Some(Err(e)) => { lost = Some(e.to_string()); break; }
                None => break,
            },
            pumped = &mut pump, if pumping => {
                pumping = false;
                if let Err(e) = pumped {
                    tracing::debug!(exec = id, error = %e, "the command's stdin is not carried any more");
                }
            }
            _ = heartbeat.tick() => sink.heartbeat(),
            _ = tokio::time::sleep_until(timeout_at), if !timed_out => {
                timed_out = true;
                spawn_kill(sb, req.read_only, id, "TERM");
                kill_at = tokio::time::Instant::now() + req.kill_grace;
            }
            _ = tokio::time::sleep_until(kill_at), if kill_at < far => {
                kill_at = far;
                spawn_kill(sb, req.read_only, id, "KILL");
            }
            _ = cancel.cancelled(), if !cancelled => { cancelled = true; break; }
        }
    }
    // The HTTP request ends here: the engine closes the wrapper's stdin and its watcher kills.
    drop(output);
    drop(pump);
    drop(input);
    if cancelled || lost.is_some() {
        // Do not rely on the engine closing stdin: kill the command's processes ourselves.
        let killed = tokio::time::timeout(KILL_WAIT, kill(docker, &container, id, "KILL")).await;
        if let Some(e) = lost {
            return Err(engine_error(
                endpoint,
                format!("lost the connection while the command ran: {e}"),
            ));
        }
        if !matches!(killed, Ok(Ok(()))) {
            tracing::warn!(
                exec = id,
                "the stopped command's processes may not have been killed"
            );
        }
        return Ok(outcome(
            sb,
            &container,
            capture,
            net.finish(),
            Termination::Signaled { signal: 9 },
            started.elapsed(),
            timed_out,
            true,
        ));
    }
    let code = exit_code(docker, &exec.id).await.map_err(|e| {
        engine_error(
            endpoint,
            format!("lost the connection after the command's output ended: {e}"),
        )
    })?;
    let termination = match code {
        c if (timed_out || cancelled) && c > 128 && c < 128 + 65 => Termination::Signaled {
            signal: (c - 128) as i32,
        },
        c => Termination::Exited {
            code: i32::try_from(c).unwrap_or(i32::MAX),
        },
    };
    Ok(outcome(
        sb,
        &container,
        capture,
        net.finish(),
        termination,
        started.elapsed(),
        timed_out,
        false,
    ))
}

/// The pipe of a piped stdin: its read end (ours, async) and its write end (the sink's).
fn stdin_pipe() -> std::io::Result<(tokio::net::unix::pipe::Receiver, std::os::fd::OwnedFd)> {
    let (reader, writer) = std::io::pipe()?;
    let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?;
    Ok((rx, writer.into()))
}

/// Carries what is written to the piped stdin to the wrapper's forwarder as frames (`wrapper.rs`)
/// until its writer closes it, then sends the close frame: the command's end of file. The
/// exec's stdin itself stays open (its close means "kill the command").
async fn pump_stdin(
    mut rx: tokio::net::unix::pipe::Receiver,
    input: &mut std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; FRAME_DATA_MAX];
    loop {
        let n = match rx.read(&mut buf).await {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(error = %e, "reading the command's stdin pipe failed: closing it");
                0
            }
        };
        if n == 0 {
            input.write_all(CLOSE_FRAME).await?;
            return input.flush().await;
        }
        input.write_all(&data_frame(&buf[..n])).await?;
        input.flush().await?;
    }
}

/// Removes a proxy socket file when the call ends, however it ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[allow(clippy::too_many_arguments)]
fn outcome(
    sb: &ContainerSandbox,
    container: &str,
    capture: OutputCapture,
    network: NetReport,
    termination: Termination,
    duration: Duration,
    timed_out: bool,
    cancelled: bool,
) -> ExecOutcome {
    let c = capture.finish();
    ExecOutcome {
        termination,
        duration,
        timed_out,
        cancelled,
        killed_leftovers: false,
        head: c.head,
        tail: c.tail,
        omitted_middle_bytes: c.omitted_middle_bytes,
        stdout: c.stdout,
        stderr: c.stderr,
        spool: c.spool,
        confinement: Confinement::Container {
            engine: sb.inner.opts.endpoint.shown(),
            image: sb.inner.opts.image.clone(),
            container: container.chars().take(12).collect(),
            network_isolated: !network.mode.starts_with("proxy"),
            synced: sb.synced(),
        },
        env_dropped: Vec::new(),
        pgid: 0,
        network: Some(network),
        protected: Default::default(),
        sync: None,
    }
}

/// Run the kill exec for command `id` and wait for it to end.
pub(crate) async fn kill(
    docker: &Docker,
    container: &str,
    id: &str,
    signal: &str,
) -> Result<(), bollard::errors::Error> {
    let config = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(kill_argv(id, signal)),
        ..Default::default()
    };
    let exec = docker.create_exec(container, config).await?;
    if let StartExecResults::Attached { mut output, .. } = docker.start_exec(&exec.id, None).await?
    {
        while output.next().await.is_some() {}
    }
    Ok(())
}

/// [`kill`] in the background, bounded by [`KILL_WAIT`] (when the container exists).
fn spawn_kill(sb: &ContainerSandbox, read_only: bool, id: &str, signal: &'static str) {
    let Some(container) = sb.container_for(read_only) else {
        return;
    };
    let docker = sb.inner.docker.clone();
    let id = id.to_string();
    tokio::spawn(async move {
        match tokio::time::timeout(KILL_WAIT, kill(&docker, &container, &id, signal)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(exec = %id, error = %e, "kill exec failed"),
            Err(_) => tracing::warn!(exec = %id, "kill exec did not return"),
        }
    });
}
