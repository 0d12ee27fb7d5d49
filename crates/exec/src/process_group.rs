//! Process-group helpers (Unix). Each does one thing:
//!
//! - [`group_alive`]: does any process (zombies included) remain in the group? `kill(-pgid, 0)`;
//! - [`signal_group`]: send a signal to every process of the group, ignoring `ESRCH`;
//! - [`wait_group_gone`]: poll until the group is empty or a limit passes;
//! - [`kill_launcher_tree`]: end a bubblewrap launcher and its sandbox with no window for an orphan.

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

/// How long [`kill_launcher_tree`] waits for the launcher to stop before killing regardless.
const STOP_WAIT: Duration = Duration::from_millis(500);

/// Ends a bubblewrap launcher (`pid`, leader of its own group) and everything it started.
///
/// Killing only the launcher is not enough: its child (the sandbox's PID 1) sets its parent-death
/// signal late in its setup and, before that, waits on an eventfd the launcher writes, so a
/// launcher killed in the first milliseconds leaves that child behind (re-parented to PID 1),
/// stuck or going on to start the command. So: SIGSTOP the launcher (a stopped process can neither
/// clone nor reap, so the children read next are exactly its children and their pids cannot be
/// reused), wait until it is stopped, SIGKILL each child (a PID namespace's init: the kernel then
/// kills every process of that namespace), then SIGKILL the launcher's group.
///
/// Synchronous and bounded (at most [`STOP_WAIT`] of polling, usually none).
pub(crate) fn kill_launcher_tree(pid: i32) {
    if pid <= 1 {
        return;
    }
    // SAFETY: plain kill(2) on a process this crate started and has not reaped.
    if unsafe { libc::kill(pid, libc::SIGSTOP) } == 0 {
        let start = Instant::now();
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat_state(&stat).is_none_or(state_is_settled) || start.elapsed() >= STOP_WAIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in parse_children(&children) {
            // SAFETY: `child` is a child of our stopped, unreaped launcher: its pid is its own.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
    }
    signal_group(pid, libc::SIGKILL);
    // SAFETY: as above; the launcher may have left its group (it has not: setsid before exec).
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// The state letter of a `/proc/<pid>/stat` line (pure); `None` when it cannot be read.
fn stat_state(stat: &str) -> Option<char> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.trim_start().chars().next()
}

/// A state in which the process runs no more code: stopped, traced, zombie or dead.
fn state_is_settled(state: char) -> bool {
    matches!(state, 'T' | 't' | 'Z' | 'X' | 'x')
}

/// The pids of a `/proc/<pid>/task/<tid>/children` file (pure).
fn parse_children(text: &str) -> Vec<i32> {
    text.split_ascii_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .filter(|p| *p > 1)
        .collect()
}

/// How a dropped run's processes are killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupKind {
    /// A process group of the Landlock-only path: SIGKILL to the group.
    Group,
    /// A bubblewrap launcher: [`kill_launcher_tree`].
    Launcher,
}

/// Ends the processes of `pgid` the way `kind` needs.
pub(crate) fn kill_tree(pgid: i32, kind: GroupKind) {
    match kind {
        GroupKind::Group => {
            signal_group(pgid, libc::SIGKILL);
        }
        GroupKind::Launcher => kill_launcher_tree(pgid),
    }
}

/// Kills the tree when dropped while armed (a run future dropped by a hard deadline).
pub(crate) struct GroupGuard {
    pub(crate) pgid: i32,
    pub(crate) kind: GroupKind,
    pub(crate) armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            tracing::warn!(
                pgid = self.pgid,
                "run dropped before completion; killing its process tree"
            );
            kill_tree(self.pgid, self.kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn stat_states_are_read_after_the_last_parenthesis() {
        assert_eq!(stat_state("42 (bwrap) T 1 42 42 0"), Some('T'));
        assert_eq!(stat_state("42 (a) b) (c) S 1"), Some('S'));
        assert_eq!(stat_state(""), None);
        assert!(state_is_settled('T') && state_is_settled('Z') && state_is_settled('t'));
        assert!(!state_is_settled('S') && !state_is_settled('R') && !state_is_settled('D'));
    }

    #[test]
    fn children_lists_parse_and_skip_nonsense() {
        assert_eq!(parse_children("123 456 \n"), vec![123, 456]);
        assert_eq!(parse_children(""), Vec::<i32>::new());
        assert_eq!(parse_children("1 0 -5 x 77"), vec![77]);
    }

    #[test]
    fn a_stopped_launcher_and_its_children_are_killed() {
        // A real parent with a real child: both gone after the call.
        let mut parent = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 977.4201 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = parent.id() as i32;
        let start = Instant::now();
        let children = loop {
            let c = parse_children(
                &std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                    .unwrap_or_default(),
            );
            if !c.is_empty() {
                break c;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no child appeared"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        kill_launcher_tree(pid);
        let status = parent.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        // The child was SIGKILLed directly (not only through its parent's death).
        let start = Instant::now();
        while children.iter().any(|c| {
            std::fs::read_to_string(format!("/proc/{c}/stat"))
                .ok()
                .and_then(|s| stat_state(&s))
                .is_some_and(|s| s != 'Z')
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "child still alive"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
