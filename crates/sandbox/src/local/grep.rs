//! grep with ripgrep's own crates: `ignore` walks, `grep-regex` matches, `grep-searcher` reads.
//!
//! Bounds at the source: the rows kept are the first `limit` in (path, line) order, held in a
//! bounded heap; a file whose path sorts after the last kept row once the heap is full is only
//! counted (no line text is copied), so memory is bounded by the cap, not by the tree. Counting
//! what was left out is exact (ripgrep's counting path). Files are opened through the root
//! `Dir`; every read checks the cancellation token, and so does every walk step.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkFinish,
    SinkMatch,
};
use ignore::WalkState;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::fsio::{CancelReader, open_regular};
use super::walk::{PathGlob, Skipped, resolve_start, walker};
use crate::api::{ContextLine, FileCount, GrepMatch, GrepMode, GrepOutcome, GrepRequest};
use crate::bounded::BoundedSmallest;
use crate::error::{SandboxError, Stage};
use crate::scope;
use crate::text::{cut_line, trim_eol};

const UNREADABLE_SHOWN: usize = 20;

enum Row {
    Match(GrepMatch),
    File(String),
    Count(FileCount),
}

struct Shared<'a> {
    s: &'a Scoped,
    req: &'a GrepRequest,
    matcher: RegexMatcher,
    glob: Option<PathGlob>,
    limit: usize,
    cancel: &'a CancellationToken,
    rows: Mutex<BoundedSmallest<(PathBuf, u64), Row>>,
    total_matches: AtomicU64,
    total_files: AtomicU64,
    files_searched: AtomicU64,
    binary_files: AtomicU64,
    unreadable: Mutex<Vec<String>>,
    unreadable_total: AtomicU64,
    /// Directories the walk could not descend.
    skipped: Skipped,
    /// The search is of one file (not a walk): nothing else is searched.
    one_file: bool,
}

