//! Before a command: what changed on this machine since the last sync goes into the container
//! (one archive upload), what was deleted here is removed there (one `rm -rf --` exec).

use std::collections::{BTreeMap, HashSet};
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use aibuddy_sandbox::aibuddy_exec::SyncReport;
use aibuddy_sandbox::{Sandbox, SandboxError};
use bollard::query_parameters::UploadToContainerOptions;
use bytes::Bytes;

use super::SyncLimits;
use super::local::{
    Kind, LocalError, LocalTree, entries, kind_of, link_target, open_dir, read_file, stat_in,
};
use super::manifest::{Fingerprint, Manifest, Node, Rel, at_or_under};
use super::policy::Policy;
use super::{shown, sync_error};
use crate::state::Inner;

/// Folder levels walked at most.
const MAX_DEPTH: usize = 256;
/// Paths per `rm` exec.
const RM_BATCH: usize = 500;

/// What one push sends.
#[derive(Debug, Default)]
struct Plan {
    /// The archive of what changed (a temporary file), when anything did.
    archive: Option<std::fs::File>,
    /// Paths to remove in the container first (deleted here, or of another kind now).
    remove: Vec<Rel>,
    /// The container's nodes once the push is done (`None`: gone).
    nodes: Vec<(Rel, Option<Node>)>,
    /// Every path here with its node, as walked.
    seen: BTreeMap<Rel, (Fingerprint, Node)>,
    copied: u64,
}

/// The walk of this machine's project.
struct Walk<'a> {
    manifest: &'a Manifest,
    policy: &'a Policy,
    limits: SyncLimits,
    /// The archive's names begin with this (the workdir, without its leading `/`).
    prefix: Vec<u8>,
    builder: tar::Builder<std::fs::File>,
    plan: Plan,
    /// Present here but not copied (over a bound, unreadable): never removed in the container
    /// for that; `kept_trees`: folders not walked, nothing beneath them removed there.
    kept: HashSet<Rel>,
    kept_trees: Vec<Rel>,
    total: u64,
    entries: u64,
    truncated: bool,
    report: &'a mut SyncReport,
}

