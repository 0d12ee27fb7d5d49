//! The folder cache: what the previous walk found in each folder (the names its ignore rules
//! keep, and whether each is a folder), so that a walk of an unchanged folder lists nothing,
//! matches no ignore pattern and allocates nothing: it only stats the kept names (git's
//! "untracked cache" does the same).
//!
//! A folder's listing is reused only when all of these hold (the pure tests below):
//! - the folder is the same (device, inode) with the same mtime and ctime: adding, removing or
//!   renaming a name in a folder moves both, so the same stamp means the same names bound to the
//!   same inodes (whose kind cannot change);
//! - its ctime is older than the listing's walk start by more than the racy window
//!   (`RACY_NS`, the stat cache's rule too): a change within the same timestamp tick as the listing is not
//!   trusted (git's "racily clean" rule, as for files);
//! - the rules that decided what it keeps are unchanged: the stat of its `.ignore`,
//!   `.gitignore` and `.git/info/exclude` files and the kind of its `.git` (taken before they
//!   are read), none of them a symlink (whose target may change unseen) nor changed within the
//!   racy window, and the same holds for every folder above it (a folder whose rules changed
//!   marks its whole subtree to be listed afresh).
//!
//! Any doubt lists the folder afresh, as a walk without the cache would; the cache lives in
//! memory only, beside the stat cache, and is rebuilt by every walk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Entries changed this close to a walk's start are not trusted from a cache (the stat cache
/// reads them again, the folder cache lists the folder again): the same timestamp tick may hold
/// a later change.
pub(crate) const RACY_NS: i64 = 50_000_000;

/// File type bits of `st_mode`.
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// A folder's own stat fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirStamp {
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

/// The stat fields of one file the ignore rules are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

impl FileStamp {
    /// Only the kind (for `.git`, whose presence and kind matter, not its stamp: git writes in
    /// it all the time).
    pub fn kind_only(mode: u32) -> FileStamp {
        FileStamp {
            mode: mode & S_IFMT,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            ino: 0,
        }
    }

    fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }
}

/// Where each rule file's stamp sits in [`RuleStamps::items`].
pub(crate) const RULE_IGNORE: usize = 0;
pub(crate) const RULE_GITIGNORE: usize = 1;
pub(crate) const RULE_GIT: usize = 2;
pub(crate) const RULE_EXCLUDE: usize = 3;

/// The stamps of a folder's rule files (`None`: absent): `.ignore`, `.gitignore`, `.git` (kind
/// only) and `.git/info/exclude` (looked at in the root, and where `.git` is a folder).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RuleStamps {
    pub items: [Option<FileStamp>; 4],
}

/// One name a folder's listing keeps (the name itself sits in [`Listing::names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Child {
    /// Where the name starts in the listing's `names`; it ends before the next NUL.
    pub name_at: u32,
    /// The name's length in bytes (its NUL follows it).
    pub name_len: u32,
    /// Whether it was a folder; `None` when it could not be stat'ed.
    pub is_dir: Option<bool>,
    /// Its slot in the stat cache when listed (`statcache::StatCache::at`; a slot emptied
    /// since is looked up by path).
    pub slot: Option<u32>,
}

/// The path of `name` in the folder `dir_rel` (both relative to the root; `""`: the root).
pub(crate) fn join(dir_rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(dir_rel.len() + name.len() + 1);
    join_into(&mut path, dir_rel, name);
    path
}

