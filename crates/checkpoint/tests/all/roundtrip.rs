//! Snapshot, change, rewind on real files: the tree comes back; an unchanged tree reads
//! nothing; a symlink swapped in for a folder cannot redirect a restore out of the project;
//! ignored paths, special files and files over the cap are not checkpointed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use aibuddy_checkpoint::restore::{apply, plan};
use aibuddy_checkpoint::{CheckpointStore, Kind, SkipReason, SnapshotOptions, diff};

fn open(data: &Path, project: &Path) -> CheckpointStore {
    CheckpointStore::open(
        data,
        project,
        SnapshotOptions {
            max_file_bytes: 1024,
            ..SnapshotOptions::default()
        },
    )
    .unwrap()
}

fn age(path: &Path) {
    // Older than the racy window, so the stat cache trusts it.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(old).unwrap();
}

#[test]
fn unchanged_tree_reads_nothing_and_a_rewind_restores_content_mode_and_links() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "one\n").unwrap();
    std::fs::write(p.join(".hidden"), "kept\n").unwrap();
    std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir(p.join("target")).unwrap();
    std::fs::write(p.join("target/out.o"), "ignored").unwrap();
    std::fs::write(p.join("big.bin"), vec![7u8; 4096]).unwrap();
    std::os::unix::fs::symlink("a.txt", p.join("link")).unwrap();
    for f in ["a.txt", ".hidden", ".gitignore", "big.bin"] {
        age(&p.join(f));
    }
    // Past the racy window of the ctimes just set.
    std::thread::sleep(std::time::Duration::from_millis(120));
    let store = open(data.path(), p);
    let before = store.snapshot().unwrap();
    assert!(before.manifest.entries.contains_key(Path::new(".hidden")));
    assert!(
        !before
            .manifest
            .entries
            .contains_key(Path::new("target/out.o"))
    );
    assert_eq!(
        before.manifest.entries[Path::new("big.bin")].kind,
        Kind::Skipped(SkipReason::TooLarge)
    );
    // A fresh store (another process) reads nothing when nothing changed.
    let again = open(data.path(), p).snapshot().unwrap();
    assert_eq!(again.stats.read, 0);
    assert_eq!(again.id, before.id);

    std::fs::write(p.join("a.txt"), "two\n").unwrap();
    std::fs::set_permissions(p.join("a.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(p.join("new.txt"), "new\n").unwrap();
    std::fs::remove_file(p.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", p.join("link")).unwrap();
    std::fs::remove_file(p.join(".hidden")).unwrap();
    let after = store.snapshot().unwrap();
    assert_eq!(diff(&before.manifest, &after.manifest).files.len(), 4);

    let current = store.snapshot().unwrap();
    let pl = plan(&before.manifest, &after.manifest, &current.manifest, false);
    assert!(pl.conflicts.is_empty());
    assert!(apply(store.root_dir(), store.objects(), &pl).is_empty());
    let restored = store.snapshot().unwrap();
    assert!(diff(&before.manifest, &restored.manifest).is_empty());
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "one\n");
    assert_eq!(
        std::fs::metadata(p.join("a.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::read_link(p.join("link")).unwrap(),
        Path::new("a.txt")
    );
    assert!(!p.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.join("target/out.o")).unwrap(),
        "ignored"
    );
}

#[test]
fn a_folder_swapped_for_an_outside_symlink_does_not_redirect_a_restore() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::create_dir(p.join("sub")).unwrap();
    let store = open(data.path(), p);
    let before = store.snapshot().unwrap();
    std::fs::write(p.join("sub/f.txt"), "made by the call\n").unwrap();
    let after = store.snapshot().unwrap();
    std::fs::write(p.join("sub/g.txt"), "g\n").unwrap();
    let before_g = store.snapshot().unwrap();
    std::fs::remove_file(p.join("sub/g.txt")).unwrap();
    let after_g = store.snapshot().unwrap();
    // Someone swaps `sub` for a link to a folder outside holding a file of the same name.
    std::fs::remove_file(p.join("sub/f.txt")).unwrap();
    std::fs::remove_dir(p.join("sub")).unwrap();
    std::fs::write(outside.path().join("f.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("sub")).unwrap();
    let current = store.snapshot().unwrap();
    // Forced: the plan removes sub/f.txt and recreates sub/g.txt, but never through the link.
    let pl = plan(&before.manifest, &after.manifest, &current.manifest, true);
    let _ = apply(store.root_dir(), store.objects(), &pl);
    let pl = plan(
        &before_g.manifest,
        &after_g.manifest,
        &current.manifest,
        true,
    );
    let _ = apply(store.root_dir(), store.objects(), &pl);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
        "outside\n"
    );
    assert!(!outside.path().join("g.txt").exists());
}

#[test]
fn the_in_memory_stat_cache_reuses_an_unchanged_tree_and_sees_every_change_between_snapshots() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/a.txt"), "aaaa\n").unwrap();
    std::fs::write(p.join("b.txt"), "bbbb\n").unwrap();
    std::fs::write(p.join(".gitignore"), "skipme/\n").unwrap();
    std::fs::create_dir(p.join("skipme")).unwrap();
    std::fs::write(p.join("skipme/x"), "x").unwrap();
    let store = open(data.path(), p);
    // Taken at once: every file is racy for the next snapshot, so it is read again.
    let first = store.snapshot_shared().unwrap();
    assert!(!first.manifest.entries.contains_key(Path::new("skipme/x")));
    let racy = store.snapshot_shared().unwrap();
    assert_eq!(racy.id, first.id);
    assert!(racy.stats.unchanged);
    // Past the racy window: nothing is read and the very manifest is reused.
    std::thread::sleep(std::time::Duration::from_millis(120));
    store.snapshot_shared().unwrap();
    let quiet = store.snapshot_shared().unwrap();
    assert!(quiet.stats.unchanged);
    assert_eq!(quiet.stats.read, 0);
    assert_eq!(quiet.id, first.id);

    // A change made between two snapshots with the size and mtime kept (an editor that
    // restores the mtime): ctime still tells it, and it is not hidden by the cache.
    let a = p.join("sub/a.txt");
    let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
    std::fs::write(&a, "AAAA\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::remove_file(p.join("b.txt")).unwrap();
    std::fs::write(p.join("sub/c.txt"), "c\n").unwrap();
    let changed = store.snapshot_shared().unwrap();
    assert!(!changed.stats.unchanged);
    let cs = diff(&quiet.manifest, &changed.manifest);
    let mut paths: Vec<&str> = cs.files.iter().map(|f| f.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, vec!["b.txt", "sub/a.txt", "sub/c.txt"]);
    // The new manifest is the one a fresh process computes from scratch.
    let fresh_data = tempfile::tempdir().unwrap();
    let fresh = open(fresh_data.path(), p).snapshot().unwrap();
    assert_eq!(changed.id, fresh.id);
    assert_eq!(changed.manifest.entries, fresh.manifest.entries);
    // And a store opened afresh on the same data starts from HEAD with the same result.
    let reopened = open(data.path(), p).snapshot().unwrap();
    assert_eq!(reopened.id, changed.id);
}

#[test]
fn the_call_lock_serializes_two_stores_of_one_project() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let one = open(data.path(), project.path());
    let two = open(data.path(), project.path());
    let held = one.lock_calls().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _lock = two.lock_calls().unwrap();
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(300))
            .is_err(),
        "the second store waits while the first holds the lock"
    );
    drop(held);
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the lock is free once dropped");
    waiter.join().unwrap();
}

