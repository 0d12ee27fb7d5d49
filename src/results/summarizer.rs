//! The `Summarizer` seam: model summarization for the `summarize` strategy. The agent layer backs
//! it with a provider; tests use a deterministic double. With none configured, `summarize` falls
//! back to `trim`.

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What to summarize.
#[derive(Debug, Clone)]
pub struct SummaryRequest<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    /// The model projection to summarize.
    pub text: &'a str,
    /// Aim for at most this many tokens.
    pub max_tokens: usize,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("summarization failed: {0}")]
pub struct SummarizeError(pub String);

#[async_trait]
pub trait Summarizer: Send + Sync {
    /// Must return promptly once `cancel` fires.
    async fn summarize(
        &self,
        req: &SummaryRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<String, SummarizeError>;
}
