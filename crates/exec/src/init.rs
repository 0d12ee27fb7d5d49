//! The init program inside the namespaces (PID 1 of the command's PID namespace).
//!
//! Landlock forbids `mount(2)` once applied, so it cannot be applied before bubblewrap sets up the
//! mounts: a tiny init runs inside instead. It is multi-call: [`init_main`] is reached either
//! through the `aibuddy-exec-init` binary of this crate or through any binary that calls
//! [`dispatch_init`] first thing in `main` (the CLI and the desktop app), which also registers that
//! binary as the init program.
//!
//! The init:
//! 1. applies the Landlock ruleset of the Landlock-only path (read everything, write the project,
//!    `TMPDIR` and the writable roots, no TCP when the network is off) plus the ABI 6 scopes
//!    (signals and abstract Unix sockets stay inside the sandbox), best-effort on older kernels;
//! 2. closes every descriptor above stderr except its control and report pipes (both close on exec);
//! 3. forks `/bin/sh -c <command>` in its own session and group, with `RLIMIT_NPROC` set to the
//!    request's `max_processes` (the user namespace is the command's own, so its processes are
//!    counted apart from the person's; the init counts too);
//! 4. reads the control pipe: `T` sends SIGTERM to the command's group, `K` SIGKILLs everything in
//!    the namespace, end of file (the app is gone, even by `kill -9`) SIGKILLs everything too;
//! 5. when the shell ends, SIGKILLs and reaps whatever is left in the namespace, reports the shell's
//!    exact wait status and whether anything was actually killed, and exits. The kernel tears the
//!    PID namespace down with it, so nothing survives.
//!
//! Report pipe messages: `L` + 1 byte (Landlock ABI applied, 0 = none), then `X` + 4 bytes wait
//! status (native endian) + 1 byte leftovers killed.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// First argument that makes a binary run as the init program.
pub const INIT_MARKER: &str = "--aibuddy-exec-init";
/// The init program's file name when shipped as its own binary.
pub const INIT_BINARY: &str = "aibuddy-exec-init";

static REGISTERED: OnceLock<PathBuf> = OnceLock::new();

/// What the init is asked to do (one JSON argument after the marker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InitSpec {
    pub(crate) command: String,
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) network_allowed: bool,
    /// Read end of the control pipe (kept open across bubblewrap's exec).
    pub(crate) control_fd: RawFd,
    /// Write end of the report pipe.
    pub(crate) report_fd: RawFd,
    /// `RLIMIT_NPROC` of the shell (counted in this user namespace); `None` = inherited.
    #[serde(default)]
    pub(crate) max_processes: Option<u64>,
    /// The app runs as root, for which the kernel never enforces `RLIMIT_NPROC`: the init counts
    /// the namespace's processes itself and kills the command when they exceed `max_processes`.
    #[serde(default)]
    pub(crate) count_processes: bool,
    /// The network bridge to serve inside the namespace (`netbridge`); `None`: no network.
    #[serde(default)]
    pub(crate) net_bridge: Option<crate::netbridge::BridgeSpec>,
}

/// Call first thing in a binary's `main`: when the process was started as the init program it
/// runs it and never returns; otherwise it registers the current executable as the init program
/// (so commands get the inner Landlock layer) and returns.
pub fn dispatch_init() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(INIT_MARKER)) {
        let spec = args.next().unwrap_or_default();
        std::process::exit(init_main(&spec.to_string_lossy()));
    }
    if let Some(code) = dispatch_bridge(std::env::args_os().skip(1)) {
        std::process::exit(code);
    }
    if let Ok(exe) = std::env::current_exe() {
        let _ = REGISTERED.set(exe);
    }
}

