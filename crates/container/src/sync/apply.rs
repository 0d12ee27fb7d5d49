//! The container's tree applied here: deletions (deepest first), then folders, files and links
//! (parents first), each judged by the [`Policy`] and checked against this side's own changes,
//! written through [`LocalTree`] only.

use aibuddy_sandbox::aibuddy_exec::SyncReport;

use super::SyncLimits;
use super::archive::{Staged, Tree};
use super::local::{LocalError, LocalTree};
use super::manifest::{Manifest, Node, Rel};
use super::policy::Policy;
use super::shown;

/// Records what the container holds without applying anything here.
pub(crate) fn relearn(tree: Tree, manifest: &mut Manifest) {
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

/// Records what the container holds beyond what was copied in as its own (held: never
/// brought back, never removed there).
pub(crate) fn baseline(tree: Tree, manifest: &mut Manifest) {
    for (rel, node) in tree.seen {
        if let Some(node) = node
            && !manifest.nodes.contains_key(&rel)
        {
            manifest.held.insert(rel.clone());
            if let Some(st) = tree.stats.get(&rel) {
                manifest.stats.insert(rel.clone(), st.clone());
            }
            manifest.nodes.insert(rel, node);
        }
    }
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