#[test]
fn a_tree_with_more_folders_than_open_files_allowed_is_walked_whole() {
    // The walk opens a folder only when it lists it: 25 folders under a limit of 20 open files.
    let work = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_aibuddy-checkpoint-bench");
    let tree = work.path().join("tree");
    let run = |args: &str| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n 20 && exec \"$0\" {args}"))
            .arg(bin)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    run(&format!("gen {} 2500 50000", tree.display()));
    let out = run(&format!(
        "{} {} 0",
        work.path().join("data").display(),
        tree.display()
    ));
    let first = out.lines().next().unwrap();
    assert!(
        first.contains("entries=2525 read=2500"),
        "every folder listed, every file read: {first}"
    );
}

#[test]
fn every_walk_width_sees_the_same_tree_deep_or_wide_and_every_change_in_it() {
    // A deep chain (a folder queued one at a time: the other workers wait) beside wide folders
    // (every worker busy).
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let mut deep = p.to_path_buf();
    for i in 0..40 {
        deep.push(format!("n{i}"));
        std::fs::create_dir(&deep).unwrap();
        std::fs::write(deep.join("f"), format!("{i}\n")).unwrap();
    }
    for d in 0..8 {
        let w = p.join(format!("w{d:02}"));
        std::fs::create_dir(&w).unwrap();
        for f in 0..20 {
            std::fs::write(w.join(format!("f{f}")), format!("{d} {f}\n")).unwrap();
        }
    }
    let store = |threads: usize, data: &Path| {
        CheckpointStore::open(
            data,
            p,
            SnapshotOptions {
                walk_threads: threads,
                ..SnapshotOptions::default()
            },
        )
        .unwrap()
    };
    let datas: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let stores: Vec<CheckpointStore> = [1, 2, 6]
        .iter()
        .zip(&datas)
        .map(|(t, d)| store(*t, d.path()))
        .collect();
    let ids = |stores: &[CheckpointStore]| -> Vec<(String, usize)> {
        stores
            .iter()
            .map(|s| {
                let snap = s.snapshot_shared().unwrap();
                (snap.id.clone(), snap.manifest.entries.len())
            })
            .collect()
    };
    let first = ids(&stores);
    assert_eq!(first[0].1, 40 * 2 + 8 * 21, "every folder and file");
    assert!(first.iter().all(|s| *s == first[0]), "{first:?}");
    // Settled (folder cache in use), then changed deep down and in a wide folder.
    std::thread::sleep(std::time::Duration::from_millis(120));
    ids(&stores);
    assert!(ids(&stores).iter().all(|s| s.0 == first[0].0));
    std::fs::write(deep.join("f"), "changed\n").unwrap();
    std::fs::remove_file(p.join("w05/f7")).unwrap();
    let changed = ids(&stores);
    assert!(changed.iter().all(|s| *s == changed[0]), "{changed:?}");
    assert_ne!(changed[0].0, first[0].0);
    assert_eq!(changed[0].1, first[0].1 - 1);
}