/// Runs the bridge program of a container command when `args` (after the program name) start
/// with [`crate::BRIDGE_MARKER`]; `None` otherwise.
pub(crate) fn dispatch_bridge(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<i32> {
    if args.next().as_deref() != Some(std::ffi::OsStr::new(crate::BRIDGE_MARKER)) {
        return None;
    }
    let socket = args.next().unwrap_or_default();
    let command = args.next().unwrap_or_default();
    Some(crate::bridge_main(socket, command))
}

/// The init program (also the bridge program of container commands): `explicit` when given,
/// else as [`locate`] finds it.
pub fn init_program(explicit: Option<&Path>) -> Result<PathBuf, String> {
    locate(explicit)
}

/// The init program: an explicit path, else `aibuddy-exec-init` next to the current executable or
/// in its parent directory (test binaries live in `target/*/deps`; a dedicated small binary starts
/// faster than a large app), else the binary registered by [`dispatch_init`].
pub(crate) fn locate(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("init program {} not found", p.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("current executable unknown: {e}"));
    let beside = exe.as_ref().ok().and_then(|exe| {
        let dir = exe.parent();
        [dir, dir.and_then(Path::parent)]
            .into_iter()
            .flatten()
            .map(|d| d.join(INIT_BINARY))
            .find(|p| p.is_file())
    });
    if let Some(p) = beside.or_else(|| REGISTERED.get().cloned()) {
        return Ok(p);
    }
    match exe {
        Ok(exe) => Err(format!("{INIT_BINARY} not found next to {}", exe.display())),
        Err(e) => Err(e),
    }
}

/// Runs the init (see the module documentation). Returns the exit code when it cannot start the
/// command; otherwise exits with the shell's status.
pub fn init_main(spec_json: &str) -> i32 {
    let spec: InitSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("aibuddy-exec-init: bad spec: {e}");
            return 125;
        }
    };
    let fds = Fds {
        control: spec.control_fd,
        report: spec.report_fd,
    };
    if fds.control < 3 || fds.report < 3 || fds.control == fds.report {
        return 125;
    }
    let abi = apply_landlock(&spec);
    report(fds.report, &[b'L', abi]);
    // SAFETY: plain system calls on descriptors of this single-threaded process.
    unsafe {
        // Not dumpable: the command (same user in the namespace, no capabilities) can neither
        // ptrace the init nor open its /proc entries to forge its reports or hold its pipes.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        close_others(fds);
        libc::fcntl(fds.control, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(fds.report, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // Bound before the fork (connections queue), served after it (see `netbridge`).
    let bridge = spec.net_bridge.as_ref().and_then(crate::netbridge::listen);
    let Ok(cmd) = CString::new(spec.command) else {
        return 125;
    };
    let nproc = spec.max_processes.map(clamped_nproc);
    let watch = spec
        .max_processes
        .filter(|_| spec.count_processes)
        .map(|cap| Watch {
            cap,
            last: None,
            tripped: false,
        });
    // SAFETY: single-threaded; the child only calls async-signal-safe functions before execv.
    unsafe { supervise(&cmd, fds, nproc, watch, bridge) }
}

#[cfg(target_os = "linux")]
fn apply_landlock(spec: &InitSpec) -> u8 {
    let mut writable = vec![PathBuf::from("/dev/shm")];
    writable.extend(spec.writable.iter().cloned());
    // The network namespace holds only the command's own loopback: TCP is not restricted here.
    match crate::confine::build(&writable, spec.network_allowed, None) {
        Ok((created, crate::Confinement::Landlock { abi, .. })) => match created.restrict_self() {
            Ok(_) => abi,
            Err(e) => {
                tracing::warn!("Landlock could not be applied inside the namespaces: {e}");
                0
            }
        },
        Ok(_) => 0,
        Err(reason) => {
            tracing::warn!("no Landlock inside the namespaces: {reason}");
            0
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn apply_landlock(_spec: &InitSpec) -> u8 {
    0
}

#[derive(Debug, Clone, Copy)]
struct Fds {
    control: RawFd,
    report: RawFd,
}

fn report(fd: RawFd, bytes: &[u8]) {
    // SAFETY: writing a buffer we own to the report descriptor.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// Closes every descriptor above stderr except the control and report pipes.
unsafe fn close_others(fds: Fds) {
    let (a, b) = (fds.control.min(fds.report), fds.control.max(fds.report));
    let ranges = [(3, a - 1), (a + 1, b - 1), (b + 1, i32::MAX)];
    for (lo, hi) in ranges {
        if lo <= hi {
            // SAFETY: closing descriptor ranges of our own process.
            unsafe { libc::syscall(libc::SYS_close_range, lo as u32, hi as u32, 0u32) };
        }
    }
}

/// How often the init looks for ended children when no wake-up came (a safety net: see
/// [`supervise`]).
const REAP_TICK_MS: libc::c_int = 100;

/// Runs the shell and waits for it, the control pipe and orphans.
///
/// The wake-ups do not rely on SIGCHLD reaching this thread: a binary that links libraries with
/// constructors may already run other threads when it becomes the init (the desktop app: WebKit's
/// allocator starts a scavenger thread before `main`), and a process-directed SIGCHLD is then
/// delivered to such a thread (SIGCHLD is blocked only here) and discarded, so a signalfd never
/// sees it. The shell's end is therefore watched through a pidfd, with a periodic reap as the last
/// resort (kernels without `pidfd_open`), and SIGCHLD is reset to its default disposition first
/// (an ignored SIGCHLD inherited from the app would auto-reap the shell and lose its status).
unsafe fn supervise(
    cmd: &CString,
    fds: Fds,
    nproc: Option<libc::rlimit>,
    mut watch: Option<Watch>,
    bridge: Option<crate::netbridge::Bridge>,
) -> i32 {
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let sigfd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        let sh = c"/bin/sh";
        let dash_c = c"-c";
        let argv = [sh.as_ptr(), dash_c.as_ptr(), cmd.as_ptr(), std::ptr::null()];
        // The command's seccomp program is built here: the child may not allocate.
        crate::syscall_filter::prepare();
        let child = libc::fork();
        if child == -1 {
            return 126;
        }
        if child == 0 {
            // The command starts with default signal handling: no mask, and SIGPIPE (which the
            // Rust runtime of this init ignores) back to its default, so `yes | head` ends quietly.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::setsid();
            if let Some(limit) = nproc
                && libc::setrlimit(libc::RLIMIT_NPROC, &limit) == -1
            {
                // The cap could not be applied: the command does not run uncapped.
                libc::_exit(126);
            }
            // The syscall filter (no key store, io_uring, bpf...; see `syscall_filter`): installed,
            // or the command does not run.
            if crate::syscall_filter::install().is_err() {
                libc::_exit(126);
            }
            libc::execv(sh.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
        if let Some(bridge) = bridge {
            bridge.start();
        }
        let pidfd = libc::syscall(libc::SYS_pidfd_open, child, 0) as libc::c_int;
        let mut main_status: Option<libc::c_int> = None;
        let mut control_open = true;
        while main_status.is_none() {
            let mut polled = [
                libc::pollfd {
                    fd: if control_open { fds.control } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: sigfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // The pidfd wakes us when the shell ends; the tick reaps orphans whose SIGCHLD went
            // to another thread, and covers a kernel without pidfds.
            libc::poll(polled.as_mut_ptr(), 3, REAP_TICK_MS);
            if control_open && polled[0].revents != 0 {
                let mut b = [0u8; 16];
                let n = libc::read(fds.control, b.as_mut_ptr().cast(), b.len());
                if n <= 0 {
                    // The app is gone (or closed the pipe): nothing may run on unobserved.
                    control_open = false;
                    libc::kill(-1, libc::SIGKILL);
                } else {
                    for byte in &b[..n as usize] {
                        match byte {
                            b'T' => {
                                libc::kill(-child, libc::SIGTERM);
                            }
                            b'K' => {
                                libc::kill(-1, libc::SIGKILL);
                            }
                            _ => {}
                        }
                    }
                }
            }
            if sigfd >= 0 && polled[1].revents != 0 {
                let mut info = [0u8; 128];
                while libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
            }
            reap(child, &mut main_status);
            if let Some(w) = watch.as_mut() {
                w.check();
            }
        }
        if pidfd >= 0 {
            libc::close(pidfd);
        }
        // The shell ended: reap what already exited (zombies are not leftovers), then kill the rest.
        reap(child, &mut main_status);
        let leftovers = libc::kill(-1, libc::SIGKILL) == 0;
        let mut waited_ms = 0;
        loop {
            let mut st = 0;
            let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
            if r > 0 {
                continue;
            }
            if r == -1 || waited_ms >= 2_000 {
                break;
            }
            libc::usleep(5_000);
            waited_ms += 5;
        }
        let status = main_status.unwrap_or(0);
        let mut msg = [0u8; 6];
        msg[0] = b'X';
        msg[1..5].copy_from_slice(&status.to_ne_bytes());
        msg[5] = u8::from(leftovers);
        report(fds.report, &msg);
        if libc::WIFSIGNALED(status) {
            128 + libc::WTERMSIG(status)
        } else {
            libc::WEXITSTATUS(status)
        }
    }
}

/// The process cap kept by counting, for an app running as root (the kernel exempts uid 0 from
/// `RLIMIT_NPROC`, even inside a user namespace without capabilities).
struct Watch {
    cap: u64,
    last: Option<std::time::Instant>,
    tripped: bool,
}

/// How often at most the init counts the namespace's processes.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

impl Watch {
    /// Counts the processes of the namespace (this init's fresh `/proc`, the init included) and
    /// SIGKILLs everything when there are more than the cap, saying so on the command's stderr.
    /// Once past the cap, every later check kills again (a fork bomb races a single `kill(-1)`).
    fn check(&mut self) {
        if self.tripped {
            // SAFETY: SIGKILL to every process of the namespace but this init.
            unsafe { libc::kill(-1, libc::SIGKILL) };
            return;
        }
        if self.last.is_some_and(|t| t.elapsed() < WATCH_EVERY) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let count = entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .as_encoded_bytes()
                    .iter()
                    .all(u8::is_ascii_digit)
            })
            .take(
                usize::try_from(self.cap)
                    .unwrap_or(usize::MAX)
                    .saturating_add(1),
            )
            .count() as u64;
        if count > self.cap {
            self.tripped = true;
            let msg = format!(
                "aibuddy: the command exceeded its process cap ({}, exec.max_processes) and was killed\n",
                self.cap
            );
            // SAFETY: writing our buffer to stderr (the command's stderr pipe), then SIGKILL to
            // every process of the namespace but this init.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::kill(-1, libc::SIGKILL);
            }
        }
    }
}

/// The `RLIMIT_NPROC` for a cap: `cap`, but never above the current hard limit (an unprivileged
/// process cannot raise it, and a lower limit the person set stays).
pub(crate) fn clamped_nproc(cap: u64) -> libc::rlimit {
    let mut cur = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit fills a struct we own.
    unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut cur) };
    let n = cap.min(cur.rlim_max);
    libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    }
}

unsafe fn reap(child: libc::pid_t, main_status: &mut Option<libc::c_int>) {
    loop {
        let mut st = 0;
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r <= 0 {
            return;
        }
        if r == child {
            *main_status = Some(st);
        }
    }
}

/// Parsed report of an init: the ABI applied and, if the shell ended, its status and leftovers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct InitReport {
    /// The init ran (it always reports `L` first).
    pub(crate) started: bool,
    pub(crate) landlock_abi: Option<u8>,
    pub(crate) exit: Option<(libc::c_int, bool)>,
}

/// Parses the report pipe's bytes (pure; a truncated or garbled report yields what it can).
pub(crate) fn parse_report(bytes: &[u8]) -> InitReport {
    let mut r = InitReport::default();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'L' if i + 1 < bytes.len() => {
                r.started = true;
                r.landlock_abi = (bytes[i + 1] > 0).then_some(bytes[i + 1]);
                i += 2;
            }
            b'X' if i + 5 < bytes.len() => {
                let mut st = [0u8; 4];
                st.copy_from_slice(&bytes[i + 1..i + 5]);
                r.exit = Some((libc::c_int::from_ne_bytes(st), bytes[i + 5] == 1));
                i += 6;
            }
            _ => break,
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse_whole_partial_and_garbled() {
        let mut full = vec![b'L', 7, b'X'];
        full.extend_from_slice(&(9i32 << 8).to_ne_bytes());
        full.push(1);
        assert_eq!(
            parse_report(&full),
            InitReport {
                started: true,
                landlock_abi: Some(7),
                exit: Some((9 << 8, true))
            }
        );
        assert_eq!(
            parse_report(&[b'L', 0]),
            InitReport {
                started: true,
                landlock_abi: None,
                exit: None
            }
        );
        assert_eq!(parse_report(&full[..5]).exit, None);
        assert_eq!(parse_report(b"garbage"), InitReport::default());
    }

    #[test]
    fn an_explicit_missing_init_is_an_error() {
        assert!(locate(Some(Path::new("/nonexistent/aibuddy-exec-init"))).is_err());
    }
}
