//! After a command: the container's tree comes back, listed by its `find` with the changed files
//! fetched one by one (`listing.rs`), or as one archive of `workdir` (`GET
//! /containers/{id}/archive?path=WORKDIR`: the listing and the content at once); then it is
//! applied here (`apply.rs`). Every transfer is bounded (`SyncLimits`, the engine timeout per
//! piece) and not cut by a stop.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::SyncReport;
use bollard::query_parameters::DownloadFromContainerOptions;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::apply::{apply, baseline, relearn};
use super::archive::{Staged, Tree, fetch_one, read_tree};
use super::listing;
use super::local::LocalTree;
use super::manifest::{Manifest, Node, Rel};
use super::policy::Policy;
use super::shown;
use crate::state::Inner;

/// One piece of the archive as the engine sends it.
#[derive(Debug)]
pub(crate) enum Piece {
    Data(Bytes),
    /// The archive ended as the engine meant it to.
    End,
    Fail(String),
}

/// A blocking reader of the pieces (for the `tar` parser, on a blocking thread).
pub(crate) struct PieceReader {
    rx: mpsc::Receiver<Piece>,
    buf: Bytes,
    ended: bool,
}

impl PieceReader {
    pub(crate) fn new(rx: mpsc::Receiver<Piece>) -> Self {
        PieceReader {
            rx,
            buf: Bytes::new(),
            ended: false,
        }
    }
}

impl Read for PieceReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.buf.is_empty() {
            if self.ended {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Piece::Data(b)) => self.buf = b,
                Some(Piece::End) => self.ended = true,
                Some(Piece::Fail(why)) => return Err(std::io::Error::other(why)),
                None => return Err(std::io::Error::other("the transfer stopped")),
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf.split_to(n));
        Ok(n)
    }
}

/// Streams the archive of `path` in the container into a channel, bounded: the whole transfer
/// by `deadline`, each piece by `stall`, its size by `limits.max_archive_bytes`.
fn spawn_download(
    inner: &Inner,
    container: &str,
    path: String,
    deadline: tokio::time::Instant,
    stall: Duration,
) -> mpsc::Receiver<Piece> {
    let (tx, rx) = mpsc::channel(16);
    let docker = inner.docker.clone();
    let container = container.to_string();
    let max = inner.opts.sync.max_archive_bytes;
    let whole = inner.opts.sync.pull_time;
    tokio::spawn(async move {
        let opts = DownloadFromContainerOptions { path };
        let mut stream = docker.download_from_container(&container, Some(opts));
        let mut total = 0u64;
        loop {
            let until = deadline.min(tokio::time::Instant::now() + stall);
            let piece = match tokio::time::timeout_at(until, stream.next()).await {
                Err(_) if tokio::time::Instant::now() >= deadline => Piece::Fail(format!(
                    "did not finish reading the container's tree within {} s",
                    whole.as_secs()
                )),
                Err(_) => Piece::Fail(format!(
                    "the engine sent nothing for {} s while the container's tree was read",
                    stall.as_secs()
                )),
                Ok(None) => Piece::End,
                Ok(Some(Err(e))) => Piece::Fail(format!(
                    "lost the connection while reading the container's tree: {e}"
                )),
                Ok(Some(Ok(b))) => {
                    total += b.len() as u64;
                    if total > max {
                        Piece::Fail(format!("the container's tree is over {max} bytes"))
                    } else {
                        Piece::Data(b)
                    }
                }
            };
            let last = !matches!(piece, Piece::Data(_));
            if tx.send(piece).await.is_err() || last {
                return;
            }
        }
    });
    rx
}

/// Files fetched one by one at most after a listing (more: the whole archive is read instead).
const MAX_FETCHES: usize = 256;

