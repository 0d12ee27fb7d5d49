//! Gitignore-aware walks (glob, and the file enumeration of grep) with the `ignore` crate.
//!
//! Confinement of walks: the start is resolved through the root `Dir` (canonicalised beneath
//! the root, so a symlinked start that leads out is an Escape); the walker never follows
//! symlinks (`follow_links(false)`) and reads no ignore file itself: the rules of the root and of
//! every directory down to each entry are read through the `Dir` (`ignores`) and applied as a
//! filter, none above the root, no global gitignore. Files are opened through
//! the `Dir` (grep), and the entries glob returns are re-checked through it, so a directory
//! swapped for an outside symlink mid-walk yields neither contents nor names.

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::ignores::IgnoreRules;
use crate::api::{GlobOutcome, GlobRequest, SkippedDir, SkippedDirs};
use crate::bounded::BoundedSmallest;
use crate::error::SandboxError;
use crate::scope;

/// Where a walk starts, resolved beneath the root.
pub struct Start {
    /// Canonical path relative to the root (empty for the root).
    pub rel: PathBuf,
    /// Absolute path handed to the walker.
    pub abs: PathBuf,
    pub is_file: bool,
}

pub fn resolve_start(s: &Scoped, given: Option<&str>) -> Result<Start, SandboxError> {
    let shown = given.unwrap_or(".");
    let rel = s.rel_or_root(given)?;
    let canon = s
        .dir
        .canonicalize(&rel)
        .map_err(|e| SandboxError::from_io("resolve", shown, e))?;
    let canon = if canon == Path::new(".") {
        PathBuf::new()
    } else {
        canon
    };
    let meta = s
        .dir
        .metadata(if canon.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &canon
        })
        .map_err(|e| SandboxError::from_io("stat", shown, e))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(SandboxError::NotRegular {
            path: shown.to_string(),
            file_type: super::fsio::type_name(&meta.file_type()).to_string(),
        });
    }
    Ok(Start {
        abs: s.root.join(&canon),
        rel: canon,
        is_file: meta.is_file(),
    })
}

