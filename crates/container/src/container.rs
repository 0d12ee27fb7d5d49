//! Creating and starting the container of a sandbox: the mounts (the project, its protected
//! paths, the bridge program and the proxy sockets' folder), no network, our PID 1, the labels;
//! the bridge program checked once after the start.

use std::path::Path;

use aibuddy_sandbox::aibuddy_exec::MountGuard;
use aibuddy_sandbox::aibuddy_exec::protect::Placeholder;
use aibuddy_sandbox::{Sandbox, SandboxError};
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};

use crate::state::{Created, Inner};
use crate::wrapper::{BRIDGE_PROGRAM, KEEP_ALIVE, NET_DIR};

/// Where a host path under the project `root` is in the container (`None`: not under it).
fn in_container(root: &Path, workdir: &str, host: &Path) -> Option<String> {
    let rel = host.strip_prefix(root).ok()?;
    Some(if rel.as_os_str().is_empty() {
        workdir.to_string()
    } else {
        format!("{workdir}/{}", rel.to_string_lossy())
    })
}

pub(crate) async fn create_container(
    inner: &Inner,
    read_only: bool,
    protected: &[(String, Placeholder)],
) -> Result<Created, SandboxError> {
    // `project: "sync"`: nothing of this machine is bound (`sync_container.rs`).
    if inner.opts.project == crate::settings::ProjectMode::Sync {
        return crate::sync_container::create(inner, read_only).await;
    }
    let o = &inner.opts;
    let root_path = inner.files.root();
    let root = root_path.to_string_lossy().into_owned();
    // Mounts as structured values (no `src:dst:mode` string a `:` in a path could split).
    let bind = |source: String, target: String, read_only: bool| Mount {
        typ: Some(MountType::BIND),
        source: Some(source),
        target: Some(target),
        read_only: Some(read_only),
        ..Default::default()
    };
    let mut mounts = vec![bind(root.clone(), o.workdir.clone(), read_only)];
    // The protected paths, held as on the local namespace path (`aibuddy_exec::protect`, the one
    // owner of the list and of finding them, nested repositories included): every git directory
    // bound onto itself (it cannot be renamed away and replaced), every present protected path
    // and a placeholder for every absent one bound read-only over it, for the container's life.
    // A read-only project needs none of it.
    let guard = (!read_only).then(|| MountGuard::prepare(&[root_path.to_path_buf()], protected));
    if let Some(g) = &guard {
        let read_only_paths = g.read_only();
        let git_dirs = g.git_dirs().iter().map(|d| (d, false));
        for (dir, ro) in git_dirs.chain(read_only_paths.iter().map(|p| (p, true))) {
            // Outside the project (a worktree's git directory elsewhere): not in the container.
            if let Some(target) = in_container(root_path, &o.workdir, dir) {
                mounts.push(bind(dir.to_string_lossy().into_owned(), target, ro));
            }
        }
    }
    // Parents before what lies in them.
    mounts.sort_by_key(|m| m.target.as_deref().map_or(0, |t| t.matches('/').count()));
    // The bridge program and the proxy sockets' folder, both read-only (the network policy is
    // the proxy's, in this process; see `exec.rs`).
    if let (Some(program), Some(dir)) = (&o.bridge_program, &inner.net_dir) {
        mounts.push(bind(
            program.to_string_lossy().into_owned(),
            BRIDGE_PROGRAM.into(),
            true,
        ));
        mounts.push(bind(
            dir.path().to_string_lossy().into_owned(),
            NET_DIR.into(),
            true,
        ));
    }
    let body = ContainerCreateBody {
        image: Some(o.image.clone()),
        // Our PID 1 whatever the image's entrypoint (its CMD, if any, only becomes `$0`...).
        entrypoint: Some(vec!["/bin/sh".into(), "-c".into(), KEEP_ALIVE.into()]),
        working_dir: Some(o.workdir.clone()),
        labels: Some(
            [
                ("aibuddy.sandbox".to_string(), "1".to_string()),
                ("aibuddy.project".to_string(), root.clone()),
            ]
            .into(),
        ),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            mounts: Some(mounts),
            network_mode: Some("none".into()),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(read_only),
            tmpfs: read_only.then(|| [("/tmp".to_string(), "rw,size=64m".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    // The guard is released (placeholders removed) when creating or starting fails.
    let guard = std::sync::Mutex::new(guard);
    let id = crate::engine::create_started(&inner.docker, &o.endpoint, &o.image, body).await?;
    tracing::debug!(container = %id, image = %o.image, "container sandbox started");
    let bridge = match (&o.bridge_program, &inner.net_dir) {
        (Some(_), Some(_)) => check_bridge(inner, &id).await,
        (None, _) => Err("off: no bridge program to bind into the container (no network)".into()),
        (_, None) => {
            Err("off: the folder of the proxy sockets could not be made (no network)".into())
        }
    };
    if let Err(why) = &bridge {
        tracing::warn!(container = %id, image = %o.image, "{why}");
    }
    Ok(Created { id, bridge, guard })
}

/// Runs the bridge program once in the new container (`… --aibuddy-net-bridge <none> "exit 0"`:
/// it listens, runs the shell and exits with its status, connecting nowhere): a program the
/// image cannot run (another C library, a missing shared library) then means no network for
/// the commands, said in their report, instead of every networked command failing.
async fn check_bridge(inner: &Inner, container: &str) -> Result<(), String> {
    use bollard::exec::{CreateExecOptions, StartExecResults};
    use futures::StreamExt;
    let config = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(vec![
            BRIDGE_PROGRAM.to_string(),
            aibuddy_sandbox::aibuddy_exec::BRIDGE_MARKER.to_string(),
            format!("{NET_DIR}/check.sock"),
            "exit 0".to_string(),
        ]),
        ..Default::default()
    };
    let fail = |why: String| {
        format!("off: the bridge program cannot run in the container ({why}); no network")
    };
    let run = async {
        let exec = inner
            .docker
            .create_exec(container, config)
            .await
            .map_err(|e| e.to_string())?;
        let mut said = String::new();
        if let StartExecResults::Attached { mut output, .. } = inner
            .docker
            .start_exec(&exec.id, None)
            .await
            .map_err(|e| e.to_string())?
        {
            while let Some(item) = output.next().await {
                if let Ok(chunk) = item
                    && said.len() < 400
                {
                    said.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                }
            }
        }
        let code = crate::engine::exit_code(&inner.docker, &exec.id).await?;
        if code == 0 {
            Ok(())
        } else {
            Err(format!("exit {code}: {}", said.trim()))
        }
    };
    match tokio::time::timeout(inner.opts.engine_timeout, run).await {
        Ok(r) => r.map_err(|e| fail(one_line(&e))),
        Err(_) => Err(fail("the check did not finish in time".into())),
    }
}

/// One line of text from the container (its program's message), bounded.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}