pub fn grep(
    s: &Scoped,
    req: &GrepRequest,
    cancel: &CancellationToken,
) -> Result<GrepOutcome, SandboxError> {
    if req.pattern.is_empty() {
        return Err(SandboxError::InvalidArgument {
            name: "pattern".into(),
            reason: "must not be empty".into(),
        });
    }
    let limit = req.limit.unwrap_or(s.limits.grep_matches);
    if limit == 0 {
        return Err(SandboxError::InvalidArgument {
            name: "head_limit".into(),
            reason: "must be at least 1".into(),
        });
    }
    if req.context > s.limits.grep_max_context {
        return Err(SandboxError::InvalidArgument {
            name: "context".into(),
            reason: format!("at most {} lines", s.limits.grep_max_context),
        });
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(req.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&req.pattern)
        .map_err(|e| SandboxError::InvalidArgument {
            name: "pattern".into(),
            reason: e.to_string(),
        })?;
    let glob = req
        .glob
        .as_deref()
        .filter(|g| !g.trim().is_empty())
        .map(|g| PathGlob::new("glob", g))
        .transpose()?;
    let start = resolve_start(s, req.path.as_deref())?;
    let shared = Shared {
        s,
        req,
        matcher,
        glob,
        limit,
        cancel,
        rows: Mutex::new(BoundedSmallest::new(limit)),
        total_matches: AtomicU64::new(0),
        total_files: AtomicU64::new(0),
        files_searched: AtomicU64::new(0),
        binary_files: AtomicU64::new(0),
        unreadable: Mutex::new(Vec::new()),
        unreadable_total: AtomicU64::new(0),
        skipped: Skipped::new(s),
        one_file: start.is_file,
    };
    if start.is_file {
        let mut searchers = Searchers::new(req.context, s.limits.grep_line_bytes);
        shared.search_file(&start.rel, &mut searchers);
    } else {
        walker(s, &start)?.build_parallel().run(|| {
            let shared = &shared;
            let start = &start;
            let mut searchers = Searchers::new(req.context, s.limits.grep_line_bytes);
            Box::new(move |entry| {
                if shared.cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let entry = match entry {
                    Ok(e) => e,
                    Err(err) => {
                        shared.skipped.walk_error(&err);
                        return WalkState::Continue;
                    }
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let Ok(under_start) = entry.path().strip_prefix(&start.abs) else {
                    return WalkState::Continue;
                };
                if shared
                    .glob
                    .as_ref()
                    .is_some_and(|g| !g.is_match(under_start))
                {
                    return WalkState::Continue;
                }
                shared.search_file(&start.rel.join(under_start), &mut searchers);
                WalkState::Continue
            })
        });
    }
    if cancel.is_cancelled() {
        return Err(SandboxError::Cancelled { op: "grep" });
    }
    shared.finish(scope::display(&start.rel))
}

struct Searchers {
    /// Line numbers and context: for the rows kept in content mode.
    collect: Searcher,
    /// No context, no line numbers: ripgrep's fast counting path.
    count: Searcher,
}

impl Searchers {
    /// `line_bytes`: the most the line buffer may grow to (ripgrep's is unbounded, growing to the
    /// longest line); a longer line fails that file's search, reported as unreadable in our words
    /// ([`line_too_long`]) while the other files are searched.
    fn new(context: u32, line_bytes: usize) -> Self {
        let collect = SearcherBuilder::new()
            .line_number(true)
            .before_context(context as usize)
            .after_context(context as usize)
            .binary_detection(BinaryDetection::quit(0))
            .heap_limit(Some(line_bytes))
            .build();
        let count = SearcherBuilder::new()
            .line_number(false)
            .binary_detection(BinaryDetection::quit(0))
            .heap_limit(Some(line_bytes))
            .build();
        Searchers { collect, count }
    }
}

impl Shared<'_> {
    fn unreadable(&self, reason: String) {
        self.unreadable_total.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut u) = self.unreadable.lock()
            && u.len() < UNREADABLE_SHOWN
        {
            u.push(reason);
        }
    }

    fn search_file(&self, rel: &Path, searchers: &mut Searchers) {
        let shown = scope::display(rel);
        let file = match open_regular(&self.s.dir, rel, &shown) {
            Ok((f, _)) => f,
            Err(e) => {
                if e.is_escape() {
                    tracing::warn!(path = %shown, "grep refused a file that leads outside the root");
                }
                self.unreadable(e.to_string());
                return;
            }
        };
        self.files_searched.fetch_add(1, Ordering::Relaxed);
        let mut reader = TrackedReader {
            inner: CancelReader {
                inner: &file,
                cancel: self.cancel,
            },
            failed: false,
        };
        let key = (rel.to_path_buf(), 0);
        let collect = self.req.mode == GrepMode::Content
            && self
                .rows
                .lock()
                .map(|r| r.would_keep(&key))
                .unwrap_or(false);
        if collect {
            let mut sink = CollectSink {
                path: shown.clone(),
                keep: self.limit,
                line_chars: self.s.limits.line_chars,
                matches: Vec::new(),
                count: 0,
                pending: Vec::new(),
                last_kept: false,
                binary: false,
                cancel: self.cancel,
            };
            let result = searchers
                .collect
                .search_reader(&self.matcher, &mut reader, &mut sink);
            let result = result.map_err(|e| (e, reader.failed));
            if self.done_reading(&shown, result, sink.binary, sink.count) {
                let kept = sink.matches.len() as u64;
                if let Ok(mut rows) = self.rows.lock() {
                    for m in sink.matches {
                        rows.offer((rel.to_path_buf(), m.number), Row::Match(m));
                    }
                    rows.count_unkept(sink.count - kept);
                }
            }
        } else {
            let mut sink = CountSink {
                count: 0,
                stop_at_first: self.req.mode == GrepMode::FilesWithMatches,
                binary: false,
                cancel: self.cancel,
            };
            let result = searchers
                .count
                .search_reader(&self.matcher, &mut reader, &mut sink);
            let result = result.map_err(|e| (e, reader.failed));
            if self.done_reading(&shown, result, sink.binary, sink.count)
                && let Ok(mut rows) = self.rows.lock()
            {
                match self.req.mode {
                    GrepMode::Content => rows.count_unkept(sink.count),
                    GrepMode::FilesWithMatches => rows.offer(key, Row::File(shown)),
                    GrepMode::Count => rows.offer(
                        key,
                        Row::Count(FileCount {
                            path: shown,
                            count: sink.count,
                        }),
                    ),
                }
            }
        }
    }

    /// Record the file's totals; true when it matched and its rows should be offered. A failed
    /// search comes with whether the file's reads failed: if they did not, the error is the
    /// searcher's own, its line buffer reaching `grep_line_bytes` (the only error it makes with
    /// sinks that never fail), and is told in our words; the other files are still searched.
    fn done_reading(
        &self,
        shown: &str,
        result: Result<(), (std::io::Error, bool)>,
        binary: bool,
        count: u64,
    ) -> bool {
        if let Err((e, read_failed)) = result {
            if self.cancel.is_cancelled() {
                return false;
            }
            if read_failed {
                self.unreadable(format!("{shown}: {e}"));
            } else {
                tracing::debug!(path = %shown, error = %e, "grep skipped a file with a line past grep_line_bytes");
                self.unreadable(line_too_long(
                    shown,
                    self.s.limits.grep_line_bytes,
                    self.one_file,
                ));
            }
            return false;
        }
        if binary {
            self.binary_files.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if count == 0 {
            return false;
        }
        self.total_files.fetch_add(1, Ordering::Relaxed);
        if self.req.mode != GrepMode::FilesWithMatches {
            self.total_matches.fetch_add(count, Ordering::Relaxed);
        }
        true
    }

    fn finish(self, path: String) -> Result<GrepOutcome, SandboxError> {
        let rows = self.rows.into_inner().map_err(|_| poisoned(&path))?;
        let (rows, omitted) = rows.finish();
        let mut out = GrepOutcome {
            mode: self.req.mode,
            path,
            matches: Vec::new(),
            files: Vec::new(),
            counts: Vec::new(),
            total_matches: self.total_matches.into_inner(),
            total_files: self.total_files.into_inner(),
            omitted,
            files_searched: self.files_searched.into_inner(),
            binary_files: self.binary_files.into_inner(),
            unreadable: self.unreadable.into_inner().unwrap_or_default(),
            unreadable_total: self.unreadable_total.into_inner(),
            skipped: self.skipped.finish(),
        };
        for row in rows {
            match row {
                Row::Match(m) => out.matches.push(m),
                Row::File(f) => out.files.push(f),
                Row::Count(c) => out.counts.push(c),
            }
        }
        Ok(out)
    }
}

/// What grep reports for a file with a line longer than `limit` bytes (`shown` is the
/// project-relative name; the tool's projection escapes it like every other name).
fn line_too_long(shown: &str, limit: usize, one_file: bool) -> String {
    let rest = if one_file {
        "this file was not searched"
    } else {
        "this file was skipped, the others were searched"
    };
    format!(
        "{}: a line in {shown} is longer than {} (grep_line_bytes); {rest} (read_file shows the \
         line cut)",
        Stage::Execution.as_str(),
        size_words(limit)
    )
}

/// `n` bytes in the largest binary unit that divides it exactly ("16 MiB", "512 KiB", "1000 bytes").
fn size_words(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// The file's reader, remembering whether a read failed (to tell the reader's errors from the
/// searcher's own).
struct TrackedReader<R> {
    inner: R,
    failed: bool,
}

impl<R: std::io::Read> std::io::Read for TrackedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let out = self.inner.read(buf);
        if out
            .as_ref()
            .is_err_and(|e| e.kind() != std::io::ErrorKind::Interrupted)
        {
            self.failed = true;
        }
        out
    }
}

