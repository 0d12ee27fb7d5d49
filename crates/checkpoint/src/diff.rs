//! The change set of a call: a pure comparison of two manifests (before and after the call).
//! Files and symlinks are compared by content and permission bits, directories by permission
//! bits; an added file whose content equals a deleted file's is a rename. Entries that were not
//! checkpointed (over the size cap, special, unreadable) and changed are listed in `skipped`
//! with the reason, so a preview can say they will not be put back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{Entry, Kind, Manifest, same};

/// What happened to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// Added at `path` with the content of the deleted `from`.
    Renamed,
    /// Same content, other permission bits.
    ModeChanged,
    /// A symlink that now points elsewhere.
    SymlinkChanged,
    /// A file became a symlink or a directory, or the other way round.
    TypeChanged,
}

/// One side of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryState {
    /// `file`, `symlink` or `dir`.
    pub kind: String,
    /// Permission bits, octal text (`"644"`).
    pub mode: String,
    pub size: u64,
    /// Object id of the content (empty for a directory).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
}

impl EntryState {
    pub fn of(e: &Entry) -> Self {
        EntryState {
            kind: e.kind.name().to_string(),
            mode: format!("{:o}", e.perm()),
            size: if e.kind == Kind::Dir { 0 } else { e.size },
            hash: e.hash.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Path relative to the project root (lossy UTF-8 for display).
    pub path: String,
    pub change: ChangeKind,
    /// For a rename: the path the content came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<EntryState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<EntryState>,
}

/// A path that changed but is not checkpointed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedChange {
    pub path: String,
    /// `too_large`, `special` or `unreadable`.
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    pub files: Vec<FileChange>,
    #[serde(default)]
    pub skipped: Vec<SkippedChange>,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.skipped.is_empty()
    }
}

pub fn show(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn skip_code(e: &Entry) -> Option<&'static str> {
    match e.kind {
        Kind::Skipped(r) => Some(match r {
            crate::manifest::SkipReason::TooLarge => "too_large",
            crate::manifest::SkipReason::Special => "special",
            crate::manifest::SkipReason::Unreadable => "unreadable",
        }),
        _ => None,
    }
}

/// The paths whose state differs between two manifests (what a rewind of the call touches),
/// in path order: one merge of the two sorted manifests.
pub fn changed_paths<'a>(before: &'a Manifest, after: &'a Manifest) -> Vec<&'a PathBuf> {
    use std::cmp::Ordering;
    let mut out: Vec<&PathBuf> = Vec::new();
    let mut b = before.entries.iter().peekable();
    let mut a = after.entries.iter().peekable();
    loop {
        match (b.peek(), a.peek()) {
            (None, None) => break,
            (Some((p, _)), None) => {
                out.push(p);
                b.next();
            }
            (None, Some((p, _))) => {
                out.push(p);
                a.next();
            }
            (Some((bp, be)), Some((ap, ae))) => match bp.cmp(ap) {
                Ordering::Less => {
                    out.push(bp);
                    b.next();
                }
                Ordering::Greater => {
                    out.push(ap);
                    a.next();
                }
                Ordering::Equal => {
                    if !same(Some(be), Some(ae)) {
                        out.push(bp);
                    }
                    b.next();
                    a.next();
                }
            },
        }
    }
    out
}

