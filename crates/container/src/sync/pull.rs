//! After a command: the container's tree comes back as one archive (`GET
//! /containers/{id}/archive?path=WORKDIR`): the listing and the content at once. [`read_tree`]
//! compares each entry with the manifest and stages the changed files (bounded); [`apply`]
//! writes them here under the [`Policy`] through [`LocalTree`] only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::SyncReport;
use bollard::query_parameters::DownloadFromContainerOptions;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::local::{LocalError, LocalTree};
use super::manifest::{Hasher, Manifest, Node, Rel};
use super::policy::{Policy, check_name};
use super::shown;
use super::{SyncLimits, listing};
use crate::sandbox::Inner;

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

/// A changed file's content, staged in a temporary folder.
#[derive(Debug)]
pub(crate) struct Staged(PathBuf);

/// What the container holds, compared with the manifest.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// Every path the archive holds, with its node (those of another kind: `None`).
    pub seen: BTreeMap<Rel, Option<Node>>,
    /// The changed files' contents.
    pub staged: BTreeMap<Rel, Staged>,
    /// Changed files not staged (over a bound): left in the container.
    pub held: HashSet<Rel>,
    /// Why the archive was not read to its end (`None`: it was).
    pub incomplete: Option<String>,
    /// The listed `stat` of each path (a listing's tree only).
    pub stats: HashMap<Rel, Vec<u8>>,
}

/// Reads the container's archive (entries named `BASE/...`, `BASE` the workdir's last
/// component): every entry's node, the changed files staged in `stage` (bounded by `limits`),
/// the names refused and the entries skipped noted in `report`.
pub(crate) fn read_tree(
    reader: impl Read,
    base: &[u8],
    known: &BTreeMap<Rel, Node>,
    limits: SyncLimits,
    stage: &Path,
    report: &mut SyncReport,
) -> Tree {
    let mut tree = Tree::default();
    let mut archive = tar::Archive::new(reader);
    let mut staged_bytes = 0u64;
    let mut count = 0u64;
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            tree.incomplete = Some(format!("the archive could not be read: {e}"));
            return tree;
        }
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tree.incomplete = Some(format!("the archive could not be read: {e}"));
                return tree;
            }
        };
        count += 1;
        if count > limits.max_entries {
            tree.incomplete = Some(format!(
                "the container holds more than {} paths",
                limits.max_entries
            ));
            return tree;
        }
        let raw = entry.path_bytes().into_owned();
        let raw = raw.strip_prefix(b"./").unwrap_or(&raw);
        let rest = match raw.strip_prefix(base) {
            Some(r) if r.is_empty() || r == b"/" => {
                // The workdir itself: a folder, or the command replaced it (by a symlink...):
                // then nothing of the listing can be trusted to mean deletions.
                if entry.header().entry_type() != tar::EntryType::Directory {
                    tree.incomplete =
                        Some("the workdir is no longer a folder in the container".into());
                    return tree;
                }
                continue;
            }
            Some(r) if r.starts_with(b"/") => &r[1..],
            _ => {
                report.refuse(&shown(raw), "a name outside the project folder");
                continue;
            }
        };
        let rel = match check_name(rest) {
            Ok(r) => r,
            Err(why) => {
                report.refuse(&shown(rest), why);
                continue;
            }
        };
        let header = entry.header();
        let exec = header.mode().is_ok_and(|m| m & 0o111 != 0);
        let node = match header.entry_type() {
            tar::EntryType::Directory => Node::Dir,
            tar::EntryType::Symlink => Node::Link {
                target: entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default(),
            },
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.size();
                let keep =
                    size <= limits.max_file_bytes && staged_bytes + size <= limits.max_total_bytes;
                let path = stage.join(count.to_string());
                let mut file = if keep {
                    match std::fs::File::create(&path) {
                        Ok(f) => Some(f),
                        Err(e) => {
                            tree.incomplete = Some(format!("could not stage a file here: {e}"));
                            return tree;
                        }
                    }
                } else {
                    None
                };
                let mut hasher = Hasher::default();
                let mut buf = vec![0u8; 64 * 1024];
                let mut read = 0u64;
                loop {
                    let n = match entry.read(&mut buf) {
                        Ok(n) => n,
                        Err(e) => {
                            tree.incomplete = Some(format!("the archive could not be read: {e}"));
                            return tree;
                        }
                    };
                    if n == 0 {
                        break;
                    }
                    read += n as u64;
                    hasher.update(&buf[..n]);
                    if let Some(f) = file.as_mut()
                        && let Err(e) = f.write_all(&buf[..n])
                    {
                        tree.incomplete = Some(format!("could not stage a file here: {e}"));
                        return tree;
                    }
                }
                let node = Node::File {
                    size: read,
                    hash: hasher.finish(),
                    exec,
                };
                if known.get(&rel) == Some(&node) {
                    if file.is_some() {
                        let _ = std::fs::remove_file(&path);
                    }
                } else if file.is_some() {
                    staged_bytes += read;
                    tree.staged.insert(rel.clone(), Staged(path));
                } else {
                    let why = if size > limits.max_file_bytes {
                        format!(
                            "over {} bytes: kept in the container, not brought back",
                            limits.max_file_bytes
                        )
                    } else {
                        format!(
                            "over the {} bytes brought back per command: kept in the container",
                            limits.max_total_bytes
                        )
                    };
                    report.skip(&shown(&rel), why);
                    tree.held.insert(rel.clone());
                }
                node
            }
            other => {
                if known.get(&rel).is_none() {
                    report.skip(
                        &shown(&rel),
                        format!("{other:?}: not a file, folder or symlink, not brought back"),
                    );
                }
                tree.seen.insert(rel, None);
                continue;
            }
        };
        tree.seen.insert(rel, Some(node));
    }
    // The end of the archive is not the end of the transfer: read it to its end, so a cut one is
    // known as cut (its deletions would be wrong).
    let mut reader = archive.into_inner();
    if let Err(e) = std::io::copy(&mut reader, &mut std::io::sink()) {
        tree.incomplete = Some(e.to_string());
    }
    tree
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

