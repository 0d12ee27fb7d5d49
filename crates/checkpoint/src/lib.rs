//! aibuddy-checkpoint: checkpoints of a project tree, so every change a call makes inside the
//! project can be put back.
//!
//! - `objects`: the content-addressed store (SHA-256, deflate where it pays, atomic writes).
//! - `manifest`: a snapshot's tree manifest (kind, mode, size, mtime, ctime, inode, content id
//!   of every entry; entries seen but not checkpointed with their reason).
//! - `snapshot`: the stat walk under the project's ignore rules (the sandbox's walk rules,
//!   hidden files included, `.git` left out) with the stat cache, so an unchanged tree costs a
//!   walk and no reads.
//! - `walk`: the stat walk itself (parallel, by folder handle), comparing with the stat cache
//!   as it goes; `dircache`: the folder listings it reuses where a folder and its ignore rules
//!   are unchanged (no listing, no ignore matching).
//! - `store`: `CheckpointStore`, one project's checkpoints in the data directory.
//! - `diff`: the pure change set of two manifests (added, modified, deleted, renamed, mode,
//!   symlink and type changes; skipped paths with the reason).
//! - `restore`: the pure rewind plan (conflicts: paths changed since the call) and its
//!   application through the project's root `Dir`, atomically per file.
//! - `text`: per-file unified diffs for previews.
//!
//! Not covered (and said so by every preview): paths the project's ignore rules leave out, files
//! over the size cap, special files, and anything outside the project.

pub mod diff;
mod dircache;
mod error;
mod lock;
pub mod manifest;
pub mod objects;
mod options;
pub mod restore;
pub mod snapshot;
mod statcache;
mod store;
pub mod text;
mod walk;

pub use diff::{ChangeKind, ChangeSet, EntryState, FileChange, SkippedChange, diff};
pub use error::{CheckpointError, Result};
pub use lock::CallLock;
pub use manifest::{Entry, Kind, Manifest, SkipReason};
pub use restore::{Conflict, Failure, Plan};
pub use snapshot::{DEFAULT_MAX_FILE_BYTES, SnapshotOptions, SnapshotStats};
pub use store::{CheckpointStore, SharedSnapshot, Snapshot, project_key};
pub use text::{FileDiff, file_diff};