fn io_err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl Walk<'_> {
    fn name(&self, rel: &[u8]) -> Vec<u8> {
        let mut n = self.prefix.clone();
        n.push(b'/');
        n.extend_from_slice(rel);
        n
    }

    fn header(kind: tar::EntryType, size: u64, mode: u32, mtime: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(mode);
        h.set_mtime(mtime);
        h.set_uid(0);
        h.set_gid(0);
        h
    }

    fn add_dir(&mut self, name: &[u8], mode: u32) -> Result<(), String> {
        let mut h = Self::header(tar::EntryType::Directory, 0, mode, 0);
        self.builder
            .append_data(
                &mut h,
                Path::new(std::ffi::OsStr::from_bytes(name)),
                std::io::empty(),
            )
            .map_err(io_err)
    }

    fn walk(&mut self, dir: &OwnedFd, at: &[u8], depth: usize) -> Result<(), String> {
        let mut names = entries(dir).map_err(io_err)?;
        names.sort();
        for name in names {
            let mut rel = at.to_vec();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(&name);
            if self.policy.excluded(&rel) {
                continue;
            }
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                self.truncated = true;
                return Ok(());
            }
            let Ok(st) = stat_in(dir, &name) else {
                continue; // gone meanwhile
            };
            let fp = Fingerprint::of(&st);
            let known = self.manifest.nodes.get(&rel);
            match kind_of(&st) {
                Kind::Dir => {
                    self.plan.seen.insert(rel.clone(), (fp, Node::Dir));
                    if known != Some(&Node::Dir) {
                        let n = self.name(&rel);
                        self.add_dir(&n, (fp.mode & 0o777) | 0o700)?;
                        self.plan.nodes.push((rel.clone(), Some(Node::Dir)));
                        self.plan.copied += 1;
                    }
                    if depth >= MAX_DEPTH {
                        self.truncated = true;
                        continue;
                    }
                    match open_dir(dir, &name) {
                        Ok(sub) => self.walk(&sub, &rel, depth + 1)?,
                        Err(e) => {
                            // Unknown here: nothing beneath it is removed in the container.
                            self.report.skip(
                                &shown(&rel),
                                format!("a folder not readable here ({e}): not copied in"),
                            );
                            self.kept_trees.push(rel.clone());
                        }
                    }
                }
                Kind::Link => {
                    let Ok(target) = link_target(dir, &name) else {
                        continue;
                    };
                    let node = Node::Link { target };
                    self.plan.seen.insert(rel.clone(), (fp, node.clone()));
                    if known != Some(&node) {
                        let Node::Link { target } = &node else {
                            continue;
                        };
                        let mut h = Self::header(tar::EntryType::Symlink, 0, 0o777, 0);
                        let n = self.name(&rel);
                        self.builder
                            .append_link(
                                &mut h,
                                Path::new(std::ffi::OsStr::from_bytes(&n)),
                                Path::new(std::ffi::OsStr::from_bytes(target)),
                            )
                            .map_err(io_err)?;
                        self.plan.nodes.push((rel.clone(), Some(node)));
                        self.plan.copied += 1;
                    }
                }
                Kind::File => {
                    let cached = self
                        .manifest
                        .local
                        .get(&rel)
                        .filter(|(f, _)| *f == fp)
                        .map(|(_, n)| n.clone());
                    let over = |w: &mut Self, rel: &Rel, why: String| {
                        w.kept.insert(rel.clone());
                        w.report.skip(&shown(rel), why);
                    };
                    // The container's own version (not brought back for its size) stays there
                    // until this side changes the file.
                    if self.manifest.held.contains(&rel)
                        && let Some(n) = &cached
                    {
                        self.kept.insert(rel.clone());
                        self.plan.seen.insert(rel.clone(), (fp, n.clone()));
                        continue;
                    }
                    if fp.size > self.limits.max_file_bytes {
                        over(
                            self,
                            &rel,
                            format!("over {} bytes: not copied in", self.limits.max_file_bytes),
                        );
                        continue;
                    }
                    let mut bytes = Vec::new();
                    let node = match cached {
                        Some(n) => n,
                        None => match read_file(
                            dir,
                            &name,
                            self.limits.max_file_bytes,
                            Some(&mut bytes),
                        ) {
                            Ok((_, n, _)) => n,
                            Err(LocalError::Refused(why)) => {
                                over(self, &rel, format!("{why}: not copied in"));
                                continue;
                            }
                            Err(LocalError::Io(e)) => {
                                over(
                                    self,
                                    &rel,
                                    format!("not readable here ({e}): not copied in"),
                                );
                                continue;
                            }
                        },
                    };
                    self.plan.seen.insert(rel.clone(), (fp, node.clone()));
                    if known == Some(&node) {
                        continue;
                    }
                    let Node::File { size, exec, .. } = node else {
                        continue;
                    };
                    if self.total + size > self.limits.max_total_bytes {
                        over(
                            self,
                            &rel,
                            format!(
                                "over the {} bytes copied in per command",
                                self.limits.max_total_bytes
                            ),
                        );
                        continue;
                    }
                    if bytes.is_empty()
                        && size > 0
                        && let Err(e) =
                            read_file(dir, &name, self.limits.max_file_bytes, Some(&mut bytes))
                    {
                        over(
                            self,
                            &rel,
                            format!("not readable here ({e}): not copied in"),
                        );
                        continue;
                    }
                    self.total += bytes.len() as u64;
                    let mode = (fp.mode & 0o777) | if exec { 0o100 } else { 0 };
                    let mtime = u64::try_from(fp.mtime_ns / 1_000_000_000).unwrap_or(0);
                    let mut h =
                        Self::header(tar::EntryType::Regular, bytes.len() as u64, mode, mtime);
                    let n = self.name(&rel);
                    self.builder
                        .append_data(
                            &mut h,
                            Path::new(std::ffi::OsStr::from_bytes(&n)),
                            bytes.as_slice(),
                        )
                        .map_err(io_err)?;
                    self.plan.nodes.push((rel.clone(), Some(node)));
                    self.plan.copied += 1;
                }
                Kind::Other => {
                    if !self.manifest.filled {
                        self.report
                            .skip(&shown(&rel), "not a file, folder or link: not copied in");
                    }
                }
            }
        }
        Ok(())
    }
}