/// [`join`] into a buffer kept across calls (cleared first).
pub(crate) fn join_into(path: &mut Vec<u8>, dir_rel: &[u8], name: &[u8]) {
    path.clear();
    path.extend_from_slice(dir_rel);
    if !dir_rel.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// A listing's names as it is built: every name NUL-terminated in one buffer (one allocation
/// per folder, read in order by the next walk), sorted by name when done ([`Names::finish`]).
#[derive(Debug, Default)]
pub(crate) struct Names {
    bytes: Vec<u8>,
    children: Vec<Child>,
}

impl Names {
    /// Adds a name (which holds no NUL: it comes from a listing).
    pub fn push(&mut self, name: &[u8], is_dir: Option<bool>, slot: Option<u32>) {
        let (Ok(name_at), Ok(name_len)) =
            (u32::try_from(self.bytes.len()), u32::try_from(name.len()))
        else {
            return;
        };
        self.bytes.extend_from_slice(name);
        self.bytes.push(0);
        self.children.push(Child {
            name_at,
            name_len,
            is_dir,
            slot,
        });
    }

    /// The names in byte order (the stat cache's slots and, in a tree checked out or copied
    /// in that order, the kernel's own objects: the next walk reads them in sequence).
    pub fn finish(self) -> (Box<[u8]>, Vec<Child>) {
        let Names {
            bytes,
            mut children,
        } = self;
        let name = |c: &Child| &bytes[c.name_at as usize..(c.name_at + c.name_len) as usize];
        children.sort_unstable_by(|a, b| name(a).cmp(name(b)));
        (bytes.into_boxed_slice(), children)
    }
}

/// What one walk found in one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    pub dir: DirStamp,
    pub rules: RuleStamps,
    /// Start of the walk that listed it (ns since the epoch).
    pub listed_at_ns: i64,
    /// The names the ignore rules keep, each followed by a NUL ([`Child`] says where).
    pub names: Box<[u8]>,
    /// The names the ignore rules keep, in byte order.
    pub children: Vec<Child>,
    /// Listed to the end (a folder listed in part is never reused).
    pub complete: bool,
}

impl Listing {
    /// A child's name.
    pub fn name(&self, c: &Child) -> &[u8] {
        let at = c.name_at as usize;
        self.names
            .get(at..at + c.name_len as usize)
            .unwrap_or_default()
    }

    /// A child's name with its NUL.
    pub fn name_nul(&self, c: &Child) -> &[u8] {
        let at = c.name_at as usize;
        self.names
            .get(at..at + c.name_len as usize + 1)
            .unwrap_or_default()
    }

    fn trusted(&self, ctime_ns: i64) -> bool {
        ctime_ns < self.listed_at_ns.saturating_sub(RACY_NS)
    }

    /// Whether the folder, found now with `now`, still holds the names of this listing.
    pub fn names_hold(&self, now: &DirStamp) -> bool {
        self.complete && self.dir == *now && self.trusted(now.ctime_ns)
    }

    /// Whether the rules that decided this listing's names still decide the same (`now`: the
    /// stamps of the folder's rule files taken before any of them is read).
    pub fn rules_hold(&self, now: &RuleStamps) -> bool {
        self.rules == *now
            && now
                .items
                .iter()
                .flatten()
                .all(|s| !s.is_symlink() && self.trusted(s.ctime_ns))
    }
}

/// Every folder's listing of the previous walk, by path relative to the root (`""`: the root).
#[derive(Debug, Clone, Default)]
pub(crate) struct DirCache {
    pub dirs: HashMap<PathBuf, Arc<Listing>>,
}

impl DirCache {
    pub fn get(&self, dir_rel: &Path) -> Option<&Arc<Listing>> {
        self.dirs.get(dir_rel)
    }

