//! Kernel confinement: Landlock on Linux, prepared in the parent before `fork`.
//!
//! Rules of a confined command:
//! - read and execute everything (`/` with read rights);
//! - write (create, remove, truncate, rename...) only beneath the project root, the private temp
//!   dir and the extra writable roots (missing ones are skipped with a warning);
//! - file-level access to a few device files (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`,
//!   `/dev/urandom`, `/dev/tty`, `/dev/ptmx`, `/dev/pts`); pipes (`/dev/stdout`) are not path-confined;
//! - network off (request `network_allowed = false`, ABI >= 4): TCP `connect` and `bind` are denied.
//!   Landlock does not cover UDP or Unix sockets: on the Landlock-only path this is a TCP switch,
//!   documented as such (the namespace path adds an empty network namespace);
//! - network on with the proxy on the Landlock-only path (`proxy_port`, ABI >= 4): TCP `connect`
//!   only to the proxy's loopback port (`bind` stays free, so dev servers run; UDP is not
//!   covered, and the scope line says so);
//! - ABI >= 6: signals and abstract Unix sockets are scoped to the sandbox (no `kill` of, or
//!   `connect` to, anything outside it).
//!
//! The same rules are applied by the init program inside the namespaces (`init`), where the
//! ruleset is built and enforced in one single-threaded process.
//!
//! Choice: the ruleset (with its path fds) is created here, in the parent; the child only does
//! `prctl(NO_NEW_PRIVS)` + `landlock_restrict_self(fd)`, two async-signal-safe syscalls
//! (see `supervisor`). The handled file access set is that of ABI 5 (nothing new for files since),
//! applied best-effort so an older kernel enforces what it knows.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::outcome::Confinement;

/// A ruleset ready to enforce in the child, and what it will apply.
pub(crate) struct Prepared {
    pub(crate) fd: OwnedFd,
    pub(crate) applied: Confinement,
}

/// What the running kernel supports for Landlock alone (cached): `Landlock { abi, network: abi >= 4 }`
/// or `Unavailable`.
pub fn landlock_support() -> Confinement {
    static SUPPORT: OnceLock<Confinement> = OnceLock::new();
    SUPPORT.get_or_init(detect).clone()
}

#[cfg(target_os = "linux")]
fn detect() -> Confinement {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attr only queries the ABI version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 0 {
        let reason = match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => "Landlock is built into the kernel but not enabled (lsm=)",
            Some(libc::ENOSYS) => "the kernel has no Landlock support",
            _ => "the Landlock ABI query failed",
        };
        return Confinement::Unavailable {
            reason: reason.into(),
        };
    }
    let abi = u8::try_from(v).unwrap_or(u8::MAX);
    Confinement::Landlock {
        abi,
        network: abi >= 4,
        scopes: abi >= 6,
        no_namespaces: None,
    }
}

#[cfg(not(target_os = "linux"))]
fn detect() -> Confinement {
    Confinement::Unavailable {
        reason: "kernel confinement is implemented with Landlock, which is Linux-only".into(),
    }
}

const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Builds the ruleset (not yet enforced). `Err(reason)` when the kernel cannot confine or the
/// ruleset fails. `scopes`: also scope signals and abstract Unix sockets to the sandbox (ABI >= 6;
/// ignored on older kernels). Returns the ruleset and what it applies.
#[cfg(target_os = "linux")]
pub(crate) fn build(
    writable: &[PathBuf],
    network_allowed: bool,
    proxy_port: Option<u16>,
) -> Result<(landlock::RulesetCreated, Confinement), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };

    let Some((abi, network)) = landlock_abi() else {
        return Err(match landlock_support() {
            Confinement::Unavailable { reason } => reason,
            _ => "unavailable".into(),
        });
    };
    let fs_abi = ABI::V5;
    let deny_net = !network_allowed && network;
    let err = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(fs_abi))
        .map_err(err)?;
    // Network on with a proxy (Landlock-only path): TCP connect only to the proxy's port.
    let proxy_only = proxy_port.filter(|_| network_allowed && network);
    if deny_net {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    } else if proxy_only.is_some() {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(err)?;
    }
    let scopes = abi >= 6;
    if scopes {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(err)?;
    }
    for root in writable.iter().filter(|p| !p.exists()) {
        tracing::warn!(root = %root.display(), "writable root does not exist; skipped");
    }
    let created = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(fs_abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(fs_abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            DEVICES.iter().map(Path::new).filter(|p| p.exists()),
            AccessFs::from_file(fs_abi),
        ))
        .map_err(err)?;
    let created = match proxy_only {
        Some(port) => created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?,
        None => created,
    };
    Ok((
        created,
        Confinement::Landlock {
            abi,
            network: deny_net,
            scopes,
            no_namespaces: None,
        },
    ))
}

/// Builds the ruleset for the Landlock-only path, as an fd the forked child enforces.
#[cfg(target_os = "linux")]
pub(crate) fn prepare(
    writable: &[PathBuf],
    network_allowed: bool,
    proxy_port: Option<u16>,
) -> Result<Prepared, String> {
    let (created, applied) = build(writable, network_allowed, proxy_port)?;
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| "the kernel refused to create a Landlock ruleset".to_string())?;
    Ok(Prepared { fd, applied })
}

/// `(abi, tcp rules available)` of the running kernel, or `None` without Landlock.
pub(crate) fn landlock_abi() -> Option<(u8, bool)> {
    match landlock_support() {
        Confinement::Landlock { abi, network, .. } => Some((abi, network)),
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn prepare(
    _writable: &[PathBuf],
    _network_allowed: bool,
    _proxy_port: Option<u16>,
) -> Result<Prepared, String> {
    Err("kernel confinement is implemented with Landlock, which is Linux-only".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn this_kernel_reports_landlock() {
        // The development and CI machines run a kernel with Landlock ABI 7.
        let support = landlock_support();
        match support {
            Confinement::Landlock { abi, network, .. } => {
                assert!(abi >= 1);
                assert_eq!(network, abi >= 4);
            }
            other => panic!("expected Landlock on this machine, got {other:?}"),
        }
    }
}