/// Plans the push (blocking: the walk and the archive).
fn plan(
    root: &Path,
    workdir: &str,
    manifest: &Manifest,
    policy: &Policy,
    limits: SyncLimits,
    report: &mut SyncReport,
) -> Result<Plan, String> {
    let tree = LocalTree::open(root).map_err(|e| format!("cannot open the project: {e}"))?;
    let archive = tempfile::tempfile().map_err(io_err)?;
    let prefix = workdir
        .trim_start_matches('/')
        .trim_end_matches('/')
        .as_bytes()
        .to_vec();
    let mut walk = Walk {
        manifest,
        policy,
        limits,
        prefix: prefix.clone(),
        builder: tar::Builder::new(archive),
        plan: Plan::default(),
        kept: HashSet::new(),
        kept_trees: Vec::new(),
        total: 0,
        entries: 0,
        truncated: false,
        report,
    };
    if !manifest.filled {
        // The workdir and its parents first.
        let mut at = Vec::new();
        for c in prefix.split(|b| *b == b'/') {
            if !at.is_empty() {
                at.push(b'/');
            }
            at.extend_from_slice(c);
            walk.add_dir(&at.clone(), 0o755)?;
        }
    }
    walk.walk(tree.root_fd(), b"", 0)?;
    let Walk {
        builder,
        mut plan,
        kept,
        kept_trees,
        truncated,
        ..
    } = walk;
    // Deleted here (or another kind now): removed there first. Only the outermost of a tree.
    if truncated {
        report.skip(
            "",
            format!(
                "the project has more than {} paths (or deeper than {MAX_DEPTH} folders): the rest was not copied in, and nothing was removed in the container",
                limits.max_entries
            ),
        );
    } else {
        for (rel, node) in &manifest.nodes {
            if plan.remove.iter().any(|r| at_or_under(rel, r))
                || kept_trees.iter().any(|k| at_or_under(rel, k))
            {
                continue;
            }
            let gone = match plan.seen.get(rel) {
                None => !kept.contains(rel) && !manifest.held.contains(rel),
                Some((_, now)) => !now.same_kind(node),
            };
            if gone {
                plan.remove.push(rel.clone());
            }
        }
    }
    let mut file = builder.into_inner().map_err(io_err)?;
    file.flush().map_err(io_err)?;
    if plan.copied > 0 {
        file.rewind().map_err(io_err)?;
        plan.archive = Some(file);
    }
    Ok(plan)
}

