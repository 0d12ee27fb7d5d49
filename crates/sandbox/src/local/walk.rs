//! Gitignore-aware walks (glob, and the file enumeration of grep) with the `ignore` crate.
//!
//! Confinement of walks: the start is resolved through the root `Dir` (canonicalised beneath
//! the root, so a symlinked start that leads out is an Escape); the walker never follows
//! symlinks (`follow_links(false)`) and reads no ignore files above the root (`parents(false)`,
//! no global gitignore); the ignore files of the root and of the directories between the root
//! and the start are read through the `Dir` and applied as a filter. Files are opened through
//! the `Dir` (grep), and the entries glob returns are re-checked through it, so a directory
//! swapped for an outside symlink mid-walk yields neither contents nor names.

use globset::{GlobBuilder, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{WalkBuilder, WalkState};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::Scoped;
use crate::api::{GlobOutcome, GlobRequest};
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

/// Ignore rules of the root and of each directory between the root and `start` (exclusive),
/// read through the scoped `Dir`.
pub fn ancestor_ignores(s: &Scoped, start: &Path) -> Vec<Gitignore> {
    let mut dirs = vec![PathBuf::new()];
    let mut acc = PathBuf::new();
    let comps: Vec<_> = start.components().collect();
    for c in comps.iter().take(comps.len().saturating_sub(1)) {
        acc.push(c);
        dirs.push(acc.clone());
    }
    if start.as_os_str().is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for d in dirs {
        let mut builder = GitignoreBuilder::new(s.root.join(&d));
        let mut any = false;
        let mut names = vec![d.join(".gitignore"), d.join(".ignore")];
        if d.as_os_str().is_empty() {
            names.push(PathBuf::from(".git/info/exclude"));
        }
        for name in names {
            let Ok(mut f) = s.dir.open(&name) else {
                continue;
            };
            let mut text = String::new();
            if (&mut f).take(1 << 20).read_to_string(&mut text).is_err() {
                continue;
            }
            for line in text.lines() {
                if builder.add_line(None, line).is_ok() {
                    any = true;
                }
            }
        }
        if any {
            match builder.build() {
                Ok(gi) => out.push(gi),
                Err(e) => tracing::debug!(error = %e, "ignoring a broken ignore file"),
            }
        }
    }
    out
}

/// The walker every search uses: gitignore-aware, hidden files skipped (as ripgrep and fd),
/// `.gitignore` honoured outside git repositories too, never following symlinks.
pub fn walker(s: &Scoped, start: &Start) -> WalkBuilder {
    let mut b = WalkBuilder::new(&start.abs);
    b.follow_links(false)
        .hidden(true)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .threads(s.threads);
    let ancestors = ancestor_ignores(s, &start.rel);
    if !ancestors.is_empty() {
        b.filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !ancestors.iter().any(|gi| {
                entry.path().starts_with(gi.path())
                    && gi
                        .matched_path_or_any_parents(entry.path(), is_dir)
                        .is_ignore()
            })
        });
    }
    b
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
    if start.is_file {
        let name = start.rel.file_name().map(PathBuf::from).unwrap_or_default();
        if matcher.is_match(&name)
            && let Ok(mut k) = kept.lock()
        {
            k.offer(start.rel.clone(), start.rel.clone());
        }
    } else {
        walker(s, &start).build_parallel().run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
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
            _ => {
                tracing::warn!(path = %rel.display(), "glob entry not beneath the root any more; dropped")
            }
        }
    }
    Ok(GlobOutcome {
        path: scope::display(&start.rel),
        entries,
        omitted,
    })
}
