//! The store's typed error.

use std::path::PathBuf;

/// Everything that can go wrong in the store. Callers map these to the `Execution` stage when a
/// call could not be persisted and to `Projection` when only a compacted projection failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("schema migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error(
        "database schema version {found} is newer than this build understands (max {supported}); \
         upgrade aibuddy or point it at another data directory"
    )]
    SchemaTooNew { found: usize, supported: usize },
    #[error(
        "database schema version {found} is older than {expected}; open it with Store::open to migrate"
    )]
    SchemaOutdated { found: usize, expected: usize },
    #[error("i/o on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid id {id:?}: {reason}")]
    InvalidId { id: String, reason: &'static str },
    #[error("tool call {0} not found")]
    CallNotFound(String),
    #[error("tool call {0} already exists")]
    DuplicateCall(String),
    #[error("tool call {id} is {status}, expected running")]
    NotRunning { id: String, status: String },
    #[error("run {0} not found")]
    RunNotFound(String),
    #[error("run {0} already exists")]
    DuplicateRun(String),
    #[error("run {id} is {status}, not running in this process")]
    RunNotRunning { id: String, status: String },
    #[error("run {0} is running in another live process")]
    RunBusy(String),
    #[error("invalid message: {0}")]
    InvalidMessage(String),
    #[error("stored value is corrupt: {0}")]
    Corrupt(String),
    #[error("transaction failed: {0}")]
    Transaction(String),
    #[error("the store's writer thread has stopped")]
    Closed,
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
