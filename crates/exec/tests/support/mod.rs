//! Shared helpers for the process tests.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy_exec::{ExecSink, Stream, group_alive};

/// Records every event in order.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<Event>>,
    pub start: Mutex<Option<Instant>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Out(Stream, Vec<u8>),
    Heartbeat(Duration),
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        let r = Arc::new(Self::default());
        *r.start.lock().unwrap() = Some(Instant::now());
        r
    }

    pub fn stream(&self, which: Stream) -> Vec<u8> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Out(s, c) if *s == which => Some(c.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    pub fn heartbeats(&self) -> Vec<Duration> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Heartbeat(at) => Some(*at),
                _ => None,
            })
            .collect()
    }
}

impl ExecSink for Recorder {
    fn output(&self, stream: Stream, chunk: &[u8]) {
        self.events
            .lock()
            .unwrap()
            .push(Event::Out(stream, chunk.to_vec()));
    }
    fn heartbeat(&self) {
        let at = self
            .start
            .lock()
            .unwrap()
            .map(|s| s.elapsed())
            .unwrap_or_default();
        self.events.lock().unwrap().push(Event::Heartbeat(at));
    }
}

/// Asserts the group is gone now (kill(-pgid, 0) == ESRCH).
pub fn assert_group_gone(pgid: i32) {
    assert!(pgid > 1);
    assert!(
        !group_alive(pgid),
        "process group {pgid} still has processes"
    );
}

/// Waits for the group to disappear (for processes we do not wait on ourselves).
pub fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    while group_alive(pgid) {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Host pids of live processes whose argv is exactly `args` (zombies excluded).
pub fn processes_with_args(args: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<&[u8]> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        let matches = argv.len() == args.len()
            && argv
                .iter()
                .zip(args)
                .all(|(a, want)| a.ends_with(want.as_bytes()));
        if matches {
            found.push(pid);
        }
    }
    found
}

/// Waits until no process has argv `args`; `false` if some remain after `limit`.
pub fn wait_no_process_with_args(args: &[&str], limit: Duration) -> bool {
    let start = Instant::now();
    while !processes_with_args(args).is_empty() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Directories the namespace path replaces by a private tmpfs (`bwrap::MASKED_DIRS`): anything
/// under them is invisible to a sandboxed command.
const MASKED: [&str; 3] = ["/tmp", "/run", "/var/run"];

/// Whether every ancestor of `dir` lets any user pass (`o+x`), so a dropped user reaches it.
fn world_traversable(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    dir.ancestors().all(|a| {
        std::fs::metadata(a).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
    })
}

/// Where [`visible_tempdir`] makes its directories: the first candidate that exists, lies outside
/// the masked directories and that every user can reach. Not `CARGO_TARGET_TMPDIR` by default:
/// it lives in the clone, which may be under `/tmp` (invisible in the sandbox) or `/root` (mode
/// 0700, unreachable for `nobody`).
fn visible_base() -> std::path::PathBuf {
    let candidates = [
        std::path::PathBuf::from("/var/tmp"),
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    ];
    candidates
        .iter()
        .filter_map(|c| std::fs::canonicalize(c).ok())
        .find(|c| !MASKED.iter().any(|m| c.starts_with(m)) && world_traversable(c))
        .unwrap_or_else(|| {
            panic!("no directory outside {MASKED:?} that every user can reach among {candidates:?}")
        })
}

/// A fresh directory (mode 0755) that a sandboxed command sees as the host does (outside `/tmp`,
/// which the namespace path replaces) and that a dropped user (`nobody`) can reach, wherever the
/// repository is cloned. Removed on drop.
pub fn visible_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("aibuddy-exec-test-")
        .tempdir_in(visible_base())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Copies of the binaries `paths` in one fresh [`visible_tempdir`] (mode 0755, the file names
/// kept, so a program finds its companions beside it), for a dropped user who cannot reach the
/// clone (`/root` is 0700). Returns the directory (keep it while they run) and the copies.
pub fn reachable_copies(paths: &[&str]) -> (tempfile::TempDir, Vec<std::path::PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let dir = visible_tempdir();
    let copies = paths
        .iter()
        .map(|p| {
            let p = std::path::Path::new(p);
            let to = dir.path().join(p.file_name().unwrap());
            std::fs::copy(p, &to).unwrap();
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
            to
        })
        .collect();
    (dir, copies)
}
