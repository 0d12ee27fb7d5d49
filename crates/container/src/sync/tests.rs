//! The bring-back against hostile archives, on a real project folder (no engine needed: the
//! archive is what a hostile container or engine could send).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use aibuddy_sandbox::aibuddy_exec::SyncReport;
use aibuddy_sandbox::aibuddy_exec::protect::effective_list;

use super::SyncLimits;
use super::apply::apply;
use super::archive::read_tree;
use super::local::LocalTree;
use super::manifest::{Manifest, Node};
use super::policy::{Policy, check_name};

/// A tar entry with a raw name (no check at all: what a hostile archive holds).
fn raw(b: &mut tar::Builder<Vec<u8>>, name: &[u8], kind: tar::EntryType, data: &[u8], link: &[u8]) {
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.as_old_mut().linkname[..link.len()].copy_from_slice(link);
    h.set_entry_type(kind);
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append(&h, data).unwrap();
}

fn file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
    raw(b, name.as_bytes(), tar::EntryType::Regular, data, b"");
}

fn link(b: &mut tar::Builder<Vec<u8>>, name: &str, target: &str) {
    raw(
        b,
        name.as_bytes(),
        tar::EntryType::Symlink,
        b"",
        target.as_bytes(),
    );
}

/// A project with a git directory git would use (`HEAD`, `config`, `hooks/`).
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
    std::fs::write(d.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(d.path().join(".git/config"), "[core]\n").unwrap();
    d
}

fn policy(root: &Path) -> Policy {
    Policy::for_project(root, &effective_list(&[], &[]), &[])
}

fn notes(r: &SyncReport) -> Vec<String> {
    r.refused.iter().map(|n| n.path.clone()).collect()
}

