//! Where the Docker Engine API is (pure resolution) and the client connected to it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aibuddy_sandbox::SandboxError;
use bollard::{API_DEFAULT_VERSION, Docker};

pub use crate::settings::{Endpoint, USUAL_SOCKETS};

/// A client of `endpoint`; `timeout` bounds each request until its response starts (an
/// attached exec stream is not cut by it).
pub fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Docker, String> {
    let secs = timeout.as_secs().max(1);
    let r = match endpoint {
        Endpoint::Unix(p) => {
            Docker::connect_with_unix(&p.to_string_lossy(), secs, API_DEFAULT_VERSION)
        }
        Endpoint::Tcp(a) => Docker::connect_with_http(a, secs, API_DEFAULT_VERSION),
    };
    r.map_err(|e| {
        format!(
            "cannot use the container engine at {}: {e}",
            endpoint.shown()
        )
    })
}

/// An Execution-stage error about the engine, naming it.
pub(crate) fn engine_error(endpoint: &Endpoint, what: impl std::fmt::Display) -> SandboxError {
    SandboxError::Exec {
        stage: aibuddy_sandbox::Stage::Execution,
        message: format!("container engine {}: {what}", endpoint.shown()),
    }
}

/// How long after the output ends the exec's exit code may take to be recorded.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// The exec's exit code once the engine has it (bounded by [`EXIT_WAIT`]).
pub(crate) async fn exit_code(docker: &Docker, exec: &str) -> Result<i64, String> {
    let until = Instant::now() + EXIT_WAIT;
    loop {
        let info = docker.inspect_exec(exec).await.map_err(|e| e.to_string())?;
        if info.running != Some(true)
            && let Some(code) = info.exit_code
        {
            return Ok(code);
        }
        if Instant::now() >= until {
            return Err("the engine reports no exit code for the finished command".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The endpoint to use: the configured one, else `DOCKER_HOST`, else the first usual socket that
/// exists (`exists` is asked; `runtime_dir` is `XDG_RUNTIME_DIR`).
pub fn resolve(
    configured: Option<&str>,
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> Result<Endpoint, String> {
    if let Some(c) = configured {
        return Endpoint::parse(c);
    }
    if let Some(h) = docker_host.filter(|h| !h.trim().is_empty()) {
        return Endpoint::parse(h).map_err(|e| format!("DOCKER_HOST: {e}"));
    }
    let mut tried: Vec<PathBuf> = USUAL_SOCKETS.iter().map(PathBuf::from).collect();
    if let Some(dir) = runtime_dir {
        tried.push(dir.join("podman/podman.sock"));
        tried.push(dir.join("docker.sock"));
    }
    tried
        .iter()
        .find(|p| exists(p))
        .map(|p| Endpoint::Unix(p.clone()))
        .ok_or_else(|| {
            let list: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            format!(
                "no container engine found: `sandbox.container.engine` and DOCKER_HOST are unset and none of {} exists",
                list.join(", ")
            )
        })
}

/// Creates a container from `body` and starts it; its id. One that was created but would not start
/// is removed in the background (never left behind). Errors name the engine (Execution).
pub(crate) async fn create_started(
    docker: &Docker,
    endpoint: &Endpoint,
    image: &str,
    body: bollard::models::ContainerCreateBody,
) -> Result<String, SandboxError> {
    let created = docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .map_err(|e| {
            engine_error(
                endpoint,
                format!("could not create the container from image `{image}`: {e}"),
            )
        })?;
    let id = created.id;
    if let Err(e) = docker.start_container(&id, None).await {
        remove_quietly(docker.clone(), id.clone());
        return Err(engine_error(
            endpoint,
            format!("could not start the container: {e}"),
        ));
    }
    Ok(id)
}
/// Remove a container in the background (best effort, force).
pub(crate) fn remove_quietly(docker: Docker, id: String) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let opts = bollard::query_parameters::RemoveContainerOptions {
                force: true,
                ..Default::default()
            };
            if let Err(e) = docker.remove_container(&id, Some(opts)).await {
                tracing::debug!(container = %id, error = %e, "container not removed");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_order() {
        let none = |_: &Path| false;
        assert_eq!(
            resolve(Some("unix:///a.sock"), Some("tcp://h:1"), None, none),
            Ok(Endpoint::Unix("/a.sock".into()))
        );
        assert_eq!(
            resolve(None, Some("tcp://h:1"), None, none),
            Ok(Endpoint::Tcp("h:1".into()))
        );
        let podman = |p: &Path| p == Path::new("/run/user/7/podman/podman.sock");
        assert_eq!(
            resolve(None, None, Some(Path::new("/run/user/7")), podman),
            Ok(Endpoint::Unix("/run/user/7/podman/podman.sock".into()))
        );
        let err = resolve(None, Some(" "), None, none).unwrap_err();
        assert!(err.contains("/var/run/docker.sock"), "{err}");
    }
}
