//! Results: the persistence and precompaction layer of a call (seed: "Tool results use projections
//! tailored to each consumer").
//!
//! - [`StoreRecorder`]: the pipeline's `CallRecorder` backed by the SQLite store (`aibuddy-store`):
//!   raw input/output, stable id, timings, status, stage; `finish` returns after commit.
//! - [`Compactor`]: the pipeline's `AfterCall` hook. When a model projection reaches
//!   [`PRECOMPACTION_THRESHOLD`] tokens ([`estimate_tokens`]) it compacts it in the background with
//!   the config's strategy (trim / summarize / drop), offloads raw input+output for trim and
//!   summarize, and replaces the projection in the cache and the store only when smaller.
//! - [`images`]: the images of a result bounded in bytes and pixels for the model and the window,
//!   kept in the client projection (`model_images`), never in the model text.
//! - [`view_tool_call`](crate::tools::view_tool_call) recovers raw results by call id.

mod compactor;
pub mod images;
mod persistence;
mod plan;
mod recorder;
mod slice;
mod summarizer;
mod tokens;
mod trim;

pub use compactor::{
    CompactionOutcome, Compactor, Job, ProjectionCache, RunCompactions, recovery_note,
};
pub use persistence::Persistence;
pub use plan::{Plan, plan};
pub use recorder::{StoreRecorder, display_text};
pub use slice::utf8_window;
pub use summarizer::{SummarizeError, Summarizer, SummaryRequest};
pub use tokens::{PRECOMPACTION_THRESHOLD, TRIM_TARGET_TOKENS, estimate_tokens};
pub use trim::head_tail_trim;
