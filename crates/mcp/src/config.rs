//! MCP server configuration in the ecosystem's common format:
//!
//! ```json
//! { "mcpServers": {
//!     "files":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!                 "env": { "KEY": "value" }, "cwd": "optional/dir" },
//!     "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ..." } },
//!     "slow":   { "command": "slow-server", "timeouts": { "connect": 60, "call": 600 }, "enabled": false },
//!     "mine":   { "command": "my-server", "trustAnnotations": true }
//! } }
//! ```
//!
//! `trustAnnotations: true` lets the server's tool annotations (`readOnlyHint`, ...) lower the
//! risk of its tools; without it they can only raise it (see [`crate::risk`]). A project's own
//! `mcp.json` may set it too: project files take effect only once the person trusts the project.
//!
//! `type` is optional (`"stdio"`, `"http"` or `"streamable-http"`); without it, `command` means
//! stdio and `url` means streamable HTTP. `timeouts` are seconds (see [`Timeouts`] for defaults).
//!
//! Files: the project's `.aibuddy/mcp.json` and the user data dir's `mcp.json`; a project entry
//! replaces the user entry of the same name. A bad entry yields a [`ConfigError`] naming the file,
//! the line and column, the server and the field path; the other entries still load.
//!
//! Seams: [`types`] (what a server config is), `entry` (one entry, serde derive over the located
//! document of `aibuddy_common::located`), [`parse`] (a file, merging), [`load`] (the only I/O).

pub mod edit;
mod entry;
pub mod load;
pub mod parse;
pub mod types;

pub use load::{load_server_configs, project_config_path, user_config_path};
pub use parse::{merge, parse_config_text, parse_server_entry};
pub use types::{
    CONFIG_FILE_NAME, ConfigError, ConfigScope, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    LoadedConfigs, ServerConfig, Timeouts, Transport,
};

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
