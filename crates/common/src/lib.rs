//! Small pure helpers shared by every aibuddy crate. Nothing here does I/O.

pub mod located;
pub mod term;
