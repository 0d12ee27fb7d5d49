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
