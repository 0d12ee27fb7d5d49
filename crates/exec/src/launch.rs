//! Starting a command on one of the two paths, and the handle the runner ends it with.
//!
//! - **namespace path** ([`spawn_bwrap`]): `bwrap ... -- <init> --aibuddy-exec-init <spec>`; the
//!   init is PID 1 of the command's namespace (see `init`); the runner talks to it through a
//!   control pipe (its end of file is also the app's death) and reads its report at the end.
//! - **Landlock-only path** ([`spawn_landlock`]): `/bin/sh -c` under the forked supervisor (see
//!   `supervisor`).

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::bwrap::{self, MountPlan};
use crate::confine::Prepared;
use crate::error::ExecError;
use crate::hide::{self, HideKind};
use crate::init::{INIT_MARKER, InitSpec};
use crate::outcome::Confinement;
use crate::process_group::{GroupKind, kill_launcher_tree, signal_group};
use crate::request::ExecRequest;
use crate::supervisor::{self, Plan};

/// How the runner ends a command.
pub(crate) enum Control {
    /// Landlock-only path: signal the shell's group.
    Group { pgid: i32 },
    /// Namespace path with the init: `T` = SIGTERM to the command's group, `K` = SIGKILL all.
    Init { pipe: File },
    /// Namespace path without the init: bubblewrap and its sandbox's PID 1 are SIGKILLed (PID
    /// namespace teardown ends the command's tree); there is no graceful SIGTERM.
    Bwrap { pgid: i32 },
}

impl Control {
    /// How the drop guard and the last-resort kill end this launch's processes.
    pub(crate) fn group_kind(&self) -> GroupKind {
        match self {
            Control::Group { .. } => GroupKind::Group,
            Control::Init { .. } | Control::Bwrap { .. } => GroupKind::Launcher,
        }
    }
}

impl Control {
    pub(crate) fn terminate(&mut self) {
        match self {
            Control::Group { pgid } => {
                signal_group(*pgid, libc::SIGTERM);
            }
            Control::Init { pipe } => {
                let _ = pipe.write_all(b"T");
            }
            Control::Bwrap { pgid } => kill_launcher_tree(*pgid),
        }
    }

    pub(crate) fn kill(&mut self) {
        match self {
            Control::Group { pgid } => {
                signal_group(*pgid, libc::SIGKILL);
            }
            Control::Init { pipe } => {
                let _ = pipe.write_all(b"K");
            }
            Control::Bwrap { pgid } => kill_launcher_tree(*pgid),
        }
    }
}

/// What the end-of-run report says, however it came.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndReport {
    /// `false` only when the init was expected and never ran (bubblewrap could not set up).
    pub(crate) sandbox_started: bool,
    /// The shell's exact wait status, when the path reports it (the init does).
    pub(crate) wait_status: Option<libc::c_int>,
    pub(crate) killed_leftovers: bool,
    /// Landlock ABI the init applied inside (namespace path).
    pub(crate) landlock_abi: Option<u8>,
}

/// The report pipe's read end and how to read it.
pub(crate) enum Report {
    /// The supervisor: 1 byte, leftovers killed.
    Supervisor(File),
    /// The init: see `init::parse_report`.
    Init(File),
    None,
}

impl Report {
    /// Reads the end report (call after the command's process has exited: every writer is gone).
    pub(crate) fn finish(self) -> EndReport {
        match self {
            Report::Supervisor(mut f) => {
                let mut flag = [0u8; 1];
                EndReport {
                    sandbox_started: true,
                    wait_status: None,
                    killed_leftovers: matches!(f.read(&mut flag), Ok(1)) && flag[0] == 1,
                    landlock_abi: None,
                }
            }
            Report::Init(mut f) => {
                let mut bytes = Vec::new();
                let _ = Read::by_ref(&mut f).take(64).read_to_end(&mut bytes);
                let r = crate::init::parse_report(&bytes);
                EndReport {
                    sandbox_started: r.started,
                    wait_status: r.exit.map(|(s, _)| s),
                    killed_leftovers: r.exit.is_some_and(|(_, k)| k),
                    landlock_abi: r.landlock_abi,
                }
            }
            Report::None => EndReport {
                sandbox_started: true,
                wait_status: None,
                killed_leftovers: false,
                landlock_abi: None,
            },
        }
    }
}

