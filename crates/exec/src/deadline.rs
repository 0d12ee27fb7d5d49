//! The caller-side hard deadline: ends a call whose sandbox operation never returns.

use std::future::Future;
use std::time::Duration;

use crate::error::ExecError;

/// Grace the caller adds to the sandbox timeout before giving up on the operation (30 s).
pub const HARD_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// Awaits `fut` for at most `sandbox_timeout + grace`; past that, drops it and returns
/// [`ExecError::HardDeadline`] (Execution stage) naming both numbers.
///
/// Dropping the future must release its resources (the runner's child is `kill_on_drop` and its
/// group is killed by the caller's cancellation token, which callers should fire too).
pub async fn with_hard_deadline<F, T>(
    fut: F,
    sandbox_timeout: Duration,
    grace: Duration,
) -> Result<T, ExecError>
where
    F: Future<Output = T>,
{
    let deadline = sandbox_timeout.saturating_add(grace);
    match tokio::time::timeout(deadline, fut).await {
        Ok(value) => Ok(value),
        Err(_) => {
            tracing::warn!(
                deadline_ms = deadline.as_millis() as u64,
                "hard deadline fired"
            );
            Err(ExecError::HardDeadline {
                deadline,
                sandbox_timeout,
                grace,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn never_returning_future_hits_the_deadline() {
        let err = with_hard_deadline(
            std::future::pending::<()>(),
            Duration::from_millis(30),
            Duration::from_millis(20),
        )
        .await
        .unwrap_err();
        assert!(matches!(
            err,
            ExecError::HardDeadline { deadline, .. } if deadline == Duration::from_millis(50)
        ));
        assert_eq!(err.stage(), crate::ErrorStage::Execution);
        assert!(err.to_string().contains("hard deadline of 50 ms"), "{err}");
    }

    #[tokio::test]
    async fn prompt_future_passes_through() {
        let v = with_hard_deadline(async { 7 }, Duration::from_secs(1), HARD_DEADLINE_GRACE)
            .await
            .unwrap();
        assert_eq!(v, 7);
    }
}
