//! The folder cache on real folders: an unchanged folder is not listed again, and every change
//! (a name added, removed or renamed; a file changed in an unchanged folder; a folder replaced
//! by another of the same name; ignore rules edited in place, above or through a symlink; a
//! nested repository's exclude file) is seen. Each snapshot of the long-lived store is checked
//! against one a fresh store takes from scratch.

use std::path::Path;

use aibuddy_checkpoint::{CheckpointStore, SharedSnapshot, SnapshotOptions};

fn open(data: &Path, project: &Path) -> CheckpointStore {
    CheckpointStore::open(data, project, SnapshotOptions::default()).unwrap()
}

/// Past the racy window of what was just written, then a snapshot that lists whatever changed:
/// the next snapshot of an unchanged tree reuses every listing but `relisted` (those whose
/// rules cannot be trusted).
fn settle_but(store: &CheckpointStore, relisted: usize) {
    std::thread::sleep(std::time::Duration::from_millis(120));
    store.snapshot_shared().unwrap();
    let quiet = store.snapshot_shared().unwrap();
    assert!(quiet.stats.unchanged);
    assert_eq!(
        quiet.stats.listed, relisted,
        "an unchanged tree lists no folder"
    );
}

fn settle(store: &CheckpointStore) {
    settle_but(store, 0);
}

/// A snapshot of the long-lived store, checked against a fresh store's.
fn check(store: &CheckpointStore, project: &Path) -> SharedSnapshot {
    let s = store.snapshot_shared().unwrap();
    let fresh_data = tempfile::tempdir().unwrap();
    let fresh = open(fresh_data.path(), project).snapshot().unwrap();
    assert_eq!(s.manifest.entries, fresh.manifest.entries);
    assert_eq!(s.id, fresh.id);
    s
}

fn has(s: &SharedSnapshot, p: &str) -> bool {
    s.manifest.entries.contains_key(Path::new(p))
}

fn tree(p: &Path) {
    for d in ["d", "d/e", "other"] {
        std::fs::create_dir(p.join(d)).unwrap();
    }
    for f in ["d/a", "d/b", "d/e/f", "other/g"] {
        std::fs::write(p.join(f), format!("{f}\n")).unwrap();
    }
}

#[test]
fn a_folder_changed_by_adding_removing_or_renaming_a_name_is_listed_again() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    let store = open(data.path(), p);
    settle(&store);

    std::fs::write(p.join("d/new"), "new\n").unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/new"));
    assert_eq!(s.stats.listed, 1, "only the changed folder is listed");
    settle(&store);

    std::fs::remove_file(p.join("d/a")).unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "d/a"));
    settle(&store);

    std::fs::rename(p.join("d/b"), p.join("d/b2")).unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "d/b") && has(&s, "d/b2"));
    settle(&store);

    // Moved to another folder: both change.
    std::fs::rename(p.join("d/e/f"), p.join("other/f")).unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "d/e/f") && has(&s, "other/f"));
}

#[test]
fn a_file_changed_inside_an_unchanged_folder_is_seen_without_listing_it() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    let store = open(data.path(), p);
    settle(&store);
    let before = store.snapshot_shared().unwrap();
    // Same size, rewritten in place: the folder's own stamp does not move.
    std::fs::write(p.join("d/e/f"), "D/E/F\n").unwrap();
    let after = check(&store, p);
    assert_eq!(after.stats.listed, 0);
    assert_ne!(
        before.manifest.entries[Path::new("d/e/f")].hash,
        after.manifest.entries[Path::new("d/e/f")].hash
    );
}

#[test]
fn a_folder_replaced_by_another_of_the_same_name_is_listed_again() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    std::fs::create_dir(p.join("spare")).unwrap();
    std::fs::write(p.join("spare/a"), "other a\n").unwrap();
    std::fs::write(p.join("spare/z"), "z\n").unwrap();
    let store = open(data.path(), p);
    settle(&store);

    // Removed and made again, with the same name in it and one more.
    std::fs::remove_dir_all(p.join("d/e")).unwrap();
    std::fs::create_dir(p.join("d/e")).unwrap();
    std::fs::write(p.join("d/e/f"), "F\n").unwrap();
    std::fs::write(p.join("d/e/other"), "x\n").unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/e/f") && has(&s, "d/e/other"));
    settle(&store);

    // Another folder, settled in the cache, renamed over it.
    std::fs::remove_dir_all(p.join("d")).unwrap();
    std::fs::rename(p.join("spare"), p.join("d")).unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/a") && has(&s, "d/z") && !has(&s, "d/e") && !has(&s, "spare/z"));
}

