//! Use cases both hosts run: the CLI (`src/bin/aibuddy`) and the desktop shell (`src-tauri`) call
//! these instead of writing them twice. Each answers with a value or a [`HostError`] naming its
//! stage; how the answer is shown (an exit code and stderr, or a `CommandError` to the window) is
//! the host's part.

pub mod mcp_login;
pub mod provider_keys;
pub mod stored_messages;

use crate::contract::Stage;

/// A use case refused or failed: the stage and a message meant for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HostError {
    pub stage: Stage,
    pub message: String,
}

impl HostError {
    pub fn new(stage: Stage, message: impl Into<String>) -> Self {
        HostError {
            stage,
            message: message.into(),
        }
    }
}
