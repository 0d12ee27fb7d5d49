//! Small pure types and helpers shared by every aibuddy crate. Nothing here does I/O.
//!
//! - [`Stage`]: where in a call's lifecycle a failure happened (one definition for every crate).
//! - [`CallStatus`]: the lifecycle status of a tool call.
//! - [`Decision`] / [`DecisionState`]: a person's answer to a confirm request, and the state of a
//!   recorded request.
//! - [`term`]: terminal-safe rendering of untrusted text.
//! - [`located`]: JSON with the position of every key and value, and typed decoding that reports
//!   structured, located problems (settings and `mcp.json`).
//! - [`json_edit`]: one value of such a file changed, the rest of the text kept as written.
//! - [`secrets`]: which variable names and values look like secrets (one rule for every crate).
//!
//! With the `ts-rs` feature the shared types also derive `ts_rs::TS` for the UI's bindings.

mod decision;
pub mod json_edit;
pub mod located;
pub mod secrets;
pub mod sse;
mod stage;
mod status;
pub mod term;

pub use decision::{Decision, DecisionState};
pub use stage::Stage;
pub use status::CallStatus;
