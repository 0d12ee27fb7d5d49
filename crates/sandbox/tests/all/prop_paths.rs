//! Property tests of path resolution: the lexical pass never yields a path that climbs above the
//! root, and on a real project folder whose symlinks lead outside (relative, absolute, to `/`) no
//! generated path reads, lists, writes or edits anything outside it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use aibuddy_sandbox::{
    EditRequest, EditSpec, ListRequest, LocalSandbox, ReadContent, ReadRequest, Sandbox,
    SandboxSettings, WriteRequest, scope,
};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

const MARKER: &str = "OUTSIDE-SECRET-prop";

/// Paths built from the components attackers use.
fn hostile_path(root: String, outside: String) -> impl Strategy<Value = String> {
    let component = prop::sample::select(vec![
        "..",
        ".",
        "",
        "sub",
        "inside.txt",
        "link_out",
        "link_abs",
        "link_root",
        "link_in",
        "secret_link",
        "loop",
        "new.txt",
        "outside",
        "secret.txt",
        "etc",
        "passwd",
        "...",
        "\u{2024}\u{2024}",
        "a\u{0}b",
        "~",
    ]);
    let prefix = prop::sample::select(vec![
        String::new(),
        "/".to_string(),
        format!("{root}/"),
        format!("{outside}/"),
    ]);
    (prefix, prop::collection::vec(component, 1..7))
        .prop_map(|(p, cs)| format!("{p}{}", cs.join("/")))
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if meta.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else {
                format!("file {:?}", std::fs::read(&p).ok())
            };
            out.insert(p, what);
        }
    }
    out
}

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    outside: PathBuf,
    root: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let outside = base.join("outside");
    std::fs::create_dir_all(outside.join("nested")).unwrap();
    std::fs::write(outside.join("outside_only.txt"), format!("{MARKER}\n")).unwrap();
    let root = base.join("project");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("inside.txt"), "inside one\ninside two\n").unwrap();
    let link =
        |target: &Path, name: &str| std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    link(Path::new("../outside"), "link_out");
    link(&outside, "link_abs");
    link(Path::new("/"), "link_root");
    link(Path::new("sub"), "link_in");
    link(Path::new("loop"), "loop");
    link(&outside.join("outside_only.txt"), "secret_link");
    World {
        _tmp: tmp,
        base,
        outside,
        root,
    }
}

fn assert_inside(root: &Path, rel: &str) {
    if let Ok(real) = std::fs::canonicalize(root.join(rel)) {
        assert!(real.starts_with(root), "{rel:?} resolves to {real:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn lexical_pass_never_climbs_above_the_root(
        given in hostile_path("/p/root".into(), "/p/outside".into()),
    ) {
        if let Ok(rel) = scope::relative_path(&[Path::new("/p/root")], &given) {
            prop_assert!(rel.is_relative());
            let mut depth = 0i64;
            for c in rel.components() {
                match c {
                    Component::ParentDir => depth -= 1,
                    Component::Normal(_) => depth += 1,
                    Component::CurDir => {}
                    other => prop_assert!(false, "{given:?} -> {rel:?}: {other:?}"),
                }
                prop_assert!(depth >= 0, "{given:?} -> {rel:?} climbs above the root");
            }
        }
    }
}

#[test]
fn operations_on_a_real_folder_never_leave_it() {
    let w = world();
    let sandbox = LocalSandbox::open(&SandboxSettings::new(&w.root)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outside_before = snapshot(&w.outside);
    let base_names = || {
        let mut v: Vec<_> = std::fs::read_dir(&w.base)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        v.sort();
        v
    };
    let base_before = base_names();
    let (written, refused) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let strategy = hostile_path(
        w.root.display().to_string(),
        w.outside.display().to_string(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    });
    runner
        .run(&strategy, |given| {
            rt.block_on(async {
                let c = CancellationToken::new;
                if let Ok(r) = sandbox
                    .read(
                        ReadRequest {
                            path: given.clone(),
                            offset: None,
                            limit: None,
                        },
                        c(),
                    )
                    .await
                    && let ReadContent::Text { lines, .. } = &r.content
                {
                    assert!(
                        !lines.iter().any(|l| l.text.contains(MARKER)),
                        "read {given:?} leaked"
                    );
                }
                if let Ok(l) = sandbox
                    .list(
                        ListRequest {
                            path: Some(given.clone()),
                            limit: None,
                        },
                        c(),
                    )
                    .await
                {
                    // No generated path names `outside_only.txt`: seeing it means the outside was listed.
                    assert!(
                        !l.entries.iter().any(|e| e.name == "outside_only.txt"),
                        "ls {given:?} listed outside"
                    );
                    assert_inside(&w.root, &l.path);
                }
                let write = WriteRequest {
                    path: given.clone(),
                    content: "written\n".into(),
                    expect: None,
                };
                match sandbox.write(write, c()).await {
                    Ok(wo) => {
                        written.set(written.get() + 1);
                        assert_inside(&w.root, &wo.path);
                    }
                    Err(_) => refused.set(refused.get() + 1),
                }
                let edit = EditRequest {
                    path: given.clone(),
                    edits: vec![EditSpec {
                        old_string: "written".into(),
                        new_string: "edited".into(),
                        replace_all: true,
                    }],
                    expect: None,
                };
                if let Ok(eo) = sandbox.edit(edit, c()).await {
                    assert_inside(&w.root, &eo.path);
                }
            });
            assert_eq!(
                snapshot(&w.outside),
                outside_before,
                "{given:?} changed the outside folder"
            );
            assert_eq!(
                base_names(),
                base_before,
                "{given:?} created a file next to the project"
            );
            Ok(())
        })
        .unwrap();
    // Both sides were exercised: some writes landed inside, some were refused.
    assert!(
        written.get() > 10 && refused.get() > 10,
        "written {written:?}, refused {refused:?}"
    );
    // The links are still there and still point where they did: nothing was replaced through them.
    assert_eq!(
        std::fs::read_link(w.root.join("link_root")).unwrap(),
        Path::new("/")
    );
}