fn poisoned(path: &str) -> SandboxError {
    SandboxError::Io {
        op: "grep",
        path: path.to_string(),
        source: std::io::Error::other("a search thread panicked"),
    }
}

fn line_text(bytes: &[u8], line_chars: usize) -> String {
    let raw = trim_eol(bytes);
    let raw = &raw[..raw.len().min(line_chars.saturating_mul(4))];
    let (text, cut) = cut_line(&String::from_utf8_lossy(raw), line_chars);
    if cut > 0 || raw.len() < trim_eol(bytes).len() {
        format!("{text} [line cut]")
    } else {
        text
    }
}

struct CountSink<'a> {
    count: u64,
    stop_at_first: bool,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl Sink for CountSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        Ok(!self.stop_at_first && !self.cancel.is_cancelled())
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), Self::Error> {
        if finish.binary_byte_offset().is_some() {
            self.binary = true;
        }
        Ok(())
    }
}

struct CollectSink<'a> {
    path: String,
    keep: usize,
    line_chars: usize,
    matches: Vec<GrepMatch>,
    count: u64,
    pending: Vec<ContextLine>,
    last_kept: bool,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl Sink for CollectSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        if self.matches.len() < self.keep {
            self.matches.push(GrepMatch {
                path: self.path.clone(),
                number: m.line_number().unwrap_or(0),
                text: line_text(m.bytes(), self.line_chars),
                before: std::mem::take(&mut self.pending),
                after: Vec::new(),
            });
            self.last_kept = true;
        } else {
            self.pending.clear();
            self.last_kept = false;
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let line = ContextLine {
            number: c.line_number().unwrap_or(0),
            text: line_text(c.bytes(), self.line_chars),
        };
        match c.kind() {
            SinkContextKind::Before if self.matches.len() < self.keep => self.pending.push(line),
            SinkContextKind::After if self.last_kept => {
                if let Some(last) = self.matches.last_mut() {
                    last.after.push(line);
                }
            }
            _ => {}
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.pending.clear();
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), Self::Error> {
        if finish.binary_byte_offset().is_some() {
            self.binary = true;
        }
        Ok(())
    }
}