#[test]
fn names_leading_out_are_refused() {
    for bad in [
        &b"../x"[..],
        b"a/../../x",
        b"/etc/passwd",
        b"a//b",
        b"",
        b"./a",
        b"a/\0b",
    ] {
        assert!(check_name(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
    assert_eq!(check_name(b"a/b/").unwrap(), b"a/b".to_vec());
}

#[test]
fn the_policy_refuses_protected_paths_new_git_directories_and_links_out() {
    let p = Policy::of_lists(
        &[".git/config", ".git/hooks", ".aibuddy", ".envrc"],
        &[".git"],
        &[".ssh"],
    );
    for refused in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".git/modules/m/hooks/post-checkout",
        ".git/modules/m/config",
        "sub/.git/HEAD",
        ".aibuddy/settings.json",
        ".envrc",
        ".ssh/authorized_keys",
    ] {
        assert!(p.write_refusal(refused.as_bytes()).is_some(), "{refused}");
    }
    for allowed in [
        ".git/objects/ab/cdef",
        ".git/index",
        "src/.gitignore",
        "a/b.txt",
    ] {
        assert_eq!(p.write_refusal(allowed.as_bytes()), None, "{allowed}");
    }
    assert!(p.delete_refusal(b".git").is_some());
    assert!(p.link_refusal(b"x", b"/etc").is_some());
    assert!(p.link_refusal(b"a/b", b"../../..").is_some());
    assert!(p.link_refusal(b"h", b".git/hooks").is_some());
    assert!(p.link_refusal(b"a/h", b"../.git/./hooks/x").is_some());
    assert!(p.link_refusal(b"g", b".git").is_some());
    assert!(
        p.link_refusal(b"a/b", b"..").is_some(),
        "the project folder itself"
    );
    assert_eq!(p.link_refusal(b"a/b", b"../c"), None);
    assert_eq!(p.link_refusal(b"a/b", b"c/d"), None);
}

#[test]
fn a_hostile_archive_writes_nothing_outside_and_nothing_protected() {
    let project = repo();
    let outside = tempfile::tempdir().unwrap();
    let root = project.path();
    // A symlink of the project leading out (a hostile repository could hold one).
    std::os::unix::fs::symlink(outside.path(), root.join("x")).unwrap();
    let mut manifest = Manifest::default();
    manifest.nodes.insert(
        b"x".to_vec(),
        Node::Link {
            target: outside.path().as_os_str().as_encoded_bytes().to_vec(),
        },
    );
    let mut b = tar::Builder::new(Vec::new());
    raw(&mut b, b"workspace/", tar::EntryType::Directory, b"", b"");
    file(&mut b, "workspace/../evil", b"pwned");
    file(&mut b, "workspace/a/../../evil2", b"pwned");
    file(&mut b, "/etc/aibuddy-evil", b"pwned");
    file(&mut b, "elsewhere/evil", b"pwned");
    link(&mut b, "workspace/x", &outside.path().to_string_lossy());
    file(&mut b, "workspace/x/passwd", b"pwned");
    link(&mut b, "workspace/etc", "/etc");
    link(&mut b, "workspace/up", "../..");
    link(&mut b, "workspace/hooklink", ".git/hooks");
    file(
        &mut b,
        "workspace/.git/hooks/pre-commit",
        b"#!/bin/sh\nrm -rf ~\n",
    );
    file(
        &mut b,
        "workspace/.git/config",
        b"[core]\nhooksPath = /tmp\n",
    );
    file(&mut b, "workspace/.aibuddy/settings.json", b"{}");
    file(&mut b, "workspace/sub/.git/config", b"[core]\n");
    file(&mut b, "workspace/big.bin", &[7u8; 4096]);
    file(&mut b, "workspace/ok.txt", b"fine\n");
    let hard = |b: &mut tar::Builder<Vec<u8>>, name: &str, target: &str| {
        raw(
            b,
            name.as_bytes(),
            tar::EntryType::Link,
            b"",
            target.as_bytes(),
        )
    };
    hard(&mut b, "workspace/hl", "workspace/ok.txt");
    hard(&mut b, "workspace/hl2", "workspace/../../etc/passwd");
    hard(&mut b, "workspace/hl3", "workspace/big.bin");
    let archive = b.into_inner().unwrap();
    let limits = SyncLimits {
        max_file_bytes: 1024,
        ..Default::default()
    };
    let stage = tempfile::tempdir().unwrap();
    let mut report = SyncReport::default();
    let tree = read_tree(
        &archive[..],
        b"workspace",
        &manifest.nodes,
        limits,
        stage.path(),
        &mut report,
    );
    assert_eq!(tree.incomplete, None);
    let local = LocalTree::open(root).unwrap();
    apply(
        &local,
        &policy(root),
        tree,
        &mut manifest,
        limits,
        &mut report,
    );

    assert_eq!(
        std::fs::read_to_string(root.join("ok.txt")).unwrap(),
        "fine\n"
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
    let parent = root.parent().unwrap();
    assert!(!parent.join("evil").exists() && !parent.join("evil2").exists());
    assert!(!Path::new("/etc/aibuddy-evil").exists());
    for absent in [
        "etc",
        "up",
        "hooklink",
        ".git/hooks/pre-commit",
        ".aibuddy",
        "sub",
        "big.bin",
        "hl2",
        "hl3",
        "evil",
    ] {
        assert!(
            std::fs::symlink_metadata(root.join(absent)).is_err(),
            "{absent} was brought back"
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // ok.txt, and its hard link as a copy.
    assert_eq!(report.brought_back, 2, "{report:?}");
    assert_eq!(std::fs::read_to_string(root.join("hl")).unwrap(), "fine\n");
    let refused = notes(&report);
    for r in [
        "../evil",
        "a/../../evil2",
        "/etc/aibuddy-evil",
        "elsewhere/evil",
        "x/passwd",
        "etc",
        "up",
        "hooklink",
        ".git/hooks/pre-commit",
        ".git/config",
        ".aibuddy/settings.json",
        "sub/.git/config",
    ] {
        assert!(
            refused.iter().any(|p| p == r),
            "{r} not refused: {refused:?}"
        );
    }
    let skipped: Vec<&str> = report.skipped.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(skipped, ["big.bin", "hl2", "hl3"], "{report:?}");
    assert!(manifest.held.contains(b"big.bin".as_slice()));
    assert!(report.summary().contains("REFUSED"), "{}", report.summary());
}

/// An archive whose transfer fails after its first bytes.
struct Cut<'a>(&'a [u8]);

impl Read for Cut<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::other("the connection was lost"));
        }
        let n = out.len().min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn deletions_apply_only_from_a_complete_listing_and_never_over_changes_here() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    for n in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(root.join(n), n).unwrap();
    }
    let local = LocalTree::open(root).unwrap();
    let mut manifest = Manifest::default();
    for n in ["a.txt", "b.txt", "c.txt"] {
        let (fp, node) = local.node(n.as_bytes(), None, 1 << 20).unwrap().unwrap();
        manifest.nodes.insert(n.as_bytes().to_vec(), node.clone());
        manifest.local.insert(n.as_bytes().to_vec(), (fp, node));
    }
    let mut b = tar::Builder::new(Vec::new());
    file(&mut b, "workspace/a.txt", b"a.txt");
    let entries_only = b.get_ref().clone();
    let complete = b.into_inner().unwrap();
    let limits = SyncLimits::default();
    let stage = tempfile::tempdir().unwrap();

    // Cut: nothing deleted, and said.
    let mut report = SyncReport::default();
    let mut m = manifest.clone();
    let tree = read_tree(
        Cut(&entries_only),
        b"workspace",
        &m.nodes,
        limits,
        stage.path(),
        &mut report,
    );
    assert!(tree.incomplete.is_some());
    apply(&local, &policy(root), tree, &mut m, limits, &mut report);
    assert!(root.join("b.txt").exists() && root.join("c.txt").exists());
    assert_eq!(report.deleted, 0);
    assert!(
        report.summary().contains("INCOMPLETE"),
        "{}",
        report.summary()
    );

    // Complete: b.txt deleted; c.txt changed here meanwhile, kept.
    std::fs::write(root.join("c.txt"), "changed here").unwrap();
    let mut report = SyncReport::default();
    let tree = read_tree(
        &complete[..],
        b"workspace",
        &manifest.nodes,
        limits,
        stage.path(),
        &mut report,
    );
    assert_eq!(tree.incomplete, None);
    apply(
        &local,
        &policy(root),
        tree,
        &mut manifest,
        limits,
        &mut report,
    );
    assert!(!root.join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("c.txt")).unwrap(),
        "changed here"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "a.txt"
    );
    assert_eq!(report.deleted, 1, "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
}

