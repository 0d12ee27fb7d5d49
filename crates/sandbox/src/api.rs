//! The sandbox contract: one object-safe async trait for listing, reading, writing, editing,
//! searching and command execution. Every operation takes a `CancellationToken` and honours it.

use aibuddy_exec::{ExecOutcome, ExecRequest, ExecSink};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use crate::error::SandboxError;
use crate::kind::{Capabilities, SandboxKind};

// ---------------------------------------------------------------- ls

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRequest {
    /// Directory to list (default: the project root).
    pub path: Option<String>,
    /// Entries returned (default: `Limits::ls_entries`).
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// Fifo, socket, device.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredSummary {
    /// Why it is summarised instead of listed (".git", "gitignored", ...).
    pub reason: String,
    /// Direct children counted (up to `Limits::ls_summary_children`).
    pub children: u64,
    /// True when counting stopped at the bound.
    pub more: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListEntry {
    pub name: String,
    pub kind: EntryKind,
    /// Size in bytes of a file (of the link itself for symlinks).
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
    /// For symlinks: whether the target resolves inside the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_inside_root: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<IgnoredSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// The listed directory, relative to the project root.
    pub path: String,
    pub entries: Vec<ListEntry>,
    /// Entries left out by the bound.
    pub omitted: u64,
}

// ---------------------------------------------------------------- read

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRequest {
    pub path: String,
    /// First line to return, 1-based (default 1).
    pub offset: Option<u64>,
    /// Lines to return (default: `Limits::read_lines`).
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// 1-based line number.
    pub number: u64,
    pub text: String,
    /// Characters cut from the end of this line by the line bound (0 when whole).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_chars: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReadContent {
    Text {
        lines: Vec<Line>,
        /// Lines before the slice (offset - 1).
        lines_before: u64,
        /// Lines after the slice, when counted (`None`: not counted because the rest is large).
        lines_after: Option<u64>,
        /// True when content after the slice exists (known even when not counted).
        more_after: bool,
        /// Lines in the slice that were cut by the line bound.
        cut_lines: u64,
        /// Invalid UTF-8 was replaced with U+FFFD.
        lossy: bool,
    },
    /// Not text: described, not dumped.
    Binary { reason: String },
    Image {
        format: String,
        width: Option<u32>,
        height: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadOutcome {
    pub path: String,
    /// Size in bytes of the whole file.
    pub size: u64,
    pub content: ReadContent,
    /// The bytes of an image file of at most [`IMAGE_BYTES_MAX`] bytes, for the caller to bound
    /// and pass on as an image (never serialized: the caller stores what it made of them).
    #[serde(skip)]
    pub image_bytes: Option<Vec<u8>>,
}

/// The largest image file whose bytes `read` returns ([`ReadOutcome::image_bytes`]).
pub const IMAGE_BYTES_MAX: u64 = 20 * 1024 * 1024;

// ---------------------------------------------------------------- write / edit

/// Identity of a file's content at one moment, to refuse applying a plan to a changed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    pub len: u64,
    pub hash: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteRequest {
    pub path: String,
    pub content: String,
    /// Refuse (Changed) unless the target is still as the preview saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expected>,
}

/// The state a write was planned against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    Absent,
    Content(Fingerprint),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WritePlan {
    pub path: String,
    /// The current file (`None`: it will be created).
    pub existing: Option<FileStats>,
    pub new: FileStats,
    /// Parent directories that will be created.
    pub creates_dirs: Vec<String>,
    pub fingerprint: Option<Fingerprint>,
    /// Unified diff from the current content (empty for a new file) when both are text within
    /// `Limits::edit_max_bytes`; `None` otherwise.
    pub diff: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStats {
    pub bytes: u64,
    pub lines: u64,
}

/// What was read back after an effect and found identical to what was intended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verified {
    /// "whole file" or "lines 12-30".
    pub region: String,
    pub bytes_compared: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOutcome {
    pub path: String,
    pub bytes_written: u64,
    pub created: bool,
    pub previous: Option<FileStats>,
    pub lines: u64,
    /// Unix permission bits of the written file.
    pub mode: u32,
    pub verified: Verified,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditSpec {
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditRequest {
    pub path: String,
    /// Applied in order, each to the result of the previous; all or nothing.
    pub edits: Vec<EditSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Fingerprint>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditPlan {
    pub path: String,
    pub diff: String,
    pub replacements: usize,
    pub before: FileStats,
    pub after: FileStats,
    /// 1-based inclusive line ranges of the new file that differ from the old one.
    pub changed_lines: Vec<(u64, u64)>,
    pub fingerprint: Fingerprint,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditOutcome {
    pub path: String,
    pub diff: String,
    pub replacements: usize,
    pub before: FileStats,
    pub after: FileStats,
    pub changed_lines: Vec<(u64, u64)>,
    pub bytes_written: u64,
    pub verified: Verified,
}

// ---------------------------------------------------------------- glob / grep

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobRequest {
    /// Glob matched against paths relative to `path` (e.g. `**/*.rs`, `src/*.toml`).
    pub pattern: String,
    pub path: Option<String>,
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobOutcome {
    /// The searched directory, relative to the project root.
    pub path: String,
    /// Matching files relative to the project root, in path order: the first `limit` of them.
    pub entries: Vec<String>,
    pub omitted: u64,
    /// Directories the walk could not descend (too deep, permission denied, vanished): what lies
    /// beneath them was not searched.
    #[serde(default, skip_serializing_if = "SkippedDirs::is_empty")]
    pub skipped: SkippedDirs,
}

/// One directory (or entry) a walk could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedDir {
    /// Relative to the project root, escaped as one visible line (`aibuddy_common::term::line`).
    pub path: String,
    /// `too deep (path longer than PATH_MAX)`, `permission denied`, `vanished during the walk`,
    /// or the system's words.
    pub reason: String,
}

/// The directories a walk could not descend: the first [`SkippedDirs::SHOWN`] in path order, and
/// how many there were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedDirs {
    pub dirs: Vec<SkippedDir>,
    pub total: u64,
}

impl SkippedDirs {
    /// Directories named at most.
    pub const SHOWN: usize = 20;

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrepMode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepRequest {
    /// Regular expression (Rust regex syntax, as ripgrep).
    pub pattern: String,
    pub path: Option<String>,
    /// Only files whose path (relative to `path`) matches this glob; e.g. `*.rs`, `src/**/*.ts`.
    pub glob: Option<String>,
    #[serde(default)]
    pub mode: GrepMode,
    /// Lines of context before and after each match (content mode).
    #[serde(default)]
    pub context: u32,
    #[serde(default)]
    pub case_insensitive: bool,
    /// Bound on returned matches / files / count rows (default: `Limits::grep_matches`).
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextLine {
    pub number: u64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepMatch {
    pub path: String,
    pub number: u64,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<ContextLine>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<ContextLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCount {
    pub path: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepOutcome {
    pub mode: GrepMode,
    /// The searched directory or file, relative to the project root.
    pub path: String,
    /// Content mode: the first `limit` matching lines in (path, line) order.
    pub matches: Vec<GrepMatch>,
    /// files_with_matches mode: the first `limit` files in path order.
    pub files: Vec<String>,
    /// count mode: the first `limit` files in path order with their matching-line counts.
    pub counts: Vec<FileCount>,
    /// Matching lines in all searched files.
    pub total_matches: u64,
    /// Files with at least one match.
    pub total_files: u64,
    /// Rows (matches, files or count rows, per mode) left out by the bound.
    pub omitted: u64,
    pub files_searched: u64,
    /// Files skipped because they look binary.
    pub binary_files: u64,
    /// Files that could not be opened or read (first few, with reasons).
    pub unreadable: Vec<String>,
    pub unreadable_total: u64,
    /// Directories the walk could not descend (see [`GlobOutcome::skipped`]).
    #[serde(default, skip_serializing_if = "SkippedDirs::is_empty")]
    pub skipped: SkippedDirs,
}

// ---------------------------------------------------------------- the trait

#[async_trait]
pub trait Sandbox: Send + Sync + std::fmt::Debug {
    fn kind(&self) -> SandboxKind;
    fn capabilities(&self) -> Capabilities;
    /// The project root as shown to people (absolute, canonical).
    fn root(&self) -> &Path;
    /// Where calls run, in one line for people (`tools list`, `aibuddy trust`, a command's scope):
    /// this machine for the local adapter; the container, its image and engine for a container.
    fn location(&self) -> String {
        format!("{}: this machine", self.kind())
    }
    /// The confinement commands get, when it is not the local runner's (`None`: the host's
    /// support, `aibuddy_exec::confinement_support`): a container sandbox names its container.
    fn exec_confinement(&self) -> Option<aibuddy_exec::Confinement> {
        None
    }
    /// Resolve `given` to its path relative to the root without touching anything
    /// (the lexical pass; the real confinement happens when the operation opens it).
    fn scope(&self, given: &str) -> Result<String, SandboxError>;

    async fn list(
        &self,
        req: ListRequest,
        cancel: CancellationToken,
    ) -> Result<Listing, SandboxError>;
    async fn read(
        &self,
        req: ReadRequest,
        cancel: CancellationToken,
    ) -> Result<ReadOutcome, SandboxError>;
    /// What a write would do (for the confirmation), without doing it.
    async fn preview_write(
        &self,
        req: WriteRequest,
        cancel: CancellationToken,
    ) -> Result<WritePlan, SandboxError>;
    async fn write(
        &self,
        req: WriteRequest,
        cancel: CancellationToken,
    ) -> Result<WriteOutcome, SandboxError>;
    /// The diff an edit would produce (for the confirmation), without doing it.
    async fn preview_edit(
        &self,
        req: EditRequest,
        cancel: CancellationToken,
    ) -> Result<EditPlan, SandboxError>;
    async fn edit(
        &self,
        req: EditRequest,
        cancel: CancellationToken,
    ) -> Result<EditOutcome, SandboxError>;
    async fn glob(
        &self,
        req: GlobRequest,
        cancel: CancellationToken,
    ) -> Result<GlobOutcome, SandboxError>;
    async fn grep(
        &self,
        req: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<GrepOutcome, SandboxError>;
    /// Run a command through the exec runner. The local sandbox forces the working directory
    /// to the project root; a sandbox without exec returns `Unsupported`.
    async fn exec(
        &self,
        req: ExecRequest,
        cancel: CancellationToken,
        sink: Arc<dyn ExecSink>,
    ) -> Result<ExecOutcome, SandboxError>;
}
