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