#[test]
fn a_workdir_replaced_by_a_link_deletes_nothing() {
    let mut b = tar::Builder::new(Vec::new());
    link(&mut b, "workspace", "/etc");
    let archive = b.into_inner().unwrap();
    let mut known = BTreeMap::new();
    known.insert(b"a.txt".to_vec(), Node::Dir);
    let stage = tempfile::tempdir().unwrap();
    let mut report = SyncReport::default();
    let tree = read_tree(
        &archive[..],
        b"workspace",
        &known,
        SyncLimits::default(),
        stage.path(),
        &mut report,
    );
    assert!(
        tree.incomplete
            .is_some_and(|w| w.contains("no longer a folder"))
    );
}

#[test]
fn a_listing_is_parsed_strictly() {
    let mut report = SyncReport::default();
    let out = b"f 6 1700000000.5 1700000000.5 644 a b.txt\0\0d 4096 1.0 1.0 755 dir\0\0l 4 1.0 1.0 777 lnk\0/etc\0f 1 1.0 1.0 755 ../evil\0\0";
    let listed = super::listing::parse(out, &mut report).unwrap();
    let names: Vec<&[u8]> = listed.iter().map(|l| l.rel.as_slice()).collect();
    assert_eq!(names, [&b"a b.txt"[..], b"dir", b"lnk"]);
    assert_eq!(listed[2].target, b"/etc");
    assert_eq!((listed[0].size, listed[0].exec), (6, false));
    assert_eq!(notes(&report), ["../evil"]);
    for bad in [
        &b"f x 1.0 1.0 644 a\0\0"[..],
        b"f 1 1.0 1.0 644\0\0",
        b"f 1 1.0 1.0 9z9 a\0\0",
        b"f 1 1.0 1.0 644 a\0",
    ] {
        assert!(
            super::listing::parse(bad, &mut report).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn hard_links_are_copies_within_the_total_bound() {
    let mut b = tar::Builder::new(Vec::new());
    file(&mut b, "workspace/f", &[1u8; 60]);
    for n in 0..3 {
        let name = format!("workspace/l{n}");
        raw(
            &mut b,
            name.as_bytes(),
            tar::EntryType::Link,
            b"",
            b"workspace/f",
        );
    }
    let archive = b.into_inner().unwrap();
    let limits = SyncLimits {
        max_total_bytes: 100,
        ..Default::default()
    };
    let stage = tempfile::tempdir().unwrap();
    let mut report = SyncReport::default();
    let tree = read_tree(
        &archive[..],
        b"workspace",
        &BTreeMap::new(),
        limits,
        stage.path(),
        &mut report,
    );
    assert_eq!(tree.staged.len(), 1, "{report:?}");
    assert_eq!(report.skipped.len(), 3, "{report:?}");
    assert_eq!(std::fs::read_dir(stage.path()).unwrap().count(), 1);
}
