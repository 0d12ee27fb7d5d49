//! The namespace launch path through bubblewrap (`bwrap`): the host probe (once, cached) and the
//! argument plan (pure).
//!
//! Each command gets its own user, PID, IPC, mount and network namespaces (the network one holds
//! only its own loopback; egress goes through the proxy bridged in by the init), `--die-with-parent`, `--new-session`, no capabilities,
//! no nested user namespaces, a fresh `/proc` (only the command's tree is visible) and `/dev`.
//! Mounts, in order (later ones win):
//!
//! 1. `/` read-only;
//! 2. private tmpfs over `/tmp` and `/run` (path Unix sockets of the host, such as the D-Bus,
//!    Docker, tmux, X11 or ssh-agent ones, live there; a read-only bind would not stop `connect`);
//!    the target of `/etc/resolv.conf` is bound back read-only when it lies there, so DNS works;
//! 3. the private `TMPDIR` (0700) inside the private `/tmp`;
//! 4. the project and the writable roots, read-write, by their resolved paths;
//! 5. the protected paths (see `protect`): each git directory inside them bound onto itself
//!    read-write (a mount point cannot be renamed away), then every protected path (existing, or
//!    an empty placeholder for an absent one) bound read-only over itself;
//! 6. the hidden paths (credential locations, the data directory): an empty read-only tmpfs with
//!    mode 0000 over directories, `/dev/null` over files. After the writable roots, so a project
//!    or writable root that contains one does not bring it back.
//!
//! Step 5 comes after step 6 when no git directory or protected path holds or lies in a hidden
//! path (the usual case): bubblewrap reads the whole mount table at every mount, so a mount made
//! before the ~90 hidden ones makes each of them dearer. When one does, step 5 stays first.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::hide::HideKind;

/// Directories replaced by a private tmpfs in the sandbox.
pub(crate) const MASKED_DIRS: [&str; 3] = ["/tmp", "/run", "/var/run"];

/// Where bubblewrap is looked for (the app's own environment is trusted; the project is not).
const BWRAP_CANDIDATES: [&str; 3] = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];

/// The bubblewrap binary when it works on this host (probed once: a sandbox with every namespace
/// this module uses runs `/bin/true`), or why not.
pub(crate) fn probe() -> Result<PathBuf, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE.get_or_init(run_probe).clone()
}

fn run_probe() -> Result<PathBuf, String> {
    let bwrap = BWRAP_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| "bubblewrap (bwrap) is not installed".to_string())?;
    let out = std::process::Command::new(&bwrap)
        .args(namespace_flags(true))
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(["--tmpfs", "/tmp", "--", "/bin/true"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("bubblewrap could not be started: {e}"))?;
    if out.status.success() {
        Ok(bwrap)
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or("").trim();
        Err(format!(
            "bubblewrap cannot create namespaces here ({}): {first}",
            out.status
        ))
    }
}

/// The namespace and process flags (no mounts).
fn namespace_flags(as_pid_1: bool) -> Vec<&'static str> {
    let mut f = vec![
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
    ];
    // Always a network namespace of its own: host loopback ports, host sockets bound in the
    // network namespace and the host's `/proc/net` are out of reach; egress, when allowed, goes
    // through the proxy bridged in by the init (`netbridge`).
    f.push("--unshare-net");
    if as_pid_1 {
        f.push("--as-pid-1");
    }
    f
}

/// Everything the argument plan needs, already resolved and stat'ed by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountPlan {
    /// The project root (resolved), working directory, read-write unless `cwd_writable` is false.
    pub(crate) cwd: PathBuf,
    /// Whether `cwd` is bound read-write (a command's project root) or left read-only (a
    /// confined MCP server's working directory).
    pub(crate) cwd_writable: bool,
    /// Extra writable roots (resolved, existing).
    pub(crate) writable: Vec<PathBuf>,
    /// The private `TMPDIR` inside the sandbox (under `/tmp`).
    pub(crate) tmpdir: PathBuf,
    /// Directories replaced by an empty tmpfs (existing, not symlinks).
    pub(crate) masked: Vec<PathBuf>,
    /// Files under masked directories bound back read-only (the resolver configuration).
    pub(crate) keep_read_only: Vec<PathBuf>,
    /// Git directories inside the writable roots, bound onto themselves (outer ones first).
    pub(crate) git_dirs: Vec<PathBuf>,
    /// Protected paths bound read-only over themselves (resolved, existing on the host).
    pub(crate) protected: Vec<PathBuf>,
    /// Paths hidden (resolved, existing, visible in the sandbox).
    pub(crate) hidden: Vec<(PathBuf, HideKind)>,
    /// The init program runs as PID 1 (`--as-pid-1`); otherwise bubblewrap's own reaper does.
    pub(crate) as_pid_1: bool,
    /// The project and the git directories are bound read-only (the approval mode `read-only`).
    pub(crate) read_only: bool,
}

