//! How a run's loop ended (`End`), before `Agent::run` records it, and the stored form of a
//! step's usage.

use aibuddy_provider::{StopReason, Usage as ProviderUsage};
use aibuddy_store::{RunStatus, StoreError, Usage};

use crate::contract::Stage;

/// Longest stop reason kept (an unknown reason is the provider's word, kept verbatim up to this).
const STOP_REASON_CHARS: usize = 64;

/// How the loop ended, before it is recorded.
pub(super) struct End {
    pub status: RunStatus,
    pub stage: Option<Stage>,
    pub error: Option<String>,
    /// Why the model's last step stopped, when that is not "the model finished".
    pub stop_reason: Option<String>,
}

impl End {
    pub fn status(status: RunStatus) -> Self {
        End {
            status,
            stage: None,
            error: None,
            stop_reason: None,
        }
    }

    pub fn error(stage: Stage, message: String) -> Self {
        End {
            status: RunStatus::Error,
            stage: Some(stage),
            error: Some(message),
            stop_reason: None,
        }
    }

    /// The model's last step answered without tool calls: `completed`, flagged with the stop
    /// reason unless the model simply finished (cut at its output limit, refused, still paused,
    /// or a reason this build does not know, kept verbatim).
    pub fn answered(stop: &StopReason) -> Self {
        let stop_reason = (!stop.is_normal()).then(|| {
            stop.as_str()
                .chars()
                .filter(|c| !c.is_control())
                .take(STOP_REASON_CHARS)
                .collect()
        });
        End {
            stop_reason,
            ..End::status(RunStatus::Completed)
        }
    }

    pub fn store(e: StoreError) -> Self {
        End::error(Stage::Execution, format!("run storage failed: {e}"))
    }
}

/// A step's usage as the store keeps it (saturating: the store's columns are signed).
pub(super) fn stored_usage(u: ProviderUsage) -> Usage {
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    Usage {
        input_tokens: i(u.input_tokens),
        output_tokens: i(u.output_tokens),
        cache_read_tokens: i(u.cache_read_tokens),
        cache_write_tokens: i(u.cache_write_tokens),
    }
}
