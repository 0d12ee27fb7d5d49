//! The lifecycle stage each checkpoint use-case failure belongs to, so every host (the CLI, the
//! window) reports it the same way: an unknown or unfit call or run is a Parameters error; a
//! call still running is refused at Authorization (rewinding under it would race its writes);
//! the store, the snapshot and the task are Execution.

use aibuddy_common::Stage;

use super::CheckpointUseError;

impl CheckpointUseError {
    /// The stage this failure belongs to.
    pub fn stage(&self) -> Stage {
        match self {
            CheckpointUseError::CallNotFound(_)
            | CheckpointUseError::NoCheckpoint(_)
            | CheckpointUseError::EmptyRun(_)
            | CheckpointUseError::OtherProject { .. }
            | CheckpointUseError::NotInRun { .. } => Stage::Parameters,
            CheckpointUseError::StillRunning(_) => Stage::Authorization,
            CheckpointUseError::Checkpoint(e) => e.stage(),
            CheckpointUseError::Store(_) | CheckpointUseError::Task(_) => Stage::Execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_targets_are_parameters_and_a_running_call_is_authorization() {
        assert_eq!(
            CheckpointUseError::CallNotFound("c".into()).stage(),
            Stage::Parameters
        );
        assert_eq!(
            CheckpointUseError::OtherProject { call: "c".into() }.stage(),
            Stage::Parameters
        );
        assert_eq!(
            CheckpointUseError::StillRunning("c".into()).stage(),
            Stage::Authorization
        );
        assert_eq!(
            CheckpointUseError::Task("x".into()).stage(),
            Stage::Execution
        );
    }
}
