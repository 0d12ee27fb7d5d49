//! One module per table: its migration SQL beside the synchronous queries that use it.
//! The async `Store` runs these on its writer thread (writes) or reader connections (reads).

pub mod call_changes;
pub mod confirm_decisions;
pub mod hook_runs;
pub mod messages;
pub mod projects;
pub mod runs;
pub mod search;
pub mod summaries;
pub mod tool_calls;
pub mod user_answers;

/// RFC 3339 UTC text with milliseconds for a Unix-millisecond column (SQL expression).
macro_rules! iso {
    ($col:literal) => {
        concat!(
            "strftime('%Y-%m-%dT%H:%M:%fZ', ",
            $col,
            " / 1000.0, 'unixepoch')"
        )
    };
}
pub(crate) use iso;
