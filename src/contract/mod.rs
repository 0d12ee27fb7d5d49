//! The tool contract: stages, typed errors, and `define_tool`.
mod define;
mod risk;
mod stage;

pub use define::{DefineError, ToolSpec, define_tool, is_valid_tool_name};
pub use risk::Risk;
pub use stage::{Stage, ToolError};
