//! Errors of the checkpoint store, each with the stage it belongs to: taking a snapshot before a
//! call or reading the store is Execution; a rewind that finds the tree changed is Verification.

use std::path::PathBuf;

use aibuddy_common::Stage;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint store: {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint store: the project walk failed: {0}")]
    Walk(String),
    #[error("checkpoint store: object {0} is missing or damaged")]
    MissingObject(String),
    #[error("checkpoint store: snapshot {id} is damaged: {reason}")]
    BadManifest { id: String, reason: String },
}

impl CheckpointError {
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CheckpointError::Io {
            what,
            path: path.into(),
            source,
        }
    }

    /// The stage this error belongs to.
    pub fn stage(&self) -> Stage {
        Stage::Execution
    }
}

pub type Result<T> = std::result::Result<T, CheckpointError>;