/// The bubblewrap arguments up to (not including) `--` and the program.
pub(crate) fn args(plan: &MountPlan) -> Vec<OsString> {
    let mut a: Vec<OsString> = namespace_flags(plan.as_pid_1)
        .into_iter()
        .map(OsString::from)
        .collect();
    let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
        for i in items {
            a.push(i.as_ref().to_os_string());
        }
    };
    push(&[
        &"--ro-bind",
        &"/",
        &"/",
        &"--dev",
        &"/dev",
        &"--proc",
        &"/proc",
    ]);
    for m in &plan.masked {
        push(&[&"--tmpfs", m]);
    }
    for k in &plan.keep_read_only {
        push(&[&"--ro-bind", k, k]);
    }
    push(&[&"--perms", &"0700", &"--dir", &plan.tmpdir]);
    let bind = if plan.read_only {
        "--ro-bind"
    } else {
        "--bind"
    };
    let cwd = plan.cwd_writable.then_some(&plan.cwd);
    for w in cwd.into_iter().chain(&plan.writable) {
        push(&[&bind, w, w]);
    }
    // Bubblewrap reads the mount table at every mount, so each mount costs more the more there
    // are: the protected binds go after the hidden paths (half their cost with ~90 hidden paths),
    // unless one of them holds or lies in a hidden path (a recursive bind would bring a hidden
    // credential back, or a hide would be covered): then all stay before, as the order says.
    let late = !plan.git_dirs.iter().chain(&plan.protected).any(|p| {
        plan.hidden
            .iter()
            .any(|(h, _)| h.starts_with(p) || p.starts_with(h))
    });
    let protect = |push: &mut dyn FnMut(&[&dyn AsRef<std::ffi::OsStr>])| {
        for g in &plan.git_dirs {
            push(&[&bind, g, g]);
        }
        for p in &plan.protected {
            push(&[&"--ro-bind", p, p]);
        }
    };
    if !late {
        protect(&mut push);
    }
    for (path, kind) in &plan.hidden {
        match kind {
            HideKind::Dir => push(&[&"--perms", &"0000", &"--tmpfs", path, &"--remount-ro", path]),
            HideKind::File => push(&[&"--ro-bind", &"/dev/null", path]),
        }
    }
    if late {
        protect(&mut push);
    }
    push(&[&"--chdir", &plan.cwd]);
    a
}

/// The existing directories to mask (symlinks such as `/var/run -> /run` are covered by their
/// target and skipped).
pub(crate) fn masked_dirs() -> Vec<PathBuf> {
    MASKED_DIRS
        .iter()
        .map(Path::new)
        .filter(|p| {
            std::fs::symlink_metadata(p)
                .map(|m| m.is_dir())
                .unwrap_or(false)
        })
        .map(Path::to_path_buf)
        .collect()
}

