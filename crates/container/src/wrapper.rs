//! The small init every command runs under inside the container (POSIX `sh` and its builtins,
//! so any image with `/bin/sh` works; the container's PID 1 also runs `sleep`), and the kill the
//! adapter sends when it cannot reach it.
//!
//! The Engine API has no "kill this exec". So:
//! - the command runs as `/bin/sh -c COMMAND` with stdin from `/dev/null` (or, for a background
//!   process, a pipe fed by the forwarder below) and the marker
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
//! - a command with a piped stdin (`ExecRequest::stdin_piped`, a background process's
//!   `process_input`) gets the exec's stdin as line frames ([`data_frame`]: `d` and the bytes
//!   with every byte but a few safe ones written as a `printf` octal escape `\ooo`, so any byte,
//!   NUL included, passes through `sh` variables; [`CLOSE_FRAME`]: `c`, the command's end of
//!   file). The forwarder (the first part of a pipeline whose second part runs the command)
//!   writes each data frame with the builtin `printf` into the pipe that is the command's stdin,
//!   closes that pipe on `c`, and still watches the exec's stdin: its end (the connection closed)
//!   kills the marked processes and the wrapper as above. The forwarder's first line into the
//!   pipe is its own pid (read from `/proc/self/stat` by a builtin), which the second part
//!   reads before the command starts, so it can kill the forwarder when the command ends. While
//!   a write to a command that does not read its stdin blocks, the forwarder notices a closed
//!   connection only once the command reads or ends (a stop still kills through the kill exec);
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

/// The wrapper: `sh -c WRAPPER aibuddy-exec ID COMMAND STDIN [BRIDGE SOCKET]`, where `STDIN` is
/// `null` (the command's stdin is `/dev/null`) or `piped` (frames of the exec's stdin, see the
/// module documentation).
pub fn wrapper_script() -> String {
    let marker = aibuddy_sandbox::aibuddy_exec::BRIDGE_MARKER;
    format!(
        r#"id=$1
{SWEEP}exec 3<&0
if [ "$3" = piped ]; then
  exec 4>&2 2>/dev/null
  {{
    read -r me _ </proc/self/stat
    echo "$me"
    trap '' PIPE
    open=1
    while IFS= read -r l; do
      case $l in
        d*) [ -z "$open" ] || printf "${{l#d}}" 2>/dev/null ;;
        c) exec >/dev/null; open= ;;
      esac
    done
    sweep KILL
    kill -s KILL $$
  }} <&3 3<&- 2>&4 4>&- | {{
    exec 3<&- 5<&0
    read -r f
    if [ -n "$4" ]; then
      AIBUDDY_EXEC=$id "$4" {marker} "$5" "$2" <&5 5<&- &
    else
      AIBUDDY_EXEC=$id /bin/sh -c "$2" <&5 5<&- &
    fi
    c=$!
    exec 5<&- </dev/null
    wait "$c"
    s=$?
    sweep KILL
    kill -s KILL "$f" 2>/dev/null
    exit "$s"
  }} 2>&4 4>&- &
  wait "$!"
  exit
fi
if [ -n "$4" ]; then
  AIBUDDY_EXEC=$id "$4" {marker} "$5" "$2" </dev/null 3<&- &
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

/// The first byte of a frame of data for the command's stdin (see [`data_frame`]).
pub const DATA_FRAME: u8 = b'd';
/// The frame that closes the command's stdin (its end of file); the exec's stdin stays open.
pub const CLOSE_FRAME: &[u8] = b"c\n";
/// Bytes of data in one frame at most (a frame line is at most four times as long, plus two).
pub const FRAME_DATA_MAX: usize = 4096;

/// One frame carrying `data` to the command's stdin: `d`, the bytes as a `printf` format that
/// prints exactly them (letters, digits and ` .,_/:=+` as they are, every other byte `\ooo`, so
/// no `%`, `\`, newline or NUL is literal), and a newline. `data` longer than
/// [`FRAME_DATA_MAX`] is allowed, it only makes a longer line. Pure.
pub fn data_frame(data: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(2 + data.len() * 4);
    frame.push(DATA_FRAME);
    for &b in data {
        if b.is_ascii_alphanumeric() || b" .,_/:=+".contains(&b) {
            frame.push(b);
        } else {
            frame.push(b'\\');
            frame.extend_from_slice(&[b'0' + (b >> 6), b'0' + ((b >> 3) & 7), b'0' + (b & 7)]);
        }
    }
    frame.push(b'\n');
    frame
}

/// The kill exec: `sh -c KILL_SCRIPT aibuddy-kill ID SIGNAL`.
pub fn kill_script() -> String {
    format!("id=$1\n{SWEEP}sweep \"$2\"\n")
}

/// The argument vector of a command's exec; `stdin_piped`: its stdin is fed by frames of the
/// exec's stdin; `proxy_socket`: the command's proxy socket in the container, when it runs under
/// the bridge program.
pub fn command_argv(
    id: &str,
    command: &str,
    stdin_piped: bool,
    proxy_socket: Option<&str>,
) -> Vec<String> {
    let mut argv = vec![
        "/bin/sh".into(),
        "-c".into(),
        wrapper_script(),
        "aibuddy-exec".into(),
        id.into(),
        command.into(),
        if stdin_piped { "piped" } else { "null" }.into(),
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
                    false,
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
            .args(&command_argv(&id2, "/bin/sleep 300 & /bin/sleep 300", false, None)[1..])
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

    /// Every byte value, in two frames, reaches the command's stdin exactly; the close frame is
    /// its end of file while the exec's stdin stays open; nothing is left when it ends; with the
    /// exec's stdin closed instead, the command's tree is killed (no program but `sh` needed).
    #[test]
    fn piped_frames_carry_any_bytes_and_close_is_the_commands_end_of_file() {
        use std::io::{Read, Write};
        let id = format!("p{}", std::process::id());
        let mut child = Command::new("/bin/sh")
            .args(&command_argv(&id, "/bin/cat; echo end", true, None)[1..])
            .env("PATH", "/nonexistent")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let all: Vec<u8> = (0..=255u8).chain(*b"%s\\n-x\n").collect();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&data_frame(&all[..100])).unwrap();
        stdin.write_all(&data_frame(&all[100..])).unwrap();
        stdin.write_all(CLOSE_FRAME).unwrap();
        stdin.flush().unwrap();
        let mut out = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        let status = child.wait().unwrap();
        drop(stdin); // held open until the command ended by itself
        assert_eq!(status.code(), Some(0));
        assert_eq!(out, [all.as_slice(), b"end\n"].concat());
        assert_eq!(marked(&id), 0);

        let id2 = format!("q{}", std::process::id());
        let mut child = Command::new("/bin/sh")
            .args(&command_argv(&id2, "/bin/sleep 300 & /bin/cat", true, None)[1..])
            .env("PATH", "/nonexistent")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        // the command's shell, its sleep and cat
        while marked(&id2) < 3 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(marked(&id2), 3);
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(marked(&id2), 0);
    }

    #[test]
    fn a_data_frame_is_one_line_of_safe_characters() {
        let f = data_frame(b"a b\n%\0\xff");
        assert_eq!(f, b"da b\\012\\045\\000\\377\n");
    }
}
