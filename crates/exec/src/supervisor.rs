//! The supervisor forked inside `pre_exec`: the piece that makes a command's tree die with the app.
//!
//! Layout after spawn (S = the process std/tokio spawned and waits on, C = the command):
//!
//! ```text
//! app ── S (supervisor: own session, subreaper, PDEATHSIG=SIGUSR1) ── C (/bin/sh, own group pgid=C)
//!                                                                     └─ grandchildren, `cmd &` ...
//! ```
//!
//! - S is in its own session and process group; C gets a fresh group whose id it reports to the app
//!   through a pipe, so the app signals the command's group (`kill(-C, ...)`) without touching S.
//! - S holds `PR_SET_PDEATHSIG(SIGUSR1)`. The signal also fires when merely the *thread* that
//!   spawned exits (Linux ties it to the thread), so S acts only if `getppid()` changed, i.e. the
//!   app process is really gone: it SIGKILLs C's group. It re-checks `getppid()` every second too.
//! - S is a child subreaper: orphans of the tree (`sleep 1000 &` after the shell ends) are reparented
//!   to it and reaped by it, so when the app sees S exit the whole group is gone (no zombies left
//!   waiting for init), and `kill(-C, 0)` reports `ESRCH`.
//! - When C ends, S kills what is left of C's group (background jobs), reaps it, reports through the
//!   pipe whether anything was left, and exits with C's exact status (same code, or the same signal).
//!
//! Everything here runs between `fork` and `exec` of a multi-threaded program, so it uses only
//! async-signal-safe system calls: no allocation, no locks, no Rust std I/O. The Landlock ruleset is
//! built before `fork` (in the parent); the child only calls `landlock_restrict_self` on its fd.

use std::io;
use std::os::fd::RawFd;

/// Plain data copied into the `pre_exec` closure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The app's pid: S compares `getppid()` against it.
    pub(crate) app_pid: libc::pid_t,
    /// Landlock ruleset fd to enforce, if any.
    pub(crate) landlock_fd: Option<RawFd>,
    /// Write end of the report pipe: C's pid (4 bytes), later one byte "leftovers were killed".
    pub(crate) report_fd: RawFd,
    /// The app's initial environment block `[start, end)` (what `/proc/<pid>/environ` shows):
    /// S overwrites its copy, so the command cannot read the app's secrets through `/proc/$PPID`.
    pub(crate) env_block: Option<(usize, usize)>,
    /// `RLIMIT_NPROC` of C: the person's current count of tasks plus the request's cap (the
    /// kernel counts every task of the real user system-wide on this path).
    pub(crate) nproc: libc::rlimit,
}

/// Tasks (threads included, as `RLIMIT_NPROC` counts them) whose real user is ours, from
/// `/proc/*/status`. Racy by nature (processes come and go); when `/proc` is unreadable the
/// count is unknown and the cap cannot be placed above it: `u64::MAX` (the limit stays the
/// person's own, clamped to the hard limit).
pub(crate) fn user_tasks() -> u64 {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        tracing::warn!("/proc unreadable: no process cap on the Landlock-only path");
        return u64::MAX;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .as_encoded_bytes()
            .iter()
            .all(u8::is_ascii_digit)
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let mut real_uid = None;
        let mut threads = 1u64;
        for line in status.lines() {
            if let Some(rest) = line.strip_prefix("Uid:") {
                real_uid = rest.split_whitespace().next().map(str::to_owned);
            } else if let Some(rest) = line.strip_prefix("Threads:") {
                threads = rest.trim().parse().unwrap_or(1);
            }
        }
        if real_uid.as_deref() == Some(uid.as_str()) {
            total = total.saturating_add(threads);
        }
    }
    total
}

/// The current process's environment block as `/proc/self/stat` gives it (fields 50 and 51).
pub(crate) fn env_block() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start: usize = fields.get(50 - 3)?.parse().ok()?;
    let end: usize = fields.get(51 - 3)?.parse().ok()?;
    (start > 0 && end > start && end - start < (64 << 20)).then_some((start, end))
}