/// The resolver configuration's real location when it lies under a masked directory.
pub(crate) fn resolver_files(masked: &[PathBuf]) -> Vec<PathBuf> {
    ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"]
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .filter(|real| real.is_file() && masked.iter().any(|m| real.starts_with(m)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> MountPlan {
        MountPlan {
            cwd: "/home/u/proj".into(),
            cwd_writable: true,
            writable: vec!["/home/u/.cargo".into()],
            tmpdir: "/tmp/aibuddy-exec-1".into(),
            masked: vec!["/tmp".into(), "/run".into()],
            keep_read_only: vec!["/run/systemd/resolve/stub-resolv.conf".into()],
            git_dirs: vec!["/home/u/proj/.git".into()],
            protected: vec![
                "/home/u/proj/.git/config".into(),
                "/home/u/proj/.vscode".into(),
            ],
            hidden: vec![
                ("/home/u/.ssh".into(), HideKind::Dir),
                ("/home/u/.netrc".into(), HideKind::File),
            ],
            as_pid_1: true,
            read_only: false,
        }
    }

    fn pos(args: &[OsString], seq: &[&str]) -> usize {
        args.windows(seq.len())
            .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{seq:?} not in {args:?}"))
    }

    #[test]
    fn a_read_only_plan_binds_the_project_and_git_dirs_read_only() {
        let mut p = plan();
        p.read_only = true;
        let a = args(&p);
        pos(&a, &["--ro-bind", "/home/u/proj", "/home/u/proj"]);
        pos(&a, &["--ro-bind", "/home/u/.cargo", "/home/u/.cargo"]);
        pos(&a, &["--ro-bind", "/home/u/proj/.git", "/home/u/proj/.git"]);
        assert!(!a.iter().any(|x| x == "--bind"), "{a:?}");
    }

    #[test]
    fn mounts_come_in_an_order_where_hides_win() {
        let a = args(&plan());
        let root = pos(&a, &["--ro-bind", "/", "/"]);
        let tmp = pos(&a, &["--tmpfs", "/tmp"]);
        let resolv = pos(
            &a,
            &[
                "--ro-bind",
                "/run/systemd/resolve/stub-resolv.conf",
                "/run/systemd/resolve/stub-resolv.conf",
            ],
        );
        let tmpdir = pos(&a, &["--perms", "0700", "--dir", "/tmp/aibuddy-exec-1"]);
        let proj = pos(&a, &["--bind", "/home/u/proj", "/home/u/proj"]);
        let cargo = pos(&a, &["--bind", "/home/u/.cargo", "/home/u/.cargo"]);
        let ssh = pos(
            &a,
            &[
                "--perms",
                "0000",
                "--tmpfs",
                "/home/u/.ssh",
                "--remount-ro",
                "/home/u/.ssh",
            ],
        );
        let netrc = pos(&a, &["--ro-bind", "/dev/null", "/home/u/.netrc"]);
        let git = pos(&a, &["--bind", "/home/u/proj/.git", "/home/u/proj/.git"]);
        let config = pos(
            &a,
            &[
                "--ro-bind",
                "/home/u/proj/.git/config",
                "/home/u/proj/.git/config",
            ],
        );
        let vscode = pos(
            &a,
            &["--ro-bind", "/home/u/proj/.vscode", "/home/u/proj/.vscode"],
        );
        assert!(root < tmp && tmp < resolv && resolv < tmpdir && tmpdir < proj);
        assert!(proj < cargo && cargo < ssh && ssh < netrc);
        // No protected path touches a hidden one: the protected binds come last (cheaper).
        assert!(netrc < git && git < config && config < vscode);
        // One that holds a hidden path (the project is the home, `.claude` is both): all of them
        // before the hides, so the hide wins.
        let mut p = plan();
        p.protected.push("/home/u/.claude".into());
        p.hidden
            .push(("/home/u/.claude/.credentials.json".into(), HideKind::File));
        let a = args(&p);
        let claude = pos(&a, &["--ro-bind", "/home/u/.claude", "/home/u/.claude"]);
        let cred = pos(
            &a,
            &[
                "--ro-bind",
                "/dev/null",
                "/home/u/.claude/.credentials.json",
            ],
        );
        let git = pos(&a, &["--bind", "/home/u/proj/.git", "/home/u/proj/.git"]);
        let ssh = pos(&a, &["--tmpfs", "/home/u/.ssh"]);
        assert!(git < claude && claude < ssh && ssh < cred);
        assert_eq!(
            a[a.len() - 2..],
            ["--chdir", "/home/u/proj"].map(OsString::from)
        );
    }

    #[test]
    fn every_command_gets_a_network_namespace_and_pid_1_is_optional() {
        let a = args(&plan());
        for f in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
            "--disable-userns",
            "--as-pid-1",
        ] {
            assert!(a.contains(&OsString::from(f)), "{f}");
        }
        pos(&a, &["--cap-drop", "ALL"]);
        let mut p = plan();
        p.as_pid_1 = false;
        let a = args(&p);
        assert!(a.contains(&OsString::from("--unshare-net")));
        assert!(!a.contains(&OsString::from("--as-pid-1")));
    }
}
