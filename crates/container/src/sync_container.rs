//! The container of a sync sandbox, and the short engine execs of the sync.

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};

use futures::StreamExt;

use aibuddy_sandbox::{Sandbox, SandboxError};

use crate::state::{Created, Inner};
use crate::wrapper::KEEP_ALIVE;

/// Why a sync container's commands have no network: nothing of this machine is bound into it,
/// so neither the bridge program nor the proxy's socket reaches it.
pub(crate) const NO_NETWORK: &str = "off: `project: \"sync\"` binds nothing of this machine into the container, so the allow-list proxy cannot be bridged in (no network)";

/// Creates and starts the container of a sync sandbox: nothing bound, no network, the project
/// copied in by the first push. A read-only command's container is writable too (the copy goes
/// in by the engine's archive upload), but nothing is brought back from it.
pub(crate) async fn create(inner: &Inner, read_only: bool) -> Result<Created, SandboxError> {
    let o = &inner.opts;
    let root = inner.files.root().to_string_lossy().into_owned();
    let body = ContainerCreateBody {
        image: Some(o.image.clone()),
        entrypoint: Some(vec!["/bin/sh".into(), "-c".into(), KEEP_ALIVE.into()]),
        working_dir: Some(o.workdir.clone()),
        labels: Some(
            [
                ("aibuddy.sandbox".to_string(), "1".to_string()),
                ("aibuddy.project".to_string(), root),
                ("aibuddy.sync".to_string(), "1".to_string()),
                (
                    "aibuddy.read_only".to_string(),
                    if read_only { "1" } else { "0" }.to_string(),
                ),
            ]
            .into(),
        ),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            security_opt: Some(vec!["no-new-privileges".into()]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = crate::engine::create_started(&inner.docker, &o.endpoint, &o.image, body).await?;
    tracing::debug!(container = %id, image = %o.image, "sync container started");
    Ok(Created {
        id,
        bridge: Err(NO_NETWORK.into()),
        guard: std::sync::Mutex::new(None),
    })
}

/// Runs `argv` in `container` to its end: `Ok` when it exits 0, else what it said (bounded).
pub(crate) async fn run_short(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
) -> Result<(), String> {
    run(docker, container, argv, None).await.map(drop)
}

/// Runs `argv` in `container` to its end and returns its standard output, at most `max` bytes
/// (more is an error); a non-zero exit is an error with what it said on standard error.
pub(crate) async fn run_capture(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
    max: usize,
) -> Result<Vec<u8>, String> {
    run(docker, container, argv, Some(max)).await
}

/// The one exec runner of the sync: standard output kept up to `capture` bytes, or (`None`) only
/// said on failure like standard error; what was said is bounded and shown without controls.
async fn run(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
    capture: Option<usize>,
) -> Result<Vec<u8>, String> {
    use bollard::container::LogOutput;
    let config = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(argv),
        ..Default::default()
    };
    let exec = docker
        .create_exec(container, config)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut said = String::new();
    if let StartExecResults::Attached { mut output, .. } = docker
        .start_exec(&exec.id, None)
        .await
        .map_err(|e| e.to_string())?
    {
        while let Some(item) = output.next().await {
            match (item.map_err(|e| e.to_string())?, capture) {
                (LogOutput::StdOut { message }, Some(max)) => {
                    if out.len() + message.len() > max {
                        return Err(format!("more than {max} bytes of output"));
                    }
                    out.extend_from_slice(&message);
                }
                (LogOutput::StdIn { .. } | LogOutput::Console { .. }, Some(_)) => {}
                (chunk, _) if said.len() < 400 => {
                    said.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                }
                _ => {}
            }
        }
    }
    match crate::engine::exit_code(docker, &exec.id).await? {
        0 => Ok(out),
        code => Err(format!(
            "exit {code}: {}",
            said.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(300)
                .collect::<String>()
                .trim()
        )),
    }
}
