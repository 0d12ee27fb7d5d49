//! glob and grep say which directories they could not descend instead of missing what lies
//! beneath silently (issue 22: in a tree deeper than PATH_MAX, glob missed the deep files).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use aibuddy_sandbox::*;
use ops_support::{c, glob_req, grep_req, project, put};
use rustix::fs::{Mode, OFlags};

use crate::ops_support;

/// `deep/` holding 25 levels of 200-character names (more than 4096 bytes of path), created with
/// `mkdirat`/`openat` (no absolute path that long exists for `mkdir`), a file at the bottom.
fn deep_tree(root: &Path) {
    let name = "d".repeat(200);
    std::fs::create_dir(root.join("deep")).unwrap();
    let mut dir = rustix::fs::open(
        root.join("deep"),
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    for _ in 0..25 {
        rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        dir = rustix::fs::openat(
            &dir,
            name.as_str(),
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
    }
    let f = rustix::fs::openat(
        &dir,
        "bottom.txt",
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&f, b"needle\n").unwrap();
}

#[tokio::test]
async fn a_tree_deeper_than_path_max_is_named_not_missed() {
    let (tmp, sb) = project();
    deep_tree(tmp.path());
    put(tmp.path(), "top.txt", "needle\n");
    let g = sb.glob(glob_req("*.txt", None, None), c()).await.unwrap();
    assert_eq!(g.entries, vec!["top.txt".to_string()]);
    assert_eq!(g.skipped.total, 1, "{g:?}");
    let d = &g.skipped.dirs[0];
    assert_eq!(d.reason, "too deep (path longer than PATH_MAX)");
    assert!(d.path.starts_with("deep/ddd"), "{}", d.path);
    assert!(!d.path.starts_with('/'), "relative to the root: {}", d.path);

    let r = sb.grep(grep_req("needle"), c()).await.unwrap();
    assert_eq!(r.total_files, 1, "{r:?}");
    assert_eq!(r.skipped.total, 1, "{r:?}");
    assert_eq!(
        r.skipped.dirs[0].reason,
        "too deep (path longer than PATH_MAX)"
    );
    // The walker's error is not counted as an unreadable file any more (it named the absolute
    // path there).
    assert_eq!(r.unreadable_total, 0, "{r:?}");
}

#[tokio::test]
async fn an_unreadable_directory_is_named() {
    let (tmp, sb) = project();
    put(tmp.path(), "locked/inside.txt", "needle\n");
    put(tmp.path(), "open/a.txt", "needle\n");
    let locked = tmp.path().join("locked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    // As root (CAP_DAC_OVERRIDE) a 0000 directory is still readable: nothing is skipped then,
    // and that is the truth to check.
    let root_reads_it = std::fs::read_dir(&locked).is_ok();
    let g = sb.glob(glob_req("*.txt", None, None), c()).await.unwrap();
    let r = sb.grep(grep_req("needle"), c()).await.unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    if root_reads_it {
        eprintln!("running with CAP_DAC_OVERRIDE: a 0000 directory is readable, nothing to skip");
        assert_eq!(g.entries, vec!["locked/inside.txt", "open/a.txt"]);
        assert!(g.skipped.is_empty() && r.skipped.is_empty(), "{g:?} {r:?}");
        return;
    }
    assert_eq!(g.entries, vec!["open/a.txt"]);
    assert_eq!(
        g.skipped,
        SkippedDirs {
            dirs: vec![SkippedDir {
                path: "locked".into(),
                reason: "permission denied".into()
            }],
            total: 1
        }
    );
    assert_eq!(r.skipped, g.skipped);
}
