//! aibuddy-store: the SQLite persistence of aibuddy (one `aibuddy.db` in the data directory).
//!
//! - Tables (each module in `tables/` holds its migration beside its queries): `projects`, `runs`,
//!   `messages`, `tool_calls`, `confirm_decisions`, `user_answers`, plus the FTS5 index
//!   `tool_calls_fts`. Schema versions are listed in `migrations`.
//! - Durability order: `Store::begin_call` commits a `running` row before execution;
//!   `Store::finish_call` returns only after the raw output and final status are committed (with
//!   the WAL fsynced). Calls left running by a dead process become `interrupted` at the next
//!   `Store::open`, with the output spooled so far (`recovery`).
//! - Raw output rule: up to 64 KiB inline in the row, larger in `blobs/<tool_call_id>.bin`
//!   (`paths` documents every file of the data directory).
//! - Agent runs (`run_store`, `run_types`): runs with status, usage and an owner process;
//!   messages with provider content kept byte-identical, linked to `tool_calls` by call id;
//!   summaries for compaction; completed interactions per run; pure rules in `conversation`.
//! - Checkpoints of calls that may change the project (`tables::call_changes`, schema 10): the
//!   before-snapshot committed before the call runs, the after-snapshot and change set at its end.
//! - Hook runs (`tables::hook_runs`, schema 11): each run of a person's hook, with its call or run.
//! - Writes never block the async runtime: one writer thread with group commit (`writer`).

/// The client projection's `confinement_detail` of call `c` as JSON text when it is an object
/// (where the call ran; the core decides what it means), else NULL; a projection that is not
/// JSON is NULL, never an error. A macro so `history_query`'s columns can `concat!` it; defined
/// before the modules so every one of them sees it (`tables::tool_calls::CONFINEMENT_DETAIL_COLUMN`).
macro_rules! confinement_detail_column {
    () => {
        "CASE WHEN json_valid(c.client_projection) \
         THEN CASE WHEN json_type(c.client_projection, '$.confinement_detail') = 'object' \
         THEN json_extract(c.client_projection, '$.confinement_detail') END END"
    };
}

pub mod call_ids;
mod connection;
pub mod conversation;
mod error;
mod files;
pub mod history_query;
mod history_scope;
mod ids;
pub mod migrations;
mod paths;
mod reader;
mod recovery;
mod run_store;
mod run_types;
mod stage_column;
mod store;
pub mod tables;
mod types;
mod writer;

pub use call_ids::scoped_call_id;
pub use conversation::ContextItem;
pub use error::{Result, StoreError};
pub use files::Spool;
pub use history_query::{HistoryCursor, HistoryPage, HistoryQuery};
pub use ids::{MAX_ID_LEN, new_id, now_ms, safe_name, validate_id};
pub use paths::{DB_FILE, DataPaths, INLINE_LIMIT};
pub use reader::{RawSource, Reader};
pub use run_types::{
    Conversation, Interaction, LinkedResult, MessageRecord, MessageRole, NewMessage, NewRun,
    NewSummary, RequestedCall, RunEnd, RunListRow, RunParent, RunRecord, RunStatus, SummaryRecord,
    Usage,
};
pub use store::Store;
pub use tables::call_changes::CallChanges;
pub use tables::hook_runs::HookRunRow;
pub use types::{
    CallFinish, CallRecord, CallStart, CallStatus, CompactionState, ConfirmRecord, Decision,
    HistoryFilter, HistoryRow, RawFormat, RawOutputLocation, RawSlice, UserAnswer,
};

/// Re-exported so benchmarks and tests can open the same database file directly.
pub use rusqlite;

/// Opens a plain connection to the store's database with the store's settings (benchmarks,
/// migration tests, debugging). Application code uses `Store`.
pub fn open_connection(data_dir: &std::path::Path) -> Result<rusqlite::Connection> {
    connection::open_writer(&DataPaths::new(data_dir).db())
}