/// The walker every search uses: gitignore-aware, hidden files skipped (as ripgrep and fd),
/// `.gitignore` honoured outside git repositories too, never following symlinks. The ignore
/// files are read by [`IgnoreRules`] through the root `Dir` (the crate's own loader, which opens
/// them by absolute path, is off), from the root down, so a search started in a subfolder
/// honours the rules above it and finds nothing beneath an ignored folder.
pub fn walker(s: &Scoped, start: &Start) -> Result<WalkBuilder, SandboxError> {
    let mut b = WalkBuilder::new(&start.abs);
    b.follow_links(false)
        .hidden(true)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .threads(s.threads);
    let rules = IgnoreRules::new(s)?;
    let start_ignored = rules.is_dir_or_parent_ignored(&start.rel);
    let root = s.root.clone();
    b.filter_entry(move |entry| {
        if start_ignored {
            return false;
        }
        let Ok(rel) = entry.path().strip_prefix(&root) else {
            return false;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !rules.is_ignored(rel, is_dir)
    });
    Ok(b)
}

/// Collects what a walk could not descend, from any walker thread.
pub struct Skipped {
    root: PathBuf,
    kept: Mutex<Vec<SkippedDir>>,
    total: std::sync::atomic::AtomicU64,
}

impl Skipped {
    pub fn new(s: &Scoped) -> Self {
        Skipped {
            root: s.root.clone(),
            kept: Mutex::new(Vec::new()),
            total: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Notes a walker error (a directory it could not read, or an entry it could not stat).
    pub fn walk_error(&self, err: &ignore::Error) {
        let (path, reason) = describe(err);
        self.note(path.unwrap_or(&self.root), reason);
    }

    /// Notes `path` (absolute, or relative to the root) skipped for `reason`.
    pub fn note(&self, path: &Path, reason: String) {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        self.total
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut k) = self.kept.lock() {
            k.push(SkippedDir {
                // Escaped as one visible line: a name may hold newlines or escape sequences.
                path: aibuddy_common::term::line(&if rel.is_absolute() {
                    // Never a path outside the root in a result: only its name.
                    rel.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                } else {
                    scope::display(rel)
                })
                .into_owned(),
                reason,
            });
        }
    }

    /// The first [`SkippedDirs::SHOWN`] in path order, and the count.
    pub fn finish(self) -> SkippedDirs {
        let mut dirs = self.kept.into_inner().unwrap_or_default();
        dirs.sort_by(|a, b| a.path.cmp(&b.path));
        dirs.truncate(SkippedDirs::SHOWN);
        SkippedDirs {
            dirs,
            total: self.total.into_inner(),
        }
    }
}

/// The path and reason an `ignore` error carries.
fn describe(err: &ignore::Error) -> (Option<&Path>, String) {
    match err {
        ignore::Error::WithPath { path, err } => (Some(path.as_path()), describe(err).1),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            describe(err)
        }
        ignore::Error::Loop { child, .. } => (Some(child.as_path()), "a symlink loop".into()),
        ignore::Error::Io(e) => (None, io_reason(e)),
        ignore::Error::Partial(errs) => errs
            .first()
            .map(describe)
            .unwrap_or((None, "unknown error".into())),
        other => (None, other.to_string()),
    }
}

/// An I/O error in the words of a walk, without any path.
pub fn io_reason(e: &std::io::Error) -> String {
    const ENAMETOOLONG: i32 = 36;
    const ENOTDIR: i32 = 20;
    match (e.raw_os_error(), e.kind()) {
        (Some(ENAMETOOLONG), _) => "too deep (path longer than PATH_MAX)".into(),
        (Some(ENOTDIR), _) => "changed during the walk".into(),
        (_, std::io::ErrorKind::PermissionDenied) => "permission denied".into(),
        (_, std::io::ErrorKind::NotFound) => "vanished during the walk".into(),
        (_, kind) => kind.to_string(),
    }
}

/// A glob as fd and ripgrep's `-g` read it: without a `/` it matches the file name at any
/// depth; with one it matches the path relative to the search start (`*` stays in one level).
pub struct PathGlob {
    matcher: GlobMatcher,
    basename: bool,
}

impl PathGlob {
    pub fn new(name: &str, pattern: &str) -> Result<Self, SandboxError> {
        if pattern.trim().is_empty() {
            return Err(SandboxError::InvalidArgument {
                name: name.into(),
                reason: "must not be empty".into(),
            });
        }
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| SandboxError::InvalidArgument {
                name: name.into(),
                reason: e.to_string(),
            })?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            basename: !pattern.contains('/'),
        })
    }

    /// `rel` is relative to the search start.
    pub fn is_match(&self, rel: &Path) -> bool {
        if self.basename {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

pub fn glob(
    s: &Scoped,
    req: &GlobRequest,
    cancel: &CancellationToken,
) -> Result<GlobOutcome, SandboxError> {
    let matcher = PathGlob::new("pattern", &req.pattern)?;
    let limit = req.limit.unwrap_or(s.limits.glob_entries);
    let start = resolve_start(s, req.path.as_deref())?;
    let kept: Mutex<BoundedSmallest<PathBuf, PathBuf>> = Mutex::new(BoundedSmallest::new(limit));
    let skipped = Skipped::new(s);
    if start.is_file {
        let name = start.rel.file_name().map(PathBuf::from).unwrap_or_default();
        if matcher.is_match(&name)
            && let Ok(mut k) = kept.lock()
        {
            k.offer(start.rel.clone(), start.rel.clone());
        }
    } else {
        walker(s, &start)?.build_parallel().run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let entry = match entry {
                    Ok(e) => e,
                    Err(err) => {
                        skipped.walk_error(&err);
                        return WalkState::Continue;
                    }
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let Ok(under_start) = entry.path().strip_prefix(&start.abs) else {
                    return WalkState::Continue;
                };
                if matcher.is_match(under_start) {
                    let rel = start.rel.join(under_start);
                    if let Ok(mut k) = kept.lock() {
                        if k.would_keep(&rel) {
                            k.offer(rel.clone(), rel);
                        } else {
                            k.count_unkept(1);
                        }
                    }
                }
                WalkState::Continue
            })
        });
    }
    if cancel.is_cancelled() {
        return Err(SandboxError::Cancelled { op: "glob" });
    }
    let kept = kept.into_inner().map_err(|_| SandboxError::Io {
        op: "glob",
        path: scope::display(&start.rel),
        source: std::io::Error::other("a walker thread panicked"),
    })?;
    let (paths, omitted) = kept.finish();
    let mut entries = Vec::with_capacity(paths.len());
    for rel in paths {
        // Re-check through the Dir: a name listed through a swapped-in symlink is dropped.
        match s.dir.symlink_metadata(&rel) {
            Ok(m) if m.is_file() => entries.push(scope::display(&rel)),
            // Found by the walk but not reachable through the root's handle (a path longer than
            // PATH_MAX): said, not dropped silently.
            Err(e) if e.raw_os_error() == Some(36) => skipped.note(&rel, io_reason(&e)),
            _ => {
                tracing::warn!(path = %rel.display(), "glob entry not beneath the root any more; dropped")
            }
        }
    }
    Ok(GlobOutcome {
        path: scope::display(&start.rel),
        entries,
        omitted,
        skipped: skipped.finish(),
    })
}
