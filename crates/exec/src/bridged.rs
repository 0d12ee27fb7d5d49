//! The bridge program of a command that runs in a container (`aibuddy-container`), reached as
//! `<init program> --aibuddy-net-bridge SOCKET COMMAND` inside the container.
//!
//! The container has no network of its own (`NetworkMode: none`: only its loopback). The app's
//! allow-list proxy for this one command listens on a Unix socket in a folder bound read-only
//! into the container. This program listens on `127.0.0.1:0` of the container's loopback (a port
//! of its own, so concurrent commands do not collide), runs `/bin/sh -c COMMAND` with the proxy
//! variables of `netwire` naming that port (whatever the image or the exec had under those names
//! is replaced), hands every accepted connection to the proxy exactly as the init's bridge does
//! (`netbridge`: `SCM_RIGHTS`, no relay), and exits with the shell's status (128 + signal when it
//! was killed). Policy, prompts and the per-call record are the proxy's, in the app: nothing is
//! decided here. The container wrapper marks this process like the command's, so it is killed
//! with them.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use crate::netbridge::{BridgeSpec, listen};
use crate::netwire::{PROXY_VARS, proxy_env};

/// First argument that makes a binary run as the bridge program.
pub const BRIDGE_MARKER: &str = "--aibuddy-net-bridge";

/// Runs the bridge program (see the module documentation); the exit code.
pub fn bridge_main(socket: OsString, command: OsString) -> i32 {
    let spec = BridgeSpec {
        port: 0,
        socket: PathBuf::from(socket),
    };
    // `listen` said why on stderr: the command does not run without its proxy.
    let Some(bridge) = listen(&spec) else {
        return 125;
    };
    let Some(port) = bridge.port() else {
        return 125;
    };
    let mut shell = std::process::Command::new("/bin/sh");
    shell.arg("-c").arg(command);
    for v in PROXY_VARS {
        shell.env_remove(v);
    }
    shell.envs(proxy_env(port));
    // The listener is close-on-exec: the shell does not hold it.
    let mut child = match shell.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("aibuddy: could not start /bin/sh: {e}");
            return 127;
        }
    };
    bridge.start();
    match child.wait() {
        Ok(s) => s
            .code()
            .or_else(|| s.signal().map(|sig| 128 + sig))
            .unwrap_or(125),
        Err(_) => 125,
    }
}