/// The container's tree from its listing (`listing.rs`) and the changed files fetched one by
/// one; `None`: no usable listing, or too much changed (read the whole archive instead).
async fn listed_tree(
    inner: &Inner,
    container: &str,
    manifest: &Manifest,
    stage: &Path,
    deadline: tokio::time::Instant,
    report: &mut SyncReport,
) -> Option<Tree> {
    let limits = inner.opts.sync;
    if !inner.sync.listing(&limits, manifest) {
        return None;
    }
    let mut notes = SyncReport::default();
    let listed = match tokio::time::timeout_at(
        deadline,
        listing::list(inner, container, &mut notes),
    )
    .await
    {
        Ok(Ok(l)) => l,
        Ok(Err(why)) => {
            inner.sync.listing_failed(&why);
            return None;
        }
        Err(_) => return None,
    };
    let mut tree = Tree::default();
    let mut fetch: Vec<(Rel, bool)> = Vec::new();
    let mut fetch_bytes = 0u64;
    if listed.len() as u64 > limits.max_entries {
        return None;
    }
    for l in listed {
        tree.stats.insert(l.rel.clone(), l.stat.clone());
        if manifest.stats.get(&l.rel) == Some(&l.stat)
            && let Some(n) = manifest.nodes.get(&l.rel)
        {
            tree.seen.insert(l.rel, Some(n.clone()));
            continue;
        }
        let node = match l.kind {
            b'd' => Node::Dir,
            b'l' => Node::Link { target: l.target },
            b'f' if l.size > limits.max_file_bytes => {
                // Not read: known by its listing only (a placeholder hash).
                if manifest.stats.get(&l.rel) != Some(&l.stat) {
                    notes.skip(
                        &shown(&l.rel),
                        format!(
                            "over {} bytes: kept in the container, not brought back",
                            limits.max_file_bytes
                        ),
                    );
                }
                tree.held.insert(l.rel.clone());
                Node::File {
                    size: l.size,
                    hash: [0; 32],
                    exec: l.exec,
                }
            }
            b'f' => {
                fetch_bytes += l.size;
                fetch.push((l.rel, l.exec));
                continue;
            }
            other => {
                if !manifest.nodes.contains_key(&l.rel) {
                    notes.skip(
                        &shown(&l.rel),
                        format!(
                            "kind `{}`: not a file, folder or symlink, not brought back",
                            other as char
                        ),
                    );
                }
                tree.seen.insert(l.rel, None);
                continue;
            }
        };
        tree.seen.insert(l.rel, Some(node));
    }
    if fetch.len() > MAX_FETCHES || fetch_bytes > limits.max_total_bytes {
        return None;
    }
    let workdir = inner.opts.workdir.trim_end_matches('/').to_string();
    for (n, (rel, exec)) in fetch.into_iter().enumerate() {
        let Ok(name) = std::str::from_utf8(&rel) else {
            return None; // not a query parameter: the whole archive
        };
        let rx = spawn_download(
            inner,
            container,
            format!("{workdir}/{name}"),
            deadline,
            inner.opts.engine_timeout,
        );
        let staged = stage.join(format!("f{n}"));
        let max = limits.max_file_bytes;
        let got = tokio::task::spawn_blocking(move || {
            fetch_one(PieceReader::new(rx), &staged, max, exec).map(|node| (node, staged))
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        match got {
            Ok((Some(node), staged)) => {
                tree.seen.insert(rel.clone(), Some(node));
                tree.staged.insert(rel, Staged(staged));
            }
            // Replaced by something else since the listing: known next time.
            Ok((None, _)) => {
                tree.stats.remove(&rel);
            }
            Err(why) => {
                tree.incomplete = Some(why);
                break;
            }
        }
    }
    report.refused.extend(notes.refused);
    report.skipped.extend(notes.skipped);
    report.more_notes += notes.more_notes;
    report.listed = true;
    Some(tree)
}

/// After a push: the container's listed `stat` of each path whose node the manifest knows (so
/// the next bring-back reads only what the command changed). Best effort.
pub(crate) async fn learn_stats(inner: &Inner, container: &str, manifest: &mut Manifest) {
    if !inner.sync.listing(&inner.opts.sync, manifest) {
        return;
    }
    let mut notes = SyncReport::default();
    let listed = match tokio::time::timeout(
        inner.opts.engine_timeout,
        listing::list(inner, container, &mut notes),
    )
    .await
    {
        Ok(Ok(l)) => l,
        Ok(Err(why)) => {
            inner.sync.listing_failed(&why);
            return;
        }
        Err(_) => return,
    };
    for l in listed {
        let same = match manifest.nodes.get(&l.rel) {
            Some(Node::Dir) => l.kind == b'd',
            Some(Node::Link { target }) => l.kind == b'l' && *target == l.target,
            Some(Node::File { size, exec, .. }) => {
                l.kind == b'f' && *size == l.size && *exec == l.exec
            }
            None => false,
        };
        if same {
            manifest.stats.insert(l.rel, l.stat);
        } else {
            manifest.stats.remove(&l.rel);
        }
    }
}

/// What a bring-back does with the container's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Apply the changes here.
    Apply,
    /// A read-only command's container: nothing is applied here; the manifest only learns what
    /// the container holds now, so the next push puts this side's version back wherever the
    /// command changed it.
    Relearn,
    /// Right after the first copy in: what the container holds that is not the project's (the
    /// engine's mounts at the workdir, `/etc/hosts`...) is recorded as the container's own, never
    /// brought back.
    Baseline,
}

/// Brings the container's changes back into the project (never fails: what could not be done
/// is in `report`), or records them (`mode`).
pub(crate) async fn bring_back(
    inner: &Inner,
    container: &str,
    policy: Arc<Policy>,
    manifest: &mut Manifest,
    report: &mut SyncReport,
    mode: Mode,
) {
    let stage = match tempfile::Builder::new().prefix("aibuddy-sync-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            report.incomplete = Some(format!("no folder to stage the changes in: {e}"));
            return;
        }
    };
    let limits = inner.opts.sync;
    let deadline = tokio::time::Instant::now() + limits.pull_time;
    let tree = match listed_tree(inner, container, manifest, stage.path(), deadline, report).await {
        Some(tree) => tree,
        None => {
            let rx = spawn_download(
                inner,
                container,
                inner.opts.workdir.clone(),
                deadline,
                inner.opts.engine_timeout,
            );
            let base = Path::new(&inner.opts.workdir)
                .file_name()
                .map(|n| n.as_encoded_bytes().to_vec())
                .unwrap_or_default();
            let known = manifest.nodes.clone();
            let stage_path = stage.path().to_path_buf();
            let mut notes = std::mem::take(report);
            let read = tokio::task::spawn_blocking(move || {
                let tree = read_tree(
                    PieceReader::new(rx),
                    &base,
                    &known,
                    limits,
                    &stage_path,
                    &mut notes,
                );
                (tree, notes)
            })
            .await;
            match read {
                Ok((tree, notes)) => {
                    *report = notes;
                    tree
                }
                Err(e) => {
                    report.incomplete = Some(format!("reading the container's tree failed: {e}"));
                    return;
                }
            }
        }
    };
    let root = inner.files.root().to_path_buf();
    let taken = std::mem::take(manifest);
    let mut notes = std::mem::take(report);
    let done = tokio::task::spawn_blocking(move || {
        let mut taken = taken;
        match mode {
            Mode::Relearn => {
                relearn(tree, &mut taken);
                return (taken, notes);
            }
            Mode::Baseline => {
                baseline(tree, &mut taken);
                return (taken, notes);
            }
            Mode::Apply => {}
        }
        match LocalTree::open(&root) {
            Ok(local) => apply(&local, &policy, tree, &mut taken, limits, &mut notes),
            Err(e) => notes.incomplete = Some(format!("cannot open the project: {e}")),
        }
        (taken, notes)
    })
    .await;
    match done {
        Ok((m, n)) => {
            *manifest = m;
            *report = n;
        }
        Err(e) => {
            report.incomplete = Some(format!("bringing the changes back failed: {e}"));
        }
    }
    drop(stage);
}
