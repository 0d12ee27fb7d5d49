//! What a provider stream yields. Every chunk that arrives surfaces as an event (pings and SSE
//! comments as [`ProviderEvent::Ping`]), so the caller's idle watchdog re-arms on each one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{CallKind, Message};

/// Token usage as reported by the provider (fields absent in a format stay 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Keeps the larger of each field (Anthropic reports cumulative counts twice).
    pub fn merge_max(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.max(other.input_tokens);
        self.output_tokens = self.output_tokens.max(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.max(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.max(other.cache_write_tokens);
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    /// The answer reached its output limit (Anthropic `max_tokens`, Chat `length`, Responses
    /// `incomplete` with `max_output_tokens`).
    MaxTokens,
    /// The model declined to answer (Anthropic `refusal`).
    Refusal,
    /// Anthropic `pause_turn`: the server paused a long turn; sending the conversation back
    /// (the paused assistant content last) lets it continue.
    PauseTurn,
    /// Content filter or anything else, with the provider's word for it.
    Other(String),
}

impl StopReason {
    /// The reason in one word: `end_turn`, `tool_use`, `max_tokens`, `refusal`, `pause_turn`, or
    /// the provider's own word for any other reason (verbatim).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Other(s) => s,
        }
    }

    /// The model finished on its own (its answer is complete, or it asked for tools).
    pub fn is_normal(&self) -> bool {
        matches!(self, StopReason::EndTurn | StopReason::ToolUse)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// The response started (HTTP headers received and the first event parsed).
    MessageStart {
        id: Option<String>,
    },
    TextDelta {
        text: String,
    },
    ToolCallStart {
        id: String,
        name: String,
        kind: CallKind,
    },
    ToolCallArgsDelta {
        id: String,
        delta: String,
    },
    /// The call's complete input. Arguments that are not valid JSON are kept as a JSON string
    /// holding the raw text, so the Parameters stage can report them to the model.
    ToolCallEnd {
        id: String,
        name: String,
        input: Value,
    },
    /// A keep-alive: a provider `ping`, an SSE comment, or a chunk that completed no event.
    Ping,
    Usage(Usage),
    Stop(StopReason),
    /// The complete assistant message (parsed view plus the provider's raw blocks). Last event.
    MessageEnd {
        message: Message,
    },
}
