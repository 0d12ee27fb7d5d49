//! Path resolution on a real directory: a fuzzed path given to the lexical pass and to the local
//! sandbox's read, list, write-preview, write and edit, in a fresh project folder per input whose
//! symlinks lead outside (relative, absolute, to `/`, a loop) next to an `outside` folder.
//!
//! Input: `path 0x1E content`.
//! Invariants: never panics; `scope::relative_path` returns a relative path whose `..` never
//! climb above the root; nothing outside the project is read (the outside marker never appears),
//! listed, created or changed (the outside folder and the folder holding the project are compared
//! byte for byte before and after); every file a write reports lies inside the project once its
//! symlinks are resolved.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use aibuddy_fuzz::{fields, runtime, text};
use aibuddy_sandbox::{
    EditRequest, EditSpec, ListRequest, LocalSandbox, ReadContent, ReadRequest, Sandbox,
    SandboxSettings, WriteRequest, scope,
};
use libfuzzer_sys::fuzz_target;
use tokio_util::sync::CancellationToken;

const MARKER: &str = "OUTSIDE-SECRET-7f3a";

struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    outside: PathBuf,
    next: AtomicU64,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = std::fs::canonicalize(tmp.path()).expect("canonical temp dir");
    let outside = base.join("outside");
    std::fs::create_dir_all(outside.join("nested")).expect("outside dir");
    std::fs::write(outside.join("secret.txt"), format!("{MARKER}\n")).expect("secret");
    std::fs::write(outside.join("nested/deep.txt"), format!("{MARKER} deep\n")).expect("deep");
    Fixture {
        _tmp: tmp,
        base,
        outside,
        next: AtomicU64::new(0),
    }
});

/// Every file and folder under `dir` (not following symlinks) with its content or link target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let what = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if meta.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else {
                format!("file {:?}", std::fs::read(&p).ok())
            };
            use std::os::unix::fs::PermissionsExt;
            out.insert(p, format!("{what} mode {:o}", meta.permissions().mode()));
        }
    }
    out
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn make_project(f: &Fixture) -> PathBuf {
    let root = f.base.join(format!(
        "project-{}",
        f.next.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(root.join("sub")).expect("project");
    std::fs::write(root.join("inside.txt"), "inside one\ninside two\n").expect("inside");
    std::fs::write(root.join("sub/a.txt"), "a\n").expect("a");
    let link = |target: &Path, name: &str| {
        std::os::unix::fs::symlink(target, root.join(name)).expect("symlink");
    };
    link(Path::new("../outside"), "link_out");
    link(&f.outside, "link_abs");
    link(Path::new("/"), "link_root");
    link(Path::new("sub"), "link_in");
    link(Path::new("loop"), "loop");
    link(&f.outside.join("secret.txt"), "secret_link");
    link(Path::new("../outside/missing.txt"), "dangling_out");
    root
}

fn assert_inside(root: &Path, rel: &str) {
    if let Ok(real) = std::fs::canonicalize(root.join(rel)) {
        assert!(
            real.starts_with(root),
            "{rel:?} resolves to {real:?}, outside {root:?}"
        );
    }
}

fn check_lexical(root: &Path, given: &str) {
    let Ok(rel) = scope::relative_path(&[root], given) else {
        return;
    };
    assert!(rel.is_relative(), "{given:?} -> {rel:?}");
    let mut depth: i64 = 0;
    for c in rel.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            other => panic!("{given:?} -> {rel:?} has {other:?}"),
        }
        assert!(depth >= 0, "{given:?} -> {rel:?} climbs above the root");
    }
}

fuzz_target!(|data: &[u8]| {
    let f = &*FIXTURE;
    let parts = fields(data, 2);
    let given = text(parts[0]);
    let content = text(parts[1]);
    let root = make_project(f);
    let outside_before = snapshot(&f.outside);
    let base_before = names(&f.base);

    check_lexical(&root, &given);
    let sandbox = LocalSandbox::open(&SandboxSettings::new(&root)).expect("open sandbox");
    let _ = sandbox.scope(&given);
    let cancel = CancellationToken::new;
    runtime().block_on(async {
        if let Ok(r) = sandbox
            .read(
                ReadRequest {
                    path: given.clone(),
                    offset: None,
                    limit: None,
                },
                cancel(),
            )
            .await
        {
            if let ReadContent::Text { lines, .. } = &r.content {
                assert!(
                    !lines.iter().any(|l| l.text.contains(MARKER)),
                    "read {given:?} leaked"
                );
            }
            assert_inside(&root, &r.path);
        }
        if let Ok(l) = sandbox
            .list(
                ListRequest {
                    path: Some(given.clone()),
                    limit: None,
                },
                cancel(),
            )
            .await
        {
            assert!(
                !l.entries
                    .iter()
                    .any(|e| e.name == "secret.txt" || e.name == "deep.txt"),
                "ls {given:?} listed outside"
            );
            assert_inside(&root, &l.path);
        }
        let write = WriteRequest {
            path: given.clone(),
            content: content.clone(),
            expect: None,
        };
        let _ = sandbox.preview_write(write.clone(), cancel()).await;
        if let Ok(w) = sandbox.write(write, cancel()).await {
            assert_inside(&root, &w.path);
        }
        let edit = EditRequest {
            path: given.clone(),
            edits: vec![EditSpec {
                old_string: "inside".into(),
                new_string: content.clone(),
                replace_all: true,
            }],
            expect: None,
        };
        let _ = sandbox.preview_edit(edit.clone(), cancel()).await;
        if let Ok(e) = sandbox.edit(edit, cancel()).await {
            assert_inside(&root, &e.path);
        }
    });

    assert_eq!(
        snapshot(&f.outside),
        outside_before,
        "{given:?} changed the outside folder"
    );
    let mut base_after = names(&f.base);
    base_after.retain(|n| !n.starts_with("project-"));
    let mut base_expected = base_before;
    base_expected.retain(|n| !n.starts_with("project-"));
    assert_eq!(
        base_after, base_expected,
        "{given:?} created something next to the project"
    );
    let _ = std::fs::remove_dir_all(&root);
});
