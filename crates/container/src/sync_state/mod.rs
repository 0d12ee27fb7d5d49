//! What a synced container holds and the bounds of a sync (`project: "sync"`): data the sandbox's
//! shared state keeps, apart from the sync itself (`sync/`), which reads and updates it.

pub(crate) mod manifest;

use std::time::Duration;

use manifest::Manifest;

/// The bounds of one sync (each direction, each command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncLimits {
    /// A file larger than this is neither copied in nor brought back (said on the call).
    pub max_file_bytes: u64,
    /// Bytes of files copied in, or brought back, per command.
    pub max_total_bytes: u64,
    /// Paths of the container's tree read at most (files, folders and links).
    pub max_entries: u64,
    /// Bytes of the container's tree read at most (the archive, unchanged files included).
    pub max_archive_bytes: u64,
    /// How long reading the container's tree back may take in all (a stop does not cut it
    /// short: what the command wrote before the stop is brought back within this bound). Each
    /// piece of it must arrive within the engine timeout.
    pub pull_time: Duration,
    /// From how many bytes of files in the container its tree is listed with its own `find`
    /// (GNU `-printf`, when it has one) and only what changed is read back; below, or `None`,
    /// or without it: the whole tree is read back (one request: cheaper for a small tree).
    pub list_from_bytes: Option<u64>,
}

impl Default for SyncLimits {
    fn default() -> Self {
        SyncLimits {
            max_file_bytes: 128 * 1024 * 1024,
            max_total_bytes: 1024 * 1024 * 1024,
            max_entries: 200_000,
            max_archive_bytes: 8 * 1024 * 1024 * 1024,
            pull_time: Duration::from_secs(300),
            list_from_bytes: Some(4 * 1024 * 1024),
        }
    }
}

/// The manifests of a sandbox's two containers (read-write and read-only commands).
#[derive(Debug, Default)]
pub(crate) struct SyncState {
    rw: tokio::sync::Mutex<Manifest>,
    ro: tokio::sync::Mutex<Manifest>,
    /// The image has no usable `find` (a listing failed once): the whole tree is read back.
    no_listing: std::sync::atomic::AtomicBool,
}

impl SyncState {
    pub(crate) fn of(&self, read_only: bool) -> &tokio::sync::Mutex<Manifest> {
        if read_only { &self.ro } else { &self.rw }
    }

    /// Whether to list the tree of a container holding `manifest` with its `find` (see
    /// `listing.rs`).
    pub(crate) fn listing(&self, limits: &SyncLimits, manifest: &Manifest) -> bool {
        let Some(from) = limits.list_from_bytes else {
            return false;
        };
        !self.no_listing.load(std::sync::atomic::Ordering::Relaxed) && manifest.file_bytes() >= from
    }

    pub(crate) fn listing_failed(&self, why: &str) {
        tracing::info!(
            why,
            "no usable `find` in the container: its whole tree is read back after each command"
        );
        self.no_listing
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
