//! Process-group helpers (Unix). Each does one thing:
//!
//! - [`group_alive`]: does any process (zombies included) remain in the group? `kill(-pgid, 0)`;
//! - [`signal_group`]: send a signal to every process of the group, ignoring `ESRCH`;
//! - [`wait_group_gone`]: poll until the group is empty or a limit passes.

use std::time::{Duration, Instant};

/// `true` while any process of group `pgid` exists (EPERM counts as existing).
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks existence and permissions.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Sends `signal` to group `pgid`; returns whether any process received it.
pub(crate) fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: plain syscall on a process group we created.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Polls until group `pgid` is gone; returns `false` if it still exists after `limit`.
pub(crate) async fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    while group_alive(pgid) {
        if start.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// Kills the group with SIGKILL when dropped while armed (a run future dropped by a hard deadline).
pub(crate) struct GroupGuard {
    pub(crate) pgid: i32,
    pub(crate) armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            tracing::warn!(
                pgid = self.pgid,
                "run dropped before completion; killing its process group"
            );
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}
