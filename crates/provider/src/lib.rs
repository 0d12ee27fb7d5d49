//! Model providers for aibuddy runs.
//!
//! - [`model`]: the provider-neutral conversation (assistant content kept exactly as received).
//! - [`request`]: [`ModelRequest`], [`ToolSpec`] and the two [`Presentation`]s of the defer decision.
//! - [`event`]: the streamed [`ProviderEvent`]s (pings included, for the idle watchdog).
//! - [`Provider`] and [`HttpProvider`]: Anthropic Messages, OpenAI Responses, Chat Completions.
//! - [`wire`]: pure request builders and stream parsers per format.
//! - [`config`], [`routes`]: settings types and the route capability table.
//! - [`error`], [`retry`]: typed errors with stages, retry classification and backoff.
//! - [`keys`]: API keys that never print, from the environment or the OS keyring.
//! - `testing` (feature): a scripted fake provider server that checks the protocol.

pub mod config;
pub mod error;
pub mod event;
pub mod http;
pub mod keys;
pub mod kind;
pub mod model;
pub mod provider;
pub mod request;
pub mod retry;
pub mod routes;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

pub use config::{
    BaseUrlFrom, BaseUrlOverrides, ProviderEntry, ProviderKind, ProvidersConfig, Route,
    ToolSearchMode,
};
pub use error::{ProviderError, Stage};
pub use event::{ProviderEvent, StopReason, Usage};
pub use http::EventStream;
pub use keys::{ApiKey, KeySource, KeyStore};
pub use model::{
    CallKind, ContentBlock, Conversation, Message, RawContent, ResultBlock, Role, image_data_url,
    image_placeholder,
};
pub use provider::{HttpProvider, Provider};
pub use request::{ModelRequest, Presentation, TOOL_SEARCH_NAME, ToolSpec};
pub use retry::{BackoffPolicy, RetryDecision};
