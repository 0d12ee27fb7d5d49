//! Conversation compaction in the loop (the I/O around the pure decisions of `compaction`):
//! before a step is sent, estimate its size; past the threshold share of the context window, cut
//! at a turn boundary, have the provider summarize the older turns, store the summary (the
//! originals stay), and say so with a `compaction` event. The loop then rebuilds the request from
//! storage, which re-scans what is retained for deferred tools to reactivate.

use aibuddy_provider::{ModelRequest, Role};
use aibuddy_store::{ContextItem, Conversation, NewSummary, Store, Usage};
use tokio_util::sync::CancellationToken;

use super::Agent;
use super::compaction::{
    BYTES_PER_TOKEN, LastUsage, TurnView, cut_point, estimate_next_tokens, prompt_tokens,
    should_compact,
};
use super::events::{RunEvent, RunEventSink};
use super::summarize::{
    CONVERSATION_INSTRUCTION, SUMMARY_MAX_TOKENS, SummaryError, SummaryLimits, complete_text,
    summary_request, transcript,
};

/// What the compaction check did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Compacted {
    /// Under the threshold, or nothing to cut.
    No,
    /// A summary was stored: rebuild the request.
    Yes,
    /// The run was stopped during summarization.
    Cancelled,
    /// The summary passed the step time limit: the run ends `error` at Execution with this
    /// reason (nothing was written; the stored conversation stays whole).
    OverTime(String),
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The usage of the last step, unless a summary written after it made it stale.
pub(super) fn last_usage(conv: &Conversation) -> Option<LastUsage> {
    let last = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == aibuddy_store::MessageRole::Assistant)?;
    let u = last.usage.as_ref()?;
    let newest_summary = conv.summaries.iter().map(|s| s.created_at_ms).max();
    if newest_summary.is_some_and(|at| at >= last.created_at_ms) {
        return None;
    }
    Some(LastUsage {
        input_tokens: prompt_tokens(
            last.provider_kind.as_deref(),
            u64_of(u.input_tokens),
            u64_of(u.cache_read_tokens),
            u64_of(u.cache_write_tokens),
        ),
        output_tokens: u64_of(u.output_tokens),
    })
}

/// Bytes of the request's messages after its last assistant message (what the provider has not
/// counted yet).
fn appended_bytes(req: &ModelRequest) -> u64 {
    let start = req
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    req.messages[start..]
        .iter()
        .map(|m| {
            let json = serde_json::to_string(m).map_or(0, |s| s.len() as u64);
            // An image costs the tokens of its pixels, not of its base64 text.
            let (data, count) = image_bytes(m);
            json.saturating_sub(data)
                .saturating_add(count.saturating_mul(IMAGE_TOKENS * BYTES_PER_TOKEN))
        })
        .sum()
}

/// The tokens one bounded image is counted as (about `width * height / 750` at the bound of
/// `crate::results::images`, Anthropic's rule; OpenAI's high detail is of the same order).
const IMAGE_TOKENS: u64 = 1_600;

/// The base64 bytes and the number of the images in a message's tool results.
fn image_bytes(m: &aibuddy_provider::Message) -> (u64, u64) {
    let mut out = (0, 0);
    for b in &m.content {
        if let aibuddy_provider::ContentBlock::ToolResult { content, .. } = b {
            for c in content {
                if let aibuddy_provider::ResultBlock::Image { data, .. } = c {
                    out.0 += data.len() as u64;
                    out.1 += 1;
                }
            }
        }
    }
    out
}

impl Agent {
    /// The context window compaction measures against.
    pub(super) fn context_window(&self) -> u64 {
        self.options
            .compaction
            .context_window
            .unwrap_or(self.provider.route().context_window)
    }

    /// Compacts the stored conversation when `req` (the next request as built) would pass the
    /// threshold. A failed summary leaves the conversation as it is (logged; the step goes on),
    /// except one past the step time limit, which ends the run ([`Compacted::OverTime`]).
    pub(crate) async fn maybe_compact(
        &self,
        store: &Store,
        run_id: &str,
        req: &ModelRequest,
        cancel: &CancellationToken,
        events: &dyn RunEventSink,
    ) -> Compacted {
        let opts = &self.options.compaction;
        let conv = match store.conversation(run_id).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(run = %run_id, "compaction skipped, conversation unreadable: {e}");
                return Compacted::No;
            }
        };
        let last = last_usage(&conv);
        // The whole body is measured only when no usage can be trusted (it costs a serialization).
        let body_bytes = match last {
            Some(_) => 0,
            None => self
                .provider
                .request_body(req)
                .map(|b| b.to_string().len() as u64)
                .unwrap_or(0),
        };
        let estimated = estimate_next_tokens(last, appended_bytes(req), body_bytes);
        let window = self.context_window();
        if !should_compact(estimated, window, opts.threshold) {
            return Compacted::No;
        }
        let views: Vec<TurnView> = conv.messages.iter().map(TurnView::of).collect();
        let Some(cut) = cut_point(&views, &conv.summaries, opts.keep_recent_turns) else {
            tracing::debug!(run = %run_id, estimated, window, "over the threshold, nothing to cut");
            return Compacted::No;
        };
        let covered: Vec<ContextItem<'_>> = conv
            .effective()
            .into_iter()
            .filter(|item| match item {
                ContextItem::Message(m) => m.seq <= cut.covers_to,
                ContextItem::Summary(s) => s.covers_to <= cut.covers_to,
            })
            .collect();
        let model = opts
            .summary_model
            .clone()
            .unwrap_or_else(|| self.provider.route().model.clone());
        let request = summary_request(
            &model,
            CONVERSATION_INSTRUCTION,
            transcript(&covered),
            SUMMARY_MAX_TOKENS,
        );
        tracing::info!(run = %run_id, estimated, window, from = cut.covers_from, to = cut.covers_to, "compacting the conversation");
        let (text, usage) = match complete_text(
            self.provider.as_ref(),
            &request,
            cancel,
            SummaryLimits::of(&self.options),
        )
        .await
        {
            Ok(r) => r,
            Err(SummaryError::Cancelled) => return Compacted::Cancelled,
            Err(e @ SummaryError::OverTime(_)) => {
                tracing::warn!(run = %run_id, "compaction ended the run: {e}");
                return Compacted::OverTime(format!("conversation compaction failed: {e}"));
            }
            Err(e) => {
                tracing::warn!(run = %run_id, "compaction failed, the conversation stays whole: {e}");
                return Compacted::No;
            }
        };
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let stored = store
            .append_summary(
                run_id,
                NewSummary {
                    covers_from: cut.covers_from,
                    covers_to: cut.covers_to,
                    text,
                    provider_kind: Some(self.provider.route().kind.as_str().to_string()),
                    model: Some(model),
                    usage: Some(Usage {
                        input_tokens: i(usage.input_tokens),
                        output_tokens: i(usage.output_tokens),
                        cache_read_tokens: i(usage.cache_read_tokens),
                        cache_write_tokens: i(usage.cache_write_tokens),
                    }),
                },
            )
            .await;
        if let Err(e) = stored {
            tracing::warn!(run = %run_id, "the summary could not be stored: {e}");
            return Compacted::No;
        }
        events.emit(RunEvent::Compaction {
            covers_from: cut.covers_from,
            covers_to: cut.covers_to,
        });
        Compacted::Yes
    }
}
