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
    MaxTokens,
    /// Refusal, content filter, pause, or anything else, with the provider's word for it.
    Other(String),
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