/// The one regular file of a path's archive, staged at `staged` (`None`: the path is no
/// regular file any more).
fn fetch_one(
    reader: impl Read,
    staged: &Path,
    max: u64,
    exec: bool,
) -> Result<Option<Node>, String> {
    let mut archive = tar::Archive::new(reader);
    let mut entries = archive.entries().map_err(|e| e.to_string())?;
    let Some(entry) = entries.next() else {
        return Ok(None);
    };
    let mut entry = entry.map_err(|e| format!("the archive could not be read: {e}"))?;
    if !matches!(
        entry.header().entry_type(),
        tar::EntryType::Regular | tar::EntryType::Continuous
    ) || entry.size() > max
    {
        return Ok(None);
    }
    let mut file =
        std::fs::File::create(staged).map_err(|e| format!("could not stage a file here: {e}"))?;
    let mut hasher = Hasher::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = entry
            .read(&mut buf)
            .map_err(|e| format!("the archive could not be read: {e}"))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| format!("could not stage a file here: {e}"))?;
    }
    let mut rest = archive.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(|e| e.to_string())?;
    Ok(Some(Node::File {
        size,
        hash: hasher.finish(),
        exec,
    }))
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

/// Brings the container's changes back into the project (never fails: what could not be done
/// is in `report`). `here: false` (a read-only command's container): nothing is applied here;
/// the manifest only learns what the container holds now, so the next push puts this side's
/// version back wherever the command changed it.
pub(crate) async fn bring_back(
    inner: &Inner,
    container: &str,
    policy: Arc<Policy>,
    manifest: &mut Manifest,
    report: &mut SyncReport,
    here: bool,
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
        if !here {
            relearn(tree, &mut taken);
            return (taken, notes);
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

/// Records what the container holds without applying anything here.
fn relearn(tree: Tree, manifest: &mut Manifest) {
    if tree.incomplete.is_some() {
        // Unknown: copy everything in again next time.
        *manifest = Manifest::default();
        return;
    }
    manifest.held.clear();
    manifest.nodes = tree
        .seen
        .into_iter()
        .filter_map(|(rel, node)| node.map(|n| (rel, n)))
        .collect();
    manifest.stats = tree.stats;
    manifest.stats.retain(|k, _| manifest.nodes.contains_key(k));
}

/// Applies `tree` here: deletions (deepest first), then folders, files and links (parents
/// first), each judged by `policy` and checked against this side's own changes meanwhile.
pub(crate) fn apply(
    local: &LocalTree,
    policy: &Policy,
    tree: Tree,
    manifest: &mut Manifest,
    limits: SyncLimits,
    report: &mut SyncReport,
) {
    // This side's node of `rel` now, or why it cannot be known.
    let here = |m: &Manifest, rel: &[u8]| -> Result<Option<Node>, String> {
        match local.node(rel, m.local.get(rel), limits.max_file_bytes) {
            Ok(n) => Ok(n.map(|(_, n)| n)),
            Err(e) => Err(e.to_string()),
        }
    };
    if let Some(why) = &tree.incomplete {
        report.incomplete = Some(why.clone());
    } else {
        let mut gone: Vec<Rel> = manifest
            .nodes
            .keys()
            .filter(|k| !tree.seen.contains_key(*k))
            .cloned()
            .collect();
        gone.sort_by(|a, b| {
            let depth = |r: &Rel| r.iter().filter(|c| **c == b'/').count();
            depth(b).cmp(&depth(a)).then(b.cmp(a))
        });
        for rel in gone {
            let Some(before) = manifest.nodes.remove(&rel) else {
                continue;
            };
            manifest.held.remove(&rel);
            manifest.stats.remove(&rel);
            if let Some(why) = policy.delete_refusal(&rel) {
                report.refuse(&shown(&rel), format!("deleted in the container: {why}"));
                continue;
            }
            match here(manifest, &rel) {
                Ok(None) => {}
                Ok(Some(now)) if now == before => match local.remove(&rel) {
                    Ok(()) => {
                        report.deleted += 1;
                        manifest.local.remove(&rel);
                    }
                    Err(e) => report.skip(&shown(&rel), format!("not deleted here: {e}")),
                },
                Ok(Some(_)) => report.skip(
                    &shown(&rel),
                    "deleted in the container but changed here meanwhile: kept",
                ),
                Err(e) => report.skip(&shown(&rel), format!("not deleted here: {e}")),
            }
        }
    }
    let Tree {
        seen,
        mut staged,
        held,
        stats,
        ..
    } = tree;
    // Every listed path's node is known after this (the container's, whatever happens here).
    for (rel, st) in stats {
        if seen.get(&rel).is_some_and(Option::is_some) {
            manifest.stats.insert(rel, st);
        }
    }
    for (rel, node) in seen {
        let Some(node) = node else {
            continue;
        };
        let before = manifest.nodes.get(&rel).cloned();
        if before.as_ref() == Some(&node) {
            continue;
        }
        // From here on the container holds `node` at `rel`, whatever happens here.
        manifest.nodes.insert(rel.clone(), node.clone());
        if held.contains(&rel) {
            manifest.held.insert(rel.clone());
            continue;
        }
        let refusal = match &node {
            Node::Link { target } => policy.link_refusal(&rel, target),
            _ => policy.write_refusal(&rel),
        };
        if let Some(why) = refusal {
            report.refuse(&shown(&rel), why);
            continue;
        }
        let now = match here(manifest, &rel) {
            Ok(n) => n,
            Err(e) => {
                report.refuse(&shown(&rel), e);
                continue;
            }
        };
        if now != before && now.as_ref() != Some(&node) {
            report.skip(
                &shown(&rel),
                "changed here while the command ran: this side's version kept",
            );
            continue;
        }
        if now.as_ref() == Some(&node) {
            continue; // already so here
        }
        // Another kind here: the old one goes first (a folder only when empty by now).
        if let Some(n) = &now
            && !n.same_kind(&node)
        {
            if let Some(why) = policy.delete_refusal(&rel) {
                report.refuse(&shown(&rel), why);
                continue;
            }
            if n.is_dir()
                && let Err(e) = local.remove(&rel)
            {
                report.skip(&shown(&rel), format!("not replaced here: {e}"));
                continue;
            }
        }
        let written = match &node {
            Node::Dir => local.make_dir(&rel),
            Node::Link { target } => local.write_link(&rel, target),
            Node::File { exec, size, .. } => match staged.remove(&rel) {
                Some(Staged(path)) => match std::fs::File::open(&path) {
                    Ok(mut f) => {
                        let r = local.write_file(&rel, &mut f, *exec);
                        if r.is_ok() {
                            report.brought_back_bytes += size;
                        }
                        let _ = std::fs::remove_file(&path);
                        r
                    }
                    Err(e) => Err(LocalError::Io(e)),
                },
                None => Err(LocalError::Refused("its content was not staged")),
            },
        };
        match written {
            Ok(fp) => {
                report.brought_back += 1;
                if matches!(node, Node::File { .. }) {
                    manifest.local.insert(rel, (fp, node));
                }
            }
            Err(LocalError::Refused(why)) => report.refuse(&shown(&rel), why),
            Err(e) => report.skip(&shown(&rel), format!("not written here: {e}")),
        }
    }
}
