//! The project's call lock: mutating calls of one project take it for their whole
//! before-snapshot → call → after-snapshot window, so two such calls never run at once and each
//! change set holds only its own call's changes (read-only calls never take it).
//!
//! An exclusive `flock` on `<store>/calls.lock`: it serializes the calls of every process on the
//! project (two `aibuddy call`s, a run and the window), and the kernel releases it when its
//! holder dies, so a `kill -9` never leaves the project locked. Within one process the caller
//! queues first on an async mutex (`src/checkpoints`), so waiting costs no thread.

use std::fs::File;
use std::path::Path;

use crate::error::{CheckpointError, Result};

/// Held while a mutating call runs; dropping it lets the next one start.
#[derive(Debug)]
pub struct CallLock {
    _file: File,
}

impl CallLock {
    /// Blocks until the lock of the store folder `dir` is free, then holds it.
    pub(crate) fn acquire(dir: &Path) -> Result<CallLock> {
        let path = dir.join("calls.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CheckpointError::io("open lock", &path, e))?;
        loop {
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => return Ok(CallLock { _file: file }),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(CheckpointError::io("lock", &path, e.into())),
            }
        }
    }
}
