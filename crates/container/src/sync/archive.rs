//! The container's archives read (pure over any reader: what a hostile container or engine
//! sends is what the tests feed it): the whole `workdir` compared with the manifest
//! ([`read_tree`]), or one file ([`fetch_one`]); changed files are staged, bounded.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use aibuddy_sandbox::aibuddy_exec::SyncReport;

use super::SyncLimits;
use super::manifest::{Hasher, Node, Rel};
use super::policy::check_name;
use super::shown;

/// A changed file's content, staged in a temporary folder.
#[derive(Debug)]
pub(crate) struct Staged(pub PathBuf);

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
            // A hard link to a file changed in this same read (a build's output linked twice):
            // a copy of it. To anything else: not brought back.
            tar::EntryType::Link
                if let Some(target) = entry.link_name_bytes().and_then(|t| linked(&t, base))
                    && let Some(Some(node @ Node::File { .. })) = tree.seen.get(&target)
                    && let Some(Staged(from)) = tree.staged.get(&target) =>
            {
                let node = node.clone();
                let size = match node {
                    Node::File { size, .. } => size,
                    _ => 0,
                };
                if known.get(&rel) != Some(&node) && staged_bytes + size > limits.max_total_bytes {
                    report.skip(
                        &shown(&rel),
                        format!(
                            "over the {} bytes brought back per command: kept in the container",
                            limits.max_total_bytes
                        ),
                    );
                    tree.held.insert(rel.clone());
                } else if known.get(&rel) != Some(&node) {
                    let path = stage.join(count.to_string());
                    if let Err(e) = std::fs::copy(from, &path) {
                        tree.incomplete = Some(format!("could not stage a file here: {e}"));
                        return tree;
                    }
                    staged_bytes += size;
                    tree.staged.insert(rel.clone(), Staged(path));
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

/// The project-relative name a hard link's target names (`BASE/...`), checked.
fn linked(target: &[u8], base: &[u8]) -> Option<Rel> {
    let t = target.strip_prefix(b"./").unwrap_or(target);
    let rest = t.strip_prefix(base)?.strip_prefix(b"/")?;
    check_name(rest).ok()
}

/// The one regular file of a path's archive, staged at `staged` (`None`: the path is no
/// regular file any more).
pub(crate) fn fetch_one(
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