/// Copies what changed here into the container and records it in `manifest`.
pub(crate) async fn push(
    inner: &Inner,
    container: &str,
    policy: Arc<Policy>,
    manifest: &mut Manifest,
    report: &mut SyncReport,
) -> Result<(), SandboxError> {
    let root = inner.files.root().to_path_buf();
    let workdir = inner.opts.workdir.clone();
    let limits = inner.opts.sync;
    let first = !manifest.filled;
    let policy_for_baseline = policy.clone();
    // A copy: a push cut while it plans leaves the manifest as it was.
    let snapshot = manifest.clone();
    let mut notes = SyncReport::default();
    let planned = tokio::task::spawn_blocking(move || {
        let p = plan(&root, &workdir, &snapshot, &policy, limits, &mut notes);
        (p, notes)
    })
    .await
    .map_err(|e| sync_error(inner, format!("the copy into the container failed: {e}")))?;
    let (planned, notes) = planned;
    report.skipped.extend(notes.skipped);
    report.more_notes += notes.more_notes;
    let plan = planned.map_err(|e| {
        sync_error(
            inner,
            format!("could not copy the project into the container: {e}"),
        )
    })?;
    // Removed there first (deleted here, or replaced by another kind of entry). The first time,
    // whatever the image holds at the workdir goes (as a bind mount would hide it): the
    // container's workdir is this project and nothing else, so nothing of the image comes back.
    let mut removable = Vec::new();
    if !manifest.filled {
        // Its content only (the workdir may be a mount point of the image).
        let clear = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            "cd -- \"$1\" 2>/dev/null || exit 0; rm -rf -- ./* ./.[!.]* ./..?*".to_string(),
            "aibuddy-clear".to_string(),
            inner.opts.workdir.clone(),
        ];
        if let Err(e) = super::container::run_short(&inner.docker, container, clear).await {
            tracing::warn!(error = %e, "the image's content at the workdir was not all removed");
        }
    }
    for rel in &plan.remove {
        match std::str::from_utf8(rel) {
            Ok(s) => removable.push(format!("{}/{s}", inner.opts.workdir.trim_end_matches('/'))),
            Err(_) => report.skip(
                &shown(rel),
                "a name that is not UTF-8: not removed in the container",
            ),
        }
    }
    for batch in removable.chunks(RM_BATCH) {
        let mut argv = vec!["rm".to_string(), "-rf".to_string(), "--".to_string()];
        argv.extend(batch.iter().cloned());
        super::container::run_short(&inner.docker, container, argv)
            .await
            .map_err(|e| {
                sync_error(
                    inner,
                    format!("could not remove deleted files in the container: {e}"),
                )
            })?;
    }
    for rel in &plan.remove {
        manifest.forget_tree(rel);
    }
    report.removed_in += plan.remove.len() as u64;
    let changed = plan.copied > 0 || !plan.remove.is_empty();
    if let Some(file) = plan.archive {
        upload(inner, container, file).await?;
    }
    for (rel, node) in plan.nodes {
        manifest.held.remove(&rel);
        match node {
            Some(n) => {
                manifest.nodes.insert(rel, n);
            }
            None => {
                manifest.nodes.remove(&rel);
            }
        }
    }
    for (rel, seen) in plan.seen {
        if matches!(seen.1, Node::File { .. }) {
            manifest.local.insert(rel, seen);
        }
    }
    manifest.filled = true;
    report.copied_in += plan.copied;
    if first {
        // What the container holds that is not the project's (mounts the engine keeps at the
        // workdir) is its own: never brought back.
        let mut ignored = SyncReport::default();
        super::pull::bring_back(
            inner,
            container,
            policy_for_baseline,
            manifest,
            &mut ignored,
            super::pull::Mode::Baseline,
        )
        .await;
    }
    if changed {
        // What the container lists for what was just copied: the next bring-back reads only
        // what the command changes.
        super::pull::learn_stats(inner, container, manifest).await;
    }
    Ok(())
}

/// Streams the archive `file` into the container at `/` (`PUT /containers/{id}/archive`).
async fn upload(inner: &Inner, container: &str, file: std::fs::File) -> Result<(), SandboxError> {
    use tokio::io::AsyncReadExt;
    let file = tokio::fs::File::from_std(file);
    let body = futures::stream::unfold(Some(file), |state| async move {
        let mut file = state?;
        let mut buf = vec![0u8; 256 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    let opts = UploadToContainerOptions {
        path: "/".into(),
        ..Default::default()
    };
    // The client's timeout runs until the response starts, that is over the whole upload: a
    // client of its own bounded by the sync's transfer time (and the push's bound around it),
    // not by the engine timeout of one request.
    let client = crate::engine::connect(&inner.opts.endpoint, inner.opts.sync.pull_time)
        .map_err(|e| sync_error(inner, e))?;
    client
        .upload_to_container(container, Some(opts), bollard::body_try_stream(body))
        .await
        .map_err(|e| {
            sync_error(
                inner,
                format!("could not copy the project into the container: {e}"),
            )
        })
}