    /// Every path the listings keep (what the walk saw).
    pub fn paths(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        use std::os::unix::ffi::OsStrExt;
        self.dirs.iter().flat_map(|(dir, l)| {
            let dir = dir.as_os_str().as_bytes();
            l.children.iter().map(move |c| join(dir, l.name(c)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 10_000_000_000;

    fn listing() -> Listing {
        let mut names = Names::default();
        names.push(b"b", Some(false), None);
        let (names, children) = names.finish();
        Listing {
            dir: DirStamp {
                dev: 1,
                ino: 2,
                mtime_ns: T - RACY_NS - 5,
                ctime_ns: T - RACY_NS - 5,
            },
            rules: RuleStamps::default(),
            listed_at_ns: T,
            names,
            children,
            complete: true,
        }
    }

    #[test]
    fn a_listing_holds_its_names_in_byte_order_and_a_path_is_its_folder_and_name() {
        let mut names = Names::default();
        for (n, d) in [
            (&b"zz"[..], true),
            (b"a b", false),
            (b"", false),
            (b"m", false),
        ] {
            names.push(n, Some(d), None);
        }
        let (names, children) = names.finish();
        let l = Listing {
            names,
            children,
            ..listing()
        };
        let got: Vec<(&[u8], &[u8], Option<bool>)> = l
            .children
            .iter()
            .map(|c| (l.name(c), l.name_nul(c), c.is_dir))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b""[..], &b"\0"[..], Some(false)),
                (b"a b", b"a b\0", Some(false)),
                (b"m", b"m\0", Some(false)),
                (b"zz", b"zz\0", Some(true)),
            ]
        );
        assert_eq!(join(b"", b"x y"), b"x y");
        assert_eq!(join(b"a/b", b"c"), b"a/b/c");
    }

    #[test]
    fn names_hold_only_for_the_same_folder_unchanged_outside_the_racy_window() {
        let l = listing();
        assert!(l.names_hold(&l.dir));
        // A name added, removed or renamed moves mtime and ctime.
        let changed = DirStamp {
            mtime_ns: T + 1,
            ctime_ns: T + 1,
            ..l.dir
        };
        assert!(!l.names_hold(&changed));
        // Another folder under the same name (replaced): another inode.
        assert!(!l.names_hold(&DirStamp { ino: 3, ..l.dir }));
        assert!(!l.names_hold(&DirStamp { dev: 9, ..l.dir }));
        // Changed within the racy window of the listing: not trusted, even if equal.
        let mut racy = listing();
        racy.dir.ctime_ns = T - RACY_NS;
        assert!(!racy.names_hold(&racy.dir));
        // Listed in part.
        let partial = Listing {
            complete: false,
            ..listing()
        };
        assert!(!partial.names_hold(&partial.dir));
    }

    #[test]
    fn rules_hold_only_for_the_same_regular_rule_files_outside_the_racy_window() {
        let file = FileStamp {
            mode: 0o100_644,
            size: 10,
            mtime_ns: T - RACY_NS - 1,
            ctime_ns: T - RACY_NS - 1,
            ino: 7,
        };
        let mut l = listing();
        l.rules.items[RULE_GITIGNORE] = Some(file);
        l.rules.items[RULE_GIT] = Some(FileStamp::kind_only(0o040_755));
        assert!(l.rules_hold(&l.rules.clone()));
        // Edited in place (the folder unchanged): another size, mtime or ctime.
        let mut edited = l.rules;
        edited.items[RULE_GITIGNORE] = Some(FileStamp {
            ctime_ns: T + 5,
            ..file
        });
        assert!(!l.rules_hold(&edited));
        // Added, removed.
        let mut added = l.rules;
        added.items[RULE_IGNORE] = Some(file);
        assert!(!l.rules_hold(&added));
        let mut removed = l.rules;
        removed.items[RULE_GIT] = None;
        assert!(!l.rules_hold(&removed));
        // A repository's exclude file.
        let mut exclude = l.rules;
        exclude.items[RULE_EXCLUDE] = Some(file);
        assert!(!l.rules_hold(&exclude));
        // A symlink's target may change unseen: never trusted.
        let mut link = listing();
        link.rules.items[RULE_GITIGNORE] = Some(FileStamp {
            mode: 0o120_777,
            ..file
        });
        assert!(!link.rules_hold(&link.rules.clone()));
        // Changed within the racy window.
        let mut racy = listing();
        racy.rules.items[RULE_GITIGNORE] = Some(FileStamp {
            ctime_ns: T - 1,
            ..file
        });
        assert!(!racy.rules_hold(&racy.rules.clone()));
    }
}
