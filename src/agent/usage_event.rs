//! The context meter's numbers: how much of the model's context window the conversation takes,
//! sent as [`RunEvent::Usage`] after each model step and once when a stored run is continued.
//! The decisions (prompt size, whether the window is known, the threshold) are pure; the loop
//! emits the event.

use aibuddy_provider::{ProviderKind, Route, Usage as ProviderUsage, routes};
use aibuddy_store::Conversation;

use super::Agent;
use super::compact_step::last_usage;
use super::compaction::{LastUsage, prompt_tokens};
use super::events::{RunEvent, RunEventSink};

/// The window a run's compaction measures against, and whether anything actually knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub tokens: u64,
    pub known: bool,
}

/// Whether `route`'s context window is known rather than the provider kind's assumed default:
/// true when the agent's options override it, when a `providers.NAME.context_window` setting
/// named it (the route's window differs from the table's answer), or when the model is in the
/// table. The table's rules are by model name and apply to every kind; only its fallback depends
/// on the kind, so a model is in the table exactly when two kinds with different fallbacks give
/// the same answer. Pure.
pub fn window_known(route: &Route, override_tokens: Option<u64>) -> bool {
    if override_tokens.is_some() {
        return true;
    }
    if route.context_window != routes::context_window(route.kind, &route.model) {
        return true;
    }
    routes::context_window(ProviderKind::OpenAiChat, &route.model)
        == routes::context_window(ProviderKind::Anthropic, &route.model)
}

/// The threshold share as compaction applies it: in (0, 1], anything else counts as 1.
pub fn effective_threshold(threshold: f64) -> f64 {
    if threshold.is_finite() && threshold > 0.0 {
        threshold.min(1.0)
    } else {
        1.0
    }
}

/// The event for one step whose prompt took `last.input_tokens` and whose answer
/// `last.output_tokens`. Pure.
pub fn usage_event(last: LastUsage, window: Window, threshold: f64) -> RunEvent {
    RunEvent::Usage {
        input_tokens: last.input_tokens,
        output_tokens: last.output_tokens,
        context_tokens: last.input_tokens.saturating_add(last.output_tokens),
        window_tokens: window.tokens,
        window_known: window.known,
        compaction_threshold: effective_threshold(threshold),
    }
}

/// A step's usage as reported by the provider of `kind` (`ProviderKind::as_str`), None when it
/// reported nothing. Pure.
pub fn step_usage(kind: &str, usage: &ProviderUsage) -> Option<LastUsage> {
    if *usage == ProviderUsage::default() {
        return None;
    }
    Some(LastUsage {
        input_tokens: prompt_tokens(
            Some(kind),
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        ),
        output_tokens: usage.output_tokens,
    })
}

/// The meter's event for a stored run that is only viewed (not run): its last step's usage
/// against the window of the route it would continue on, under `options`; None when no usage can
/// be trusted (none reported, or a summary written since). Pure.
pub fn stored_usage(
    conv: &Conversation,
    route: &Route,
    options: &super::AgentOptions,
) -> Option<RunEvent> {
    let last = last_usage(conv)?;
    let window = Window {
        tokens: options
            .compaction
            .context_window
            .unwrap_or(route.context_window),
        known: window_known(route, options.compaction.context_window),
    };
    Some(usage_event(last, window, options.compaction.threshold))
}

impl Agent {
    /// The window this agent's compaction measures against, and whether it is known.
    pub(crate) fn window(&self) -> Window {
        Window {
            tokens: self.context_window(),
            known: window_known(
                self.provider.route(),
                self.options.compaction.context_window,
            ),
        }
    }

    /// Emits the meter's event for a step's usage (nothing when the provider reported none).
    pub(crate) fn emit_step_usage(
        &self,
        kind: &str,
        usage: &ProviderUsage,
        events: &dyn RunEventSink,
    ) {
        if let Some(last) = step_usage(kind, usage) {
            events.emit(usage_event(
                last,
                self.window(),
                self.options.compaction.threshold,
            ));
        }
    }

    /// Emits the meter's event for a continued run: its last step's usage, unless a summary
    /// written since made those counts stale (the next step reports fresh ones).
    pub(crate) fn emit_stored_usage(&self, conv: &Conversation, events: &dyn RunEventSink) {
        if let Some(last) = last_usage(conv) {
            events.emit(usage_event(
                last,
                self.window(),
                self.options.compaction.threshold,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy_provider::{BaseUrlFrom, Presentation};

    fn route(kind: ProviderKind, model: &str, window: u64) -> Route {
        Route {
            name: "t".into(),
            kind,
            model: model.into(),
            base_url: "http://127.0.0.1:1".into(),
            first_party: false,
            base_url_from: BaseUrlFrom::Settings,
            presentation: Presentation::ActiveTools,
            context_window: window,
            stream: None,
            images: true,
        }
    }

    #[test]
    fn a_window_is_known_from_the_table_a_setting_or_an_override() {
        use ProviderKind::*;
        // In the table, on any kind (gpt-4o's 128k equals the Responses fallback: still known).
        assert!(window_known(
            &route(Anthropic, "claude-sonnet-4-6", 200_000),
            None
        ));
        assert!(window_known(
            &route(OpenAiResponses, "gpt-4o-mini", 128_000),
            None
        ));
        assert!(window_known(&route(OpenAiChat, "gpt-5.4", 400_000), None));
        // Not in the table: the kind's fallback is only assumed.
        assert!(!window_known(&route(OpenAiChat, "qwen3:8b", 32_768), None));
        assert!(!window_known(
            &route(OpenAiResponses, "my-model", 128_000),
            None
        ));
        // A setting named it (differs from the table's answer), or the agent overrides it.
        assert!(window_known(&route(OpenAiChat, "qwen3:8b", 40_960), None));
        assert!(window_known(
            &route(OpenAiChat, "qwen3:8b", 32_768),
            Some(32_768)
        ));
    }

    #[test]
    fn the_event_counts_the_prompt_with_its_cache_and_the_answer() {
        let usage = ProviderUsage {
            input_tokens: 1_000,
            output_tokens: 200,
            cache_read_tokens: 30_000,
            cache_write_tokens: 500,
        };
        let window = Window {
            tokens: 200_000,
            known: true,
        };
        let anthropic = step_usage("anthropic", &usage).unwrap();
        assert_eq!(
            usage_event(anthropic, window, 0.8),
            RunEvent::Usage {
                input_tokens: 31_500,
                output_tokens: 200,
                context_tokens: 31_700,
                window_tokens: 200_000,
                window_known: true,
                compaction_threshold: 0.8,
            }
        );
        // OpenAI formats count cached tokens inside input_tokens.
        let chat = step_usage("openai-chat", &usage).unwrap();
        assert_eq!(chat.input_tokens, 1_000);
        assert_eq!(step_usage("anthropic", &ProviderUsage::default()), None);
    }

    #[test]
    fn thresholds_outside_the_unit_interval_count_as_one() {
        assert_eq!(effective_threshold(0.75), 0.75);
        assert_eq!(effective_threshold(1.5), 1.0);
        assert_eq!(effective_threshold(0.0), 1.0);
        assert_eq!(effective_threshold(f64::NAN), 1.0);
    }
}