/// `close_range` flag: mark close-on-exec instead of closing.
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// Marks every descriptor above stderr close-on-exec (nothing inherited reaches the command),
/// then clears the flag on `keep` (negative entries ignored). Async-signal-safe.
///
/// # Safety
/// Only between fork and exec.
pub(crate) unsafe fn cloexec_all_but(keep: [RawFd; 2]) {
    unsafe {
        let r = libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if r == -1 {
            for fd in 3..4096 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        for fd in keep {
            if fd >= 0 {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
        }
    }
}

/// `pre_exec` of the namespace path: own session (so the app's drop guard can kill bubblewrap's
/// group), `nproc` as `RLIMIT_NPROC` (without the init only: the person's tasks plus the cap;
/// the init sets the cap itself inside the user namespace, where the count starts afresh) and no
/// inherited descriptor but `keep` (the init's pipes).
///
/// # Safety
/// Only from a `pre_exec` closure.
pub(crate) unsafe fn isolate_for_exec(
    keep: [RawFd; 2],
    nproc: Option<libc::rlimit>,
) -> io::Result<()> {
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        if let Some(limit) = nproc
            && libc::setrlimit(libc::RLIMIT_NPROC, &limit) == -1
        {
            return Err(io::Error::last_os_error());
        }
        cloexec_all_but(keep);
    }
    Ok(())
}

const SUPERVISED: [libc::c_int; 7] = [
    libc::SIGCHLD,
    libc::SIGUSR1,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGPIPE,
];

/// Runs in the forked child before `exec`. Returns in C (which then execs); never returns in S.
///
/// # Safety
/// Must only be called from a `pre_exec` closure (between fork and exec).
pub(crate) unsafe fn pre_exec(plan: Plan) -> io::Result<()> {
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        if let Some(fd) = plan.landlock_fd {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            // Confined commands get no key store (see `syscall_filter`).
            crate::syscall_filter::install()?;
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SUPERVISED {
            libc::sigaddset(&mut set, s);
        }
        // Block before fork so no SIGCHLD from a fast command can be lost in S.
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        let pid = libc::fork();
        if pid == -1 {
            let err = io::Error::last_os_error();
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            return Err(err);
        }
        if pid == 0 {
            // C: the command.
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            // The process cap, before the shell starts (S keeps the app's limit).
            if libc::setrlimit(libc::RLIMIT_NPROC, &plan.nproc) == -1 {
                return Err(io::Error::last_os_error());
            }
            cloexec_all_but([-1, -1]);
            return Ok(());
        }
        if let Some((start, end)) = plan.env_block {
            // S's copy of the app's environment strings: zero it (never read again here).
            let p = start as *mut u8;
            for i in 0..(end - start) {
                std::ptr::write_volatile(p.add(i), 0);
            }
        }
        supervise(pid, plan, &set)
    }
}

/// S's life. Never returns.
unsafe fn supervise(child: libc::pid_t, plan: Plan, set: &libc::sigset_t) -> ! {
    unsafe {
        // Both sides set the group so the app can signal it as soon as it reads the pid.
        libc::setpgid(child, child);
        let bytes = child.to_ne_bytes();
        libc::write(plan.report_fd, bytes.as_ptr().cast(), bytes.len());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1, 0, 0, 0);
        close_all_but(plan.report_fd);

        let mut status: libc::c_int = 0;
        let mut main_status: Option<libc::c_int> = None;
        let mut orphaned = false;
        while main_status.is_none() {
            if !orphaned && libc::getppid() != plan.app_pid {
                // The app is gone: nothing may run on unobserved.
                orphaned = true;
                libc::kill(-child, libc::SIGKILL);
            }
            reap(child, &mut status, &mut main_status);
            if main_status.is_none() {
                wait_signal(set, 1_000);
            }
        }
        // C ended: reap descendants that already exited (so zombies do not count as leftovers),
        // then kill what is left of its group (background jobs) and every process reparented to
        // S (as a subreaper, S inherits `setsid` daemons and double-forked children once their
        // parents are gone), until S has no child left.
        let mut st = 0;
        while libc::waitpid(-1, &mut st, libc::WNOHANG) > 0 {}
        let mut leftovers = libc::kill(-child, libc::SIGKILL) == 0;
        let mut waited_ms = 0;
        loop {
            let mut st = 0;
            let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
            if r > 0 {
                continue;
            }
            if r == -1 || waited_ms >= 2_000 {
                break; // ECHILD: every descendant reaped (or one in D state persists).
            }
            if kill_children() {
                leftovers = true;
            }
            wait_signal(set, 20);
            waited_ms += 20;
        }
        let flag = [u8::from(leftovers)];
        libc::write(plan.report_fd, flag.as_ptr().cast(), 1);
        libc::close(plan.report_fd);
        mirror_exit(main_status.unwrap_or(0))
    }
}

/// SIGKILLs every child of this (single-threaded) process, read from
/// `/proc/thread-self/children` into a stack buffer; returns whether any was signalled.
/// Async-signal-safe: open, read, kill, close only.
unsafe fn kill_children() -> bool {
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return false;
        }
        let mut buf = [0u8; 4096];
        let mut any = false;
        let mut pid: libc::pid_t = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(b - b'0'));
                } else {
                    if pid > 1 && libc::kill(pid, libc::SIGKILL) == 0 {
                        any = true;
                    }
                    pid = 0;
                }
            }
        }
        if pid > 1 && libc::kill(pid, libc::SIGKILL) == 0 {
            any = true;
        }
        libc::close(fd);
        any
    }
}

unsafe fn reap(
    child: libc::pid_t,
    status: &mut libc::c_int,
    main_status: &mut Option<libc::c_int>,
) {
    loop {
        let r = unsafe { libc::waitpid(-1, status, libc::WNOHANG) };
        if r <= 0 {
            return;
        }
        if r == child {
            *main_status = Some(*status);
        }
    }
}

unsafe fn wait_signal(set: &libc::sigset_t, millis: i64) {
    let ts = libc::timespec {
        tv_sec: millis / 1_000,
        tv_nsec: (millis % 1_000) * 1_000_000,
    };
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // Blocked signals are consumed here; SIGTERM/SIGINT/SIGHUP aimed at S are ignored by design.
    unsafe { libc::sigtimedwait(set, &mut info, &ts) };
}

unsafe fn close_all_but(keep: RawFd) {
    unsafe {
        let keep = keep as libc::c_uint;
        let r1 = if keep > 0 {
            libc::syscall(
                libc::SYS_close_range,
                0 as libc::c_uint,
                keep - 1,
                0 as libc::c_uint,
            )
        } else {
            0
        };
        let r2 = libc::syscall(
            libc::SYS_close_range,
            keep + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
        if r1 == -1 || r2 == -1 {
            for fd in 0..4096 {
                if fd != keep as libc::c_int {
                    libc::close(fd);
                }
            }
        }
    }
}

/// Exits with C's status: the same code, or death by the same signal (core dumps disabled).
unsafe fn mirror_exit(status: libc::c_int) -> ! {
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &zero);
            libc::signal(sig, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}