/// The change set from `before` to `after`. Pure.
pub fn diff(before: &Manifest, after: &Manifest) -> ChangeSet {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut added: Vec<(&PathBuf, &Entry)> = Vec::new();
    let mut deleted: Vec<(&PathBuf, &Entry)> = Vec::new();
    for p in changed_paths(before, after) {
        let b = before.entries.get(p);
        let a = after.entries.get(p);
        if let Some(code) = a.and_then(skip_code).or_else(|| b.and_then(skip_code)) {
            skipped.push(SkippedChange {
                path: show(p),
                reason: code.to_string(),
            });
            continue;
        }
        let change = match (b, a) {
            (None, Some(a)) => {
                added.push((p, a));
                continue;
            }
            (Some(b), None) => {
                deleted.push((p, b));
                continue;
            }
            (Some(b), Some(a)) if b.kind != a.kind => ChangeKind::TypeChanged,
            (Some(b), Some(a)) => match a.kind {
                Kind::Symlink => ChangeKind::SymlinkChanged,
                Kind::Dir => ChangeKind::ModeChanged,
                _ if b.hash == a.hash => ChangeKind::ModeChanged,
                _ => ChangeKind::Modified,
            },
            (None, None) => continue,
        };
        files.push(FileChange {
            path: show(p),
            change,
            from: None,
            before: b.map(EntryState::of),
            after: a.map(EntryState::of),
        });
    }
    // Renames: an added file with the content of a deleted file (each deleted file used once).
    let mut deleted_by_hash: BTreeMap<&str, Vec<(&PathBuf, &Entry)>> = BTreeMap::new();
    for (p, e) in &deleted {
        if e.kind == Kind::File {
            deleted_by_hash.entry(&e.hash).or_default().push((p, e));
        }
    }
    let mut renamed_from: Vec<&PathBuf> = Vec::new();
    for (p, a) in &added {
        let from = (a.kind == Kind::File)
            .then(|| deleted_by_hash.get_mut(a.hash.as_str()))
            .flatten()
            .and_then(|v| (!v.is_empty()).then(|| v.remove(0)));
        match from {
            Some((fp, fe)) => {
                renamed_from.push(fp);
                files.push(FileChange {
                    path: show(p),
                    change: ChangeKind::Renamed,
                    from: Some(show(fp)),
                    before: Some(EntryState::of(fe)),
                    after: Some(EntryState::of(a)),
                });
            }
            None => files.push(FileChange {
                path: show(p),
                change: ChangeKind::Added,
                from: None,
                before: None,
                after: Some(EntryState::of(a)),
            }),
        }
    }
    for (p, b) in &deleted {
        if renamed_from.contains(p) {
            continue;
        }
        files.push(FileChange {
            path: show(p),
            change: ChangeKind::Deleted,
            from: None,
            before: Some(EntryState::of(b)),
            after: None,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    ChangeSet { files, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::SkipReason;
    use pretty_assertions::assert_eq;

    fn entry(kind: Kind, mode: u32, hash: &str) -> Entry {
        Entry {
            kind,
            mode,
            size: 1,
            mtime_ns: 1,
            ctime_ns: 1,
            ino: 1,
            hash: hash.to_string(),
        }
    }

    fn manifest(items: &[(&str, Entry)]) -> Manifest {
        Manifest {
            taken_at_ns: 0,
            entries: items
                .iter()
                .map(|(p, e)| (PathBuf::from(p), e.clone()))
                .collect(),
        }
    }

    #[test]
    fn every_kind_of_change_is_named() {
        let h = |c: char| c.to_string().repeat(64);
        let before = manifest(&[
            ("keep", entry(Kind::File, 0o100644, &h('1'))),
            ("edit", entry(Kind::File, 0o100644, &h('2'))),
            ("gone", entry(Kind::File, 0o100644, &h('3'))),
            ("old_name", entry(Kind::File, 0o100644, &h('4'))),
            ("chmod", entry(Kind::File, 0o100644, &h('5'))),
            ("link", entry(Kind::Symlink, 0o120777, &h('6'))),
            (
                "big",
                entry(Kind::Skipped(SkipReason::TooLarge), 0o100644, ""),
            ),
        ]);
        let mut big = entry(Kind::Skipped(SkipReason::TooLarge), 0o100644, "");
        big.size = 2;
        let after = manifest(&[
            ("keep", entry(Kind::File, 0o100644, &h('1'))),
            ("edit", entry(Kind::File, 0o100644, &h('7'))),
            ("new_name", entry(Kind::File, 0o100644, &h('4'))),
            ("chmod", entry(Kind::File, 0o100755, &h('5'))),
            ("link", entry(Kind::Symlink, 0o120777, &h('8'))),
            ("new", entry(Kind::File, 0o100644, &h('9'))),
            ("big", big),
        ]);
        let cs = diff(&before, &after);
        let kinds: Vec<(String, ChangeKind, Option<String>)> = cs
            .files
            .iter()
            .map(|f| (f.path.clone(), f.change, f.from.clone()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("chmod".into(), ChangeKind::ModeChanged, None),
                ("edit".into(), ChangeKind::Modified, None),
                ("gone".into(), ChangeKind::Deleted, None),
                ("link".into(), ChangeKind::SymlinkChanged, None),
                ("new".into(), ChangeKind::Added, None),
                (
                    "new_name".into(),
                    ChangeKind::Renamed,
                    Some("old_name".into())
                ),
            ]
        );
        assert_eq!(
            cs.skipped,
            vec![SkippedChange {
                path: "big".into(),
                reason: "too_large".into()
            }]
        );
        assert!(diff(&before, &before).is_empty());
    }
}
