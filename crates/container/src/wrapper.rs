//! The small init every command runs under inside the container (POSIX `sh` and its builtins,
//! so any image with `/bin/sh` works; the container's PID 1 also runs `sleep`), and the kill the
//! adapter sends when it cannot reach it.
//!
//! The Engine API has no "kill this exec". So:
//! - the command runs as `/bin/sh -c COMMAND` with stdin from `/dev/null` and the marker
//!   `AIBUDDY_EXEC=<id>` in its environment; every process it starts inherits the marker, also
//!   those that leave its process group or session (`setsid`, daemons reparented to PID 1);
//! - a watcher of the wrapper reads the exec's stdin, which the adapter holds open for as long as
//!   it listens (through fd 3: `sh` gives an asynchronous list `/dev/null` as its stdin before any redirection): when the HTTP connection closes (the call was stopped, the app died, the
//!   connection was lost) the engine closes that stdin, and the watcher kills every process that
//!   carries the marker (`SIGKILL`, repeated until none is left so a forking loop cannot outrun
//!   it), then the wrapper;
//! - when the command ends, the wrapper kills what it left behind (`cmd &`) the same way and
//!   exits with the command's status: nothing runs on unobserved, as on the local path;
//! - the adapter also runs [`KILL_SCRIPT`] as its own exec on a stop or a timeout (`TERM`, then
//!   `KILL` after the grace), so a stop does not depend on the engine closing stdin.
//!
//! - with the network on, the command runs under the bridge program (`BRIDGE_PROGRAM`, our init
//!   program bound read-only into the container; `aibuddy_exec::bridge_main`), which connects
//!   the container's loopback to this command's allow-list proxy and sets the proxy variables;
//!   it carries the marker too.
//!
//! The marker is not a secret and the command could clear it on purpose; the container is the
//! boundary, this is about leaving nothing running after a call, not about containing it.

/// The environment variable that marks a command's processes.
pub const MARKER: &str = "AIBUDDY_EXEC";

/// `sweep SIGNAL`: send SIGNAL to every process whose environment holds `AIBUDDY_EXEC=$id`;
/// with KILL, again until none is found (at most 50 rounds). Shell builtins only (`read`,
/// `case`, `kill`, `[`): the image needs no `grep`. dash's `read` drops the NUL bytes between
/// the variables, so the marker is looked for as a substring; ids have a fixed width (see
/// `exec.rs`), so one id is never a prefix of another.
const SWEEP: &str = r#"marked() {
  while IFS= read -r l || [ -n "$l" ]; do
    case $l in *"AIBUDDY_EXEC=$id"*) return 0 ;; esac
  done
  return 1
}
sweep() {
  n=0
  while [ "$n" -lt 50 ]; do
    found=
    for d in /proc/[0-9]*; do
      if marked 2>/dev/null <"$d/environ"; then
        kill -s "$1" "${d#/proc/}" 2>/dev/null && found=1
      fi
    done
    [ -n "$found" ] && [ "$1" = KILL ] || return 0
    n=$((n + 1))
  done
}
"#;

/// Where the bridge program (the init program of `aibuddy-exec`) is bound in the container.
pub const BRIDGE_PROGRAM: &str = "/run/aibuddy/exec-init";
/// Where the folder of the commands' proxy sockets is bound (read-only) in the container.
pub const NET_DIR: &str = "/run/aibuddy/net";

/// The wrapper: `sh -c WRAPPER aibuddy-exec ID COMMAND [BRIDGE SOCKET]`.
pub fn wrapper_script() -> String {
    let marker = aibuddy_sandbox::aibuddy_exec::BRIDGE_MARKER;
    format!(
        r#"id=$1
{SWEEP}exec 3<&0
if [ -n "$3" ]; then
  AIBUDDY_EXEC=$id "$3" {marker} "$4" "$2" </dev/null 3<&- &
else
  AIBUDDY_EXEC=$id /bin/sh -c "$2" </dev/null 3<&- &
fi
c=$!
{{ while read -r _; do :; done; sweep KILL; kill -s KILL $$; }} <&3 3<&- &
w=$!
wait "$c"
s=$?
sweep KILL
kill -s KILL "$w" 2>/dev/null
exit "$s"
"#
    )
}

/// The kill exec: `sh -c KILL_SCRIPT aibuddy-kill ID SIGNAL`.
pub fn kill_script() -> String {
    format!("id=$1\n{SWEEP}sweep \"$2\"\n")
}

/// The argument vector of a command's exec; `proxy_socket`: the command's proxy socket in the
/// container, when it runs under the bridge program.
pub fn command_argv(id: &str, command: &str, proxy_socket: Option<&str>) -> Vec<String> {
    let mut argv = vec![
        "/bin/sh".into(),
        "-c".into(),
        wrapper_script(),
        "aibuddy-exec".into(),
        id.into(),
        command.into(),
    ];
    if let Some(socket) = proxy_socket {
        argv.push(BRIDGE_PROGRAM.into());
        argv.push(socket.into());
    }
    argv
}

/// The argument vector of the kill exec (`signal`: `TERM` or `KILL`).
pub fn kill_argv(id: &str, signal: &str) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        kill_script(),
        "aibuddy-kill".into(),
        id.into(),
        signal.into(),
    ]
}

/// The container's PID 1: waits forever and reaps what is reparented to it (dash's `wait`
/// collects any child), so a killed command leaves no zombie behind for long.
pub const KEEP_ALIVE: &str = r#"trap 'exit 0' TERM INT; while :; do sleep 1 & wait $!; done"#;

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn marked(id: &str) -> usize {
        let mut n = 0;
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(env) = std::fs::read(e.path().join("environ"))
                && env
                    .split(|b| *b == 0)
                    .any(|v| v == format!("{MARKER}={id}").as_bytes())
            {
                n += 1;
            }
        }
        n
    }

    /// The scripts run under this machine's `sh` as they would in the container, with no `PATH`
    /// (the wrapper needs no program besides `sh`): leftovers of a command are gone when it ends,
    /// and closing stdin ends the command.
    #[test]
    fn the_wrapper_leaves_nothing_and_stdin_eof_kills() {
        let id = format!("t{}", std::process::id());
        let mut child = Command::new("/bin/sh")
            .args(
                &command_argv(
                    &id,
                    "(/bin/sleep 300 &) ; /bin/sleep 300 & echo started; /bin/sleep 0.5; exit 3",
                    None,
                )[1..],
            )
            .env("PATH", "/nonexistent")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take(); // held open: the listener is still there
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
        assert_eq!(marked(&id), 0);

        let id2 = format!("u{}", std::process::id());
        let mut child = Command::new("/bin/sh")
            .args(&command_argv(&id2, "/bin/sleep 300 & /bin/sleep 300", None)[1..])
            .env("PATH", "/nonexistent")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        // the command's shell and its two sleeps
        while marked(&id2) < 3 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(marked(&id2), 3);
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(marked(&id2), 0);
    }
}