#[test]
fn ignore_rules_edited_in_place_above_an_unchanged_folder_decide_afresh() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    std::fs::write(p.join("d/e/x.log"), "log\n").unwrap();
    std::fs::write(p.join("d/e/y.tmp"), "tmp\n").unwrap();
    std::fs::write(p.join(".gitignore"), "*.log\n").unwrap();
    let store = open(data.path(), p);
    settle(&store);
    let s = store.snapshot_shared().unwrap();
    assert!(!has(&s, "d/e/x.log") && has(&s, "d/e/y.tmp"));

    // The same size, in place: no folder changes, only the root's rule file.
    std::fs::write(p.join(".gitignore"), "*.tmp\n").unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/e/x.log") && !has(&s, "d/e/y.tmp"));
    settle(&store);

    // A rule file in a folder between.
    std::fs::write(p.join("d/.ignore"), "e/\n").unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "d/e/x.log") && !has(&s, "d/e"));
    settle(&store);
    std::fs::write(p.join("d/.ignore"), "f/\n").unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/e/x.log"));
}

#[test]
fn rules_read_through_a_symlink_or_a_nested_exclude_file_decide_afresh() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    std::fs::write(p.join("rules.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("../rules.txt", p.join("d/.gitignore")).unwrap();
    std::fs::create_dir_all(p.join("other/.git/info")).unwrap();
    std::fs::write(p.join("other/.git/info/exclude"), "\n").unwrap();
    let store = open(data.path(), p);
    // The folder whose rules are read through a symlink, and the one beneath it, are always
    // listed afresh.
    settle_but(&store, 2);
    let first = check(&store, p);

    // The symlink's target changes; the symlink and its folder do not.
    std::fs::write(p.join("rules.txt"), "b\n").unwrap();
    let s = check(&store, p);
    assert_ne!(has(&s, "d/a"), has(&first, "d/a"));
    settle_but(&store, 2);

    // A nested repository's exclude file (inside `.git`, which is never walked).
    std::fs::write(p.join("other/.git/info/exclude"), "g\n").unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "other/g"));
}

#[test]
fn a_stat_cache_of_mostly_removed_paths_is_rebuilt_without_stale_listings() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    std::fs::create_dir(p.join("churn")).unwrap();
    for i in 0..5000 {
        std::fs::write(p.join(format!("churn/t{i}")), "t").unwrap();
    }
    let store = open(data.path(), p);
    settle(&store);
    // Most of the cache's paths gone at once: the cache is rebuilt, every folder listed again.
    std::fs::remove_dir_all(p.join("churn")).unwrap();
    let s = check(&store, p);
    assert!(!has(&s, "churn"));
    let relisted = store.snapshot_shared().unwrap();
    assert!(
        relisted.stats.listed > 0,
        "the listings went with the old cache"
    );
    settle(&store);
    std::fs::write(p.join("d/new"), "n\n").unwrap();
    std::fs::write(p.join("d/e/f"), "F/E/D\n").unwrap();
    let s = check(&store, p);
    assert!(has(&s, "d/new"));
}

#[test]
fn same_size_edits_within_one_timestamp_tick_are_each_seen_in_an_unchanged_folder() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    tree(p);
    // More names than one, so the listing's order (by name) differs from the order written.
    for n in ["z", "m", "b0", "a0"] {
        std::fs::write(p.join("d/e").join(n), format!("{n}\n")).unwrap();
    }
    let store = open(data.path(), p);
    settle(&store);
    let f = p.join("d/e/m");
    let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
    // Rewritten in place again and again, the same size, each at once after a snapshot (within
    // the same timestamp tick as it, or as the write before), some with the mtime put back:
    // every snapshot holds what the file holds, and no folder is listed. (On a kernel with
    // fine-grained ctimes once a file's stamp was looked at, Linux 6.13 and later, the ctime
    // alone tells every edit; on a coarser clock it is the racy rule that re-reads the file.)
    for round in 0..40u8 {
        let content = [b'a' + round % 26, b'0' + round / 26, b'\n'];
        std::fs::write(&f, content).unwrap();
        if round % 3 == 0 {
            std::fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
        }
        let s = store.snapshot_shared().unwrap();
        let entry = &s.manifest.entries[Path::new("d/e/m")];
        assert_eq!(
            store.objects().get(&entry.hash).unwrap(),
            content,
            "round {round}: the snapshot holds what the file holds"
        );
        assert_eq!(s.stats.listed, 0, "round {round}: the folder is unchanged");
    }
    check(&store, p);
}
