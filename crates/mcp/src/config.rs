//! MCP server configuration in the ecosystem's common format:
//!
//! ```json
//! { "mcpServers": {
//!     "files":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!                 "env": { "KEY": "value" }, "cwd": "optional/dir" },
//!     "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ..." } },
//!     "slow":   { "command": "slow-server", "timeouts": { "connect": 60, "call": 600 }, "enabled": false },
//!     "mine":   { "command": "my-server", "trustAnnotations": true },
//!     "gh":     { "url": "${GH_MCP_URL:-https://api.example.com/mcp}",
//!                 "headers": { "Authorization": "Bearer ${GH_TOKEN}" },
//!                 "tools": { "allow": ["get_*", "search_issues"], "deny": ["get_secret"] } },
//!     "off":    { "command": "x", "disabled": true }
//! } }
//! ```
//!
//! `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`, `url` and `headers` read the
//! person's environment ([`expand`]; `${AIBUDDY_PROJECT_ROOT}` is the open project's root); an unset variable without default is a located problem
//! and that server does not start. `tools` limits which of its tools are offered
//! ([`tool_filter`]). `"disabled": true` (or `"enabled": false`) keeps a server from starting;
//! it is listed as disabled.
//!
//! `trustAnnotations: true` lets the server's tool annotations (`readOnlyHint`, ...) lower the
//! risk of its tools; without it they can only raise it (see [`crate::risk`]). A project's own
//! `mcp.json` may set it too: project files take effect only once the person trusts the project.
//!
//! `type` is optional (`"stdio"`, `"http"` or `"streamable-http"`); without it, `command` means
//! stdio and `url` means streamable HTTP. `timeouts` are seconds (see [`Timeouts`] for defaults).
//!
//! `"sandbox"` (stdio only) runs the server under the confinement of commands, with its own
//! writable roots and network ([`sandbox`]).
//!
//! Files: the project's `.aibuddy/mcp.json` and the user data dir's `mcp.json`; a project entry
//! replaces the user entry of the same name. A bad entry yields a [`ConfigError`] naming the file,
//! the line and column, the server and the field path; the other entries still load.
//!
//! Seams: [`types`] (what a server config is), `entry` (one entry, serde derive over the located
//! document of `aibuddy_common::located`), [`parse`] (a file, merging), [`load`] (the only I/O).

pub mod edit;
mod entry;
pub mod expand;
pub mod load;
pub mod parse;
pub mod sandbox;
pub mod tool_filter;
pub mod types;

pub use expand::{PROJECT_ROOT_VAR, Vars, process_env, with_project_root};
pub use load::{load_server_configs, project_config_path, user_config_path};
pub use parse::{merge, parse_config_text, parse_config_text_with, parse_server_entry};
pub use sandbox::{SandboxConfig, SandboxNetwork};
pub use tool_filter::ToolFilter;
pub use types::{
    CONFIG_FILE_NAME, ConfigError, ConfigScope, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    LoadedConfigs, ServerConfig, Timeouts, Transport,
};

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
