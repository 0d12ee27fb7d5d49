//! Errors of the MCP client, each mapped to the lifecycle stage where it happened.

use std::time::Duration;

use serde::Serialize;

/// The stages an MCP failure can belong to (a subset of the core's `Stage`; the core maps them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpStage {
    /// The name does not lead to a known tool.
    Discovery,
    /// The arguments do not fit the tool's schema (checked locally or rejected by the server).
    Parameters,
    /// Timeout, cancellation, a lost or unavailable server, a protocol failure.
    Execution,
}

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
}

impl McpError {
    /// The stage this failure belongs to.
    pub fn stage(&self) -> McpStage {
        match self {
            McpError::UnknownServer { .. } | McpError::UnknownTool { .. } => McpStage::Discovery,
            McpError::InvalidArguments { .. } => McpStage::Parameters,
            // JSON-RPC "invalid params" from the server means the arguments did not fit.
            McpError::Server { code, .. } if *code == -32602 => McpStage::Parameters,
            McpError::ServerUnavailable { .. }
            | McpError::Timeout { .. }
            | McpError::Cancelled { .. }
            | McpError::ConnectionLost { .. }
            | McpError::Server { .. }
            | McpError::Protocol { .. } => McpStage::Execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages() {
        assert_eq!(
            McpError::UnknownTool { name: "x".into() }.stage(),
            McpStage::Discovery
        );
        assert_eq!(
            McpError::UnknownServer { server: "x".into() }.stage(),
            McpStage::Discovery
        );
        assert_eq!(
            McpError::InvalidArguments {
                tool: "t".into(),
                message: "m".into()
            }
            .stage(),
            McpStage::Parameters
        );
        let server = |code| McpError::Server {
            server: "s".into(),
            tool: "t".into(),
            code,
            message: "m".into(),
        };
        assert_eq!(server(-32602).stage(), McpStage::Parameters);
        assert_eq!(server(-32603).stage(), McpStage::Execution);
        assert_eq!(
            McpError::Timeout {
                tool: "t".into(),
                after: Duration::from_secs(1)
            }
            .stage(),
            McpStage::Execution
        );
        assert_eq!(
            McpError::Cancelled { tool: "t".into() }.stage(),
            McpStage::Execution
        );
        assert_eq!(
            McpError::ServerUnavailable {
                server: "s".into(),
                reason: "r".into()
            }
            .stage(),
            McpStage::Execution
        );
    }
}
