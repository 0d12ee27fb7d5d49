//! Bounds applied at the source (while reading or walking), with the defaults of the issue.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Lines returned by one read when no limit is given.
    pub read_lines: u64,
    /// Characters kept of one line (read and grep); the rest is cut with a marker.
    pub line_chars: usize,
    /// Entries returned by glob.
    pub glob_entries: usize,
    /// Matches (or files, or count rows) returned by grep.
    pub grep_matches: usize,
    /// Entries returned by ls.
    pub ls_entries: usize,
    /// Largest context (lines before and after) grep accepts.
    pub grep_max_context: u32,
    /// Largest file edit_file loads into memory.
    pub edit_max_bytes: u64,
    /// Past the returned slice, read counts remaining lines only if this many bytes remain.
    pub read_count_tail_bytes: u64,
    /// Children counted when ls summarises an ignored folder.
    pub ls_summary_children: u64,
    /// Bytes grep buffers for one line (with its context): a file with a longer line is not
    /// searched and is reported unreadable, so one huge line cannot take the app's memory.
    pub grep_line_bytes: usize,
    /// Bytes of line text one read returns at most (whatever `limit` asks): the slice stops after
    /// the line that reaches it and says where the next one starts, so `limit: 100000` of long
    /// lines cannot take hundreds of MB of memory or of the model's context.
    pub read_max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_lines: 2000,
            line_chars: 2000,
            glob_entries: 1000,
            grep_matches: 200,
            ls_entries: 1000,
            grep_max_context: 20,
            edit_max_bytes: 16 * 1024 * 1024,
            read_count_tail_bytes: 64 * 1024 * 1024,
            ls_summary_children: 10_000,
            grep_line_bytes: 16 * 1024 * 1024,
            read_max_bytes: 256 * 1024,
        }
    }
}
