//! aibuddy-mcp: the MCP client of aibuddy (built on `rmcp`).
//!
//! - [`config`]: the common `{"mcpServers": {...}}` format, project and user files, pure parsing
//!   with located problems (line, column, field path).
//! - [`McpManager`]: connects every server (stdio child processes, streamable HTTP), keeps a merged
//!   [`catalog`] of tools with qualified names ([`names`]) and risk ([`risk`]), follows
//!   `tools/list_changed`, reconnects crashed/hung/garbage-writing servers with backoff, and calls
//!   tools with timeouts, cancellation (`notifications/cancelled`) and progress.
//! - [`elicitation`]: server requests for user input go to an [`ElicitationBroker`] the host
//!   supplies (aibuddy routes them into its one broker for human questions; the terminal prompt
//!   lives in the CLI). This crate keeps only the protocol side.
//!
//! Seams: [`manager`] (public API) over `shared` (per-server slots, catalog), `supervisor`
//! (restart with backoff), `connection` (spawn or connect, handshake) and `event_loop` (tool
//! listing, breakage), `routing` (call dispatch, cancellation, health checks), `stdio` (the
//! process and its screened stdout), `handler` (server-to-client requests and notifications).
//!
//! Servers are untrusted parties: their annotations lower risk only for servers the person
//! marked `trustAnnotations` ([`risk`]); a stdio server gets the MCP SDKs' default environment
//! plus its configured `env`, nothing else ([`server_env`]); no reason, log line or error about a
//! server quotes its configured values ([`redact`]); a message over
//! [`DEFAULT_MAX_MESSAGE_BYTES`] is refused before it is held whole, and progress and log floods
//! are thinned. A stdio entry with `"sandbox"` runs under the confinement of commands
//! ([`config::sandbox`], [`sandbox_host`], `aibuddy_exec::spawn_server`), shown in its
//! [`ServerStatus::sandbox`].
//!
//! Protocol: the client asks for [`PROTOCOL_VERSION`] (`2025-11-25`, the newest revision with the
//! `initialize` handshake) and works with servers answering older versions such as `2024-11-05`.
//!
//! Defaults: connect timeout [`config::DEFAULT_CONNECT_TIMEOUT`] (30 s), call timeout
//! [`config::DEFAULT_CALL_TIMEOUT`] (120 s), reconnect backoff 1 s doubling to 60 s
//! ([`status::Backoff`]), health-check ping [`manager::DEFAULT_HEALTH_CHECK_TIMEOUT`] (5 s).

mod bearer;
pub mod catalog;
pub mod config;
mod connection;
pub mod elicitation;
pub mod error;
mod event_loop;
mod handler;
mod legacy;
pub mod listing;
pub mod manager;
pub mod names;
pub mod oauth;
mod options;
pub mod redact;
pub mod risk;
mod routing;
pub mod sandbox_host;
pub mod server_env;
mod shared;
pub mod sse;
pub mod status;
mod stdio;
mod supervisor;
mod wiring;

pub use catalog::McpToolEntry;
pub use config::{
    ConfigError, ConfigScope, LoadedConfigs, ServerConfig, Timeouts, Transport, load_server_configs,
};
pub use elicitation::{
    CallerElicitation, DeclineElicitation, ElicitationBroker, ElicitationRequest,
    ElicitationResponse, with_caller,
};
pub use error::{McpError, McpStage};
pub use handler::{McpProgress, PROTOCOL_VERSION, ProgressSink, client_config};
pub use manager::{McpCallResult, McpHandlers, McpManager, McpOptions};
pub use options::{SpawnCheck, SpawnGate};
pub use redact::Redactor;
pub use risk::{Hints, McpRisk, McpRiskLevel};
pub use sandbox_host::SandboxHost;
pub use server_env::{DEFAULT_INHERITED_ENV_VARS, server_environment};
pub use status::{Backoff, RejectedTool, SandboxStatus, ServerState, ServerStatus};
pub use stdio::DEFAULT_MAX_MESSAGE_BYTES;