/// A started command.
pub(crate) struct Launched {
    pub(crate) child: tokio::process::Child,
    pub(crate) control: Control,
    pub(crate) report: Report,
    /// The group the drop guard kills (shell's group, or bubblewrap's).
    pub(crate) pgid: i32,
}

/// Environment and output wiring common to both paths.
pub(crate) struct Wiring {
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) tmpdir: PathBuf,
    /// The proxy bridge the init serves (namespace path; see `netwire`).
    pub(crate) bridge: Option<crate::netbridge::BridgeSpec>,
    /// How the process is started beyond a command's defaults (a long-lived server).
    pub(crate) shape: Shape,
}

/// What differs between a command and a long-lived confined server (`server`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// stdin is a pipe (a server's JSON-RPC input) instead of `/dev/null`.
    pub(crate) stdin_piped: bool,
    /// The working directory is read-only (a server writes only its writable roots and TMPDIR).
    pub(crate) cwd_read_only: bool,
    /// Where bubblewrap itself starts on the host when the sandbox's working directory exists
    /// only inside it (its private TMPDIR); `None`: the request's `cwd`.
    pub(crate) host_cwd: Option<PathBuf>,
}

fn base_command(program: &Path, req: &ExecRequest, wiring: &Wiring) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    let stdin = if wiring.shape.stdin_piped {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    cmd.current_dir(wiring.shape.host_cwd.as_deref().unwrap_or(&req.cwd))
        .env_clear()
        .envs(wiring.env.iter().map(|(k, v)| (k, v)))
        .env("TMPDIR", &wiring.tmpdir)
        .envs(req.env.set.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The Landlock-only path (also the unconfined one when `prepared` is `None`).
pub(crate) fn spawn_landlock(
    req: &ExecRequest,
    wiring: &Wiring,
    prepared: Option<Prepared>,
) -> Result<Launched, ExecError> {
    let (report_read, report_write) = pipe().map_err(|source| ExecError::Prepare {
        what: "the supervisor pipe",
        source,
    })?;
    let plan = Plan {
        app_pid: std::process::id() as libc::pid_t,
        landlock_fd: prepared.as_ref().map(|p| p.fd.as_raw_fd()),
        report_fd: report_write.as_raw_fd(),
        env_block: supervisor::env_block(),
        nproc: crate::init::clamped_nproc(
            supervisor::user_tasks().saturating_add(u64::from(req.max_processes)),
        ),
    };
    let mut cmd = base_command(Path::new("/bin/sh"), req, wiring);
    cmd.arg("-c").arg(&req.command);
    // The syscall filter the child installs is built here: the child may not allocate.
    crate::syscall_filter::prepare();
    // SAFETY: the closure only performs async-signal-safe system calls (see `supervisor`).
    unsafe {
        cmd.pre_exec(move || supervisor::pre_exec(plan));
    }
    let spawned = cmd.spawn();
    drop(report_write);
    drop(prepared);
    let mut child = spawned.map_err(ExecError::Spawn)?;
    let mut report = File::from(report_read);
    let mut pid_bytes = [0u8; 4];
    // The supervisor writes the command's pid right after its fork, before spawn() returns.
    if let Err(e) = report.read_exact(&mut pid_bytes) {
        let _ = child.start_kill();
        return Err(ExecError::Spawn(e));
    }
    let pgid = i32::from_ne_bytes(pid_bytes);
    Ok(Launched {
        child,
        control: Control::Group { pgid },
        report: Report::Supervisor(report),
        pgid,
    })
}

/// Paths the namespace path hides, resolved and classified, that exist in the sandbox's view.
fn hidden_paths(
    req: &ExecRequest,
    masked: &[PathBuf],
    binds: &[PathBuf],
) -> Vec<(PathBuf, HideKind)> {
    let exposed: Vec<PathBuf> = req
        .exposed_credentials
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let mut candidates: Vec<PathBuf> = req
        .home
        .as_deref()
        .map(|h| hide::credential_locations(h, &req.exposed_credentials))
        .unwrap_or_default();
    candidates.extend(
        req.credential_paths
            .iter()
            .filter(|p| !req.exposed_credentials.iter().any(|e| p.starts_with(e)))
            .cloned(),
    );
    candidates.extend(req.hidden_paths.iter().cloned());
    let mut out: Vec<(PathBuf, HideKind)> = Vec::new();
    for c in candidates {
        let Ok(real) = std::fs::canonicalize(&c) else {
            continue; // absent: nothing to hide
        };
        if exposed.iter().any(|e| real.starts_with(e)) && !req.hidden_paths.contains(&c) {
            continue; // a credential symlinked into an exposed location
        }
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        // A hidden path that contains the project (the person opened it) is not hidden: the
        // project stays usable; one inside the project is hidden.
        if real == Path::new("/")
            || req.cwd.starts_with(&real)
            || !hide::visible_in_sandbox(&real, masked, binds)
        {
            continue;
        }
        let kind = if meta.is_dir() {
            HideKind::Dir
        } else {
            HideKind::File
        };
        if !out.iter().any(|(p, _)| p == &real) {
            out.push((real, kind));
        }
    }
    hide::outermost(out)
}

/// The exposed credential locations (resolved, existing) that lie under a masked directory, so
/// must be bound back to stay readable.
fn exposed_under(exposed: &[PathBuf], masked: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for real in exposed.iter().filter_map(|p| std::fs::canonicalize(p).ok()) {
        if masked.iter().any(|m| real.starts_with(m)) && !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

/// The namespace path. `init`: the init program, or `None` to run without the inner layer.
pub(crate) fn spawn_bwrap(
    req: &ExecRequest,
    wiring: &Wiring,
    bwrap_path: &Path,
    writable: &[PathBuf],
    protected: &crate::protect::Guard,
    init: Option<&Path>,
) -> Result<Launched, ExecError> {
    let mut masked = bwrap::masked_dirs();
    if !masked.iter().any(|m| m == Path::new("/tmp")) {
        masked.insert(0, PathBuf::from("/tmp"));
    }
    let cwd_writable = !wiring.shape.cwd_read_only;
    let mut binds: Vec<PathBuf> = cwd_writable.then(|| req.cwd.clone()).into_iter().collect();
    binds.extend(writable.iter().cloned());
    let mut keep_read_only = bwrap::resolver_files(&masked);
    // An init program under a masked directory (an AppImage mounts under /tmp) is bound back.
    if let Some(init) = init.and_then(|i| std::fs::canonicalize(i).ok())
        && masked.iter().any(|m| init.starts_with(m))
    {
        keep_read_only.push(init);
    }
    // A credential the person exposed is readable wherever it lives: one under a masked directory
    // (a HOME under /tmp, say) would otherwise vanish with the private tmpfs. Read-only, like the
    // rest of the host.
    keep_read_only.extend(exposed_under(&req.exposed_credentials, &masked));
    // The proxy's socket directory (under the host /tmp), read-only: connecting needs no write.
    if let Some(dir) = wiring.bridge.as_ref().and_then(|b| b.socket.parent()) {
        keep_read_only.push(dir.to_path_buf());
    }
    let plan = MountPlan {
        cwd: req.cwd.clone(),
        cwd_writable,
        writable: writable.to_vec(),
        tmpdir: wiring.tmpdir.clone(),
        keep_read_only,
        git_dirs: protected.git_dirs().to_vec(),
        protected: protected.read_only(),
        hidden: hidden_paths(req, &masked, &binds),
        masked,
        as_pid_1: init.is_some(),
        read_only: req.read_only,
    };
    let mut cmd = base_command(bwrap_path, req, wiring);
    cmd.args(bwrap::args(&plan)).arg("--");
    let mut keep: Vec<RawFd> = Vec::new();
    let mut pipes = None;
    match init {
        Some(init) => {
            let (control_read, control_write) = pipe().map_err(|source| ExecError::Prepare {
                what: "the control pipe",
                source,
            })?;
            let (report_read, report_write) = pipe().map_err(|source| ExecError::Prepare {
                what: "the report pipe",
                source,
            })?;
            let mut landlock_writable = vec![wiring.tmpdir.clone()];
            if cwd_writable && !req.read_only {
                landlock_writable.push(req.cwd.clone());
            }
            landlock_writable.extend(writable.iter().cloned());
            let spec = InitSpec {
                command: req.command.clone(),
                writable: landlock_writable,
                network_allowed: req.network_allowed,
                control_fd: control_read.as_raw_fd(),
                report_fd: report_write.as_raw_fd(),
                max_processes: Some(u64::from(req.max_processes)),
                // SAFETY: getuid cannot fail.
                count_processes: unsafe { libc::getuid() } == 0,
                net_bridge: wiring.bridge.clone(),
            };
            let spec = serde_json::to_string(&spec).map_err(|e| ExecError::Prepare {
                what: "the init spec",
                source: std::io::Error::other(e),
            })?;
            cmd.arg(std::fs::canonicalize(init).unwrap_or_else(|_| init.to_path_buf()))
                .arg(INIT_MARKER)
                .arg(spec);
            keep = vec![control_read.as_raw_fd(), report_write.as_raw_fd()];
            pipes = Some((control_read, control_write, report_read, report_write));
        }
        None => {
            cmd.arg("/bin/sh").arg("-c").arg(&req.command);
        }
    }
    let keep_fds = [
        keep.first().copied().unwrap_or(-1),
        keep.get(1).copied().unwrap_or(-1),
    ];
    // Without the init nothing sets the cap inside: bubblewrap gets the person's task count plus
    // the cap (the user namespace's own count is then bounded by it too). With the init, this
    // outer bound would let the person's other programs eat into the command's allowance (the
    // kernel checks every ancestor namespace's count against its creator's limit): not set.
    let nproc = init.is_none().then(|| {
        crate::init::clamped_nproc(
            supervisor::user_tasks().saturating_add(u64::from(req.max_processes)),
        )
    });
    // SAFETY: only async-signal-safe system calls (setsid, setrlimit, close_range, fcntl).
    unsafe {
        cmd.pre_exec(move || supervisor::isolate_for_exec(keep_fds, nproc));
    }
    let spawned = cmd.spawn();
    let child = spawned.map_err(ExecError::Spawn)?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(-1);
    let (control, report) = match pipes {
        Some((control_read, control_write, report_read, report_write)) => {
            drop(control_read);
            drop(report_write);
            (
                Control::Init {
                    pipe: File::from(control_write),
                },
                Report::Init(File::from(report_read)),
            )
        }
        None => (Control::Bwrap { pgid }, Report::None),
    };
    Ok(Launched {
        child,
        control,
        report,
        pgid,
    })
}

/// The confinement a namespace run applied.
pub(crate) fn namespaces_applied(req: &ExecRequest, end: &EndReport) -> Confinement {
    Confinement::Namespaces {
        landlock_abi: end.landlock_abi,
        network_isolated: !req.network_allowed,
        scopes: end.landlock_abi.is_some_and(|a| a >= 6),
    }
}

/// A CLOEXEC pipe: (read end, write end).
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fresh descriptors that we immediately own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
