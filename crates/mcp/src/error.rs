//! Errors of the MCP client, each with the lifecycle [`Stage`] (shared by every crate) where it
//! happened, and a stable machine code.

use std::time::Duration;

pub use aibuddy_common::Stage;

/// The former name of [`Stage`] in this crate, kept so existing callers compile. An MCP failure
/// belongs to Discovery, Parameters or Execution.
pub type McpStage = Stage;

/// Longest error message (or cancel reason) of a server kept in an [`McpError`]; the rest is
/// cut with a note, so a megabyte error text reaches neither the model nor a log whole.
pub const MAX_SERVER_MESSAGE_CHARS: usize = 4_096;

/// A failed MCP call or lookup.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    #[error("unknown MCP server \"{server}\"")]
    UnknownServer { server: String },
    #[error("unknown MCP tool \"{name}\"")]
    UnknownTool { name: String },
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("MCP server \"{server}\" is not available: {reason}")]
    ServerUnavailable { server: String, reason: String },
    #[error("{tool} timed out after {}s", after.as_secs_f64())]
    Timeout { tool: String, after: Duration },
    #[error("{tool} was cancelled")]
    Cancelled { tool: String },
    #[error("MCP server \"{server}\" connection lost during {tool}: {reason}")]
    ConnectionLost {
        server: String,
        tool: String,
        reason: String,
    },
    #[error("MCP server \"{server}\" returned an error for {tool}: {message} (code {code})")]
    Server {
        server: String,
        tool: String,
        code: i32,
        message: String,
    },
    #[error("MCP protocol failure with \"{server}\": {message}")]
    Protocol { server: String, message: String },
    /// The server refused the call with 403 `insufficient_scope`: the token lacks a scope this
    /// tool needs. The connection stays up; a login asking for the scope fixes it.
    #[error("MCP server \"{server}\" refused {tool}: the authorization lacks {}; run `aibuddy mcp login {server}` to grant it", scope_words(.scope.as_deref()))]
    InsufficientScope {
        server: String,
        tool: String,
        scope: Option<String>,
    },
}

fn scope_words(scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("the scope \"{scope}\""),
        None => "a scope the tool needs (the server named none)".to_string(),
    }
}

impl McpError {
    /// The stage this failure belongs to.
    pub fn stage(&self) -> Stage {
        match self {
            McpError::UnknownServer { .. } | McpError::UnknownTool { .. } => Stage::Discovery,
            McpError::InvalidArguments { .. } => Stage::Parameters,
            // JSON-RPC "invalid params" from the server means the arguments did not fit.
            McpError::Server { code, .. } if *code == -32602 => Stage::Parameters,
            McpError::ServerUnavailable { .. }
            | McpError::Timeout { .. }
            | McpError::Cancelled { .. }
            | McpError::ConnectionLost { .. }
            | McpError::Server { .. }
            | McpError::Protocol { .. } => Stage::Execution,
            McpError::InsufficientScope { .. } => Stage::Authorization,
        }
    }

    /// A stable snake_case code for typed tool errors (never parsed from the message).
    pub fn code(&self) -> &'static str {
        match self {
            McpError::UnknownServer { .. } => "unknown_server",
            McpError::UnknownTool { .. } => "unknown_tool",
            McpError::InvalidArguments { .. } => "invalid_arguments",
            McpError::ServerUnavailable { .. } => "server_unavailable",
            McpError::Timeout { .. } => "timeout",
            McpError::Cancelled { .. } => "cancelled",
            McpError::ConnectionLost { .. } => "connection_lost",
            McpError::Server { .. } => "server_error",
            McpError::Protocol { .. } => "protocol",
            McpError::InsufficientScope { .. } => "insufficient_scope",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_distinct() {
        let errors = [
            McpError::UnknownServer { server: "s".into() },
            McpError::UnknownTool { name: "t".into() },
            McpError::InvalidArguments {
                tool: "t".into(),
                message: "m".into(),
            },
            McpError::ServerUnavailable {
                server: "s".into(),
                reason: "r".into(),
            },
            McpError::Timeout {
                tool: "t".into(),
                after: Duration::from_secs(1),
            },
            McpError::Cancelled { tool: "t".into() },
            McpError::ConnectionLost {
                server: "s".into(),
                tool: "t".into(),
                reason: "r".into(),
            },
            McpError::Server {
                server: "s".into(),
                tool: "t".into(),
                code: 1,
                message: "m".into(),
            },
            McpError::Protocol {
                server: "s".into(),
                message: "m".into(),
            },
            McpError::InsufficientScope {
                server: "s".into(),
                tool: "t".into(),
                scope: None,
            },
        ];
        let codes: Vec<&str> = errors.iter().map(McpError::code).collect();
        assert_eq!(
            codes,
            [
                "unknown_server",
                "unknown_tool",
                "invalid_arguments",
                "server_unavailable",
                "timeout",
                "cancelled",
                "connection_lost",
                "server_error",
                "protocol",
                "insufficient_scope"
            ]
        );
    }

    #[test]
    fn stages() {
        assert_eq!(
            McpError::UnknownTool { name: "x".into() }.stage(),
            Stage::Discovery
        );
        assert_eq!(
            McpError::UnknownServer { server: "x".into() }.stage(),
            Stage::Discovery
        );
        assert_eq!(
            McpError::InvalidArguments {
                tool: "t".into(),
                message: "m".into()
            }
            .stage(),
            Stage::Parameters
        );
        let server = |code| McpError::Server {
            server: "s".into(),
            tool: "t".into(),
            code,
            message: "m".into(),
        };
        assert_eq!(server(-32602).stage(), Stage::Parameters);
        assert_eq!(server(-32603).stage(), Stage::Execution);
        assert_eq!(
            McpError::Timeout {
                tool: "t".into(),
                after: Duration::from_secs(1)
            }
            .stage(),
            Stage::Execution
        );
        assert_eq!(
            McpError::Cancelled { tool: "t".into() }.stage(),
            Stage::Execution
        );
        assert_eq!(
            McpError::ServerUnavailable {
                server: "s".into(),
                reason: "r".into()
            }
            .stage(),
            Stage::Execution
        );
    }
}
