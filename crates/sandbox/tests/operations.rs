//! Behaviour of each operation on real files: bounds at the source, atomic writes that keep
//! permissions, edits all-or-nothing with diffs, gitignore-aware walks, typed errors.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use aibuddy_sandbox::*;
use immutable_fs::{chattr, immutable_project};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

mod immutable_fs;

fn c() -> CancellationToken {
    CancellationToken::new()
}

fn project() -> (tempfile::TempDir, Arc<dyn Sandbox>) {
    let tmp = tempfile::tempdir().unwrap();
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(tmp.path())).unwrap();
    (tmp, sb)
}

fn put(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn read_req(path: &str, offset: Option<u64>, limit: Option<u64>) -> ReadRequest {
    ReadRequest {
        path: path.into(),
        offset,
        limit,
    }
}

#[tokio::test]
async fn read_slices_lines_and_cuts_long_ones() {
    let (tmp, sb) = project();
    let body: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    put(tmp.path(), "big.txt", &body);
    put(
        tmp.path(),
        "long.txt",
        format!("{}\nshort\n", "x".repeat(5000)),
    );

    let out = sb.read(read_req("big.txt", None, None), c()).await.unwrap();
    let ReadContent::Text {
        lines,
        lines_before,
        lines_after,
        more_after,
        cut_lines,
        lossy,
    } = out.content
    else {
        panic!("not text")
    };
    assert_eq!(
        (
            lines.len(),
            lines_before,
            lines_after,
            more_after,
            cut_lines,
            lossy
        ),
        (2000, 0, Some(3000), true, 0, false)
    );
    assert_eq!(
        lines[0],
        Line {
            number: 1,
            text: "line 1".into(),
            cut_chars: 0
        }
    );

    let out = sb
        .read(read_req("big.txt", Some(4999), Some(10)), c())
        .await
        .unwrap();
    let ReadContent::Text {
        lines,
        lines_before,
        lines_after,
        more_after,
        ..
    } = out.content
    else {
        panic!()
    };
    assert_eq!(
        lines.iter().map(|l| l.number).collect::<Vec<_>>(),
        vec![4999, 5000]
    );
    assert_eq!(
        (lines_before, lines_after, more_after),
        (4998, Some(0), false)
    );

    let out = sb
        .read(read_req("long.txt", None, None), c())
        .await
        .unwrap();
    let ReadContent::Text {
        lines, cut_lines, ..
    } = out.content
    else {
        panic!()
    };
    assert_eq!(cut_lines, 1);
    assert_eq!((lines[0].text.len(), lines[0].cut_chars), (2000, 3000));
    assert_eq!(lines[1].text, "short");
}

#[tokio::test]
async fn read_describes_binary_images_and_lossy_text() {
    let (tmp, sb) = project();
    put(tmp.path(), "bin.dat", b"abc\0def");
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend_from_slice(&16u32.to_be_bytes());
    png.extend_from_slice(&9u32.to_be_bytes());
    put(tmp.path(), "pic.png", &png);
    put(tmp.path(), "latin1.txt", b"caf\xe9\n");
    let out = sb.read(read_req("bin.dat", None, None), c()).await.unwrap();
    assert_eq!(
        out.content,
        ReadContent::Binary {
            reason: "contains a NUL byte at offset 3".into()
        }
    );
    let out = sb.read(read_req("pic.png", None, None), c()).await.unwrap();
    assert_eq!(
        out.content,
        ReadContent::Image {
            format: "png".into(),
            width: Some(16),
            height: Some(9)
        }
    );
    assert_eq!(out.size, png.len() as u64);
    let out = sb
        .read(read_req("latin1.txt", None, None), c())
        .await
        .unwrap();
    let ReadContent::Text { lines, lossy, .. } = out.content else {
        panic!()
    };
    assert!(lossy);
    assert_eq!(lines[0].text, "caf\u{fffd}");
}

#[tokio::test]
async fn read_errors_are_typed_with_stages() {
    let (tmp, sb) = project();
    std::fs::create_dir(tmp.path().join("dir")).unwrap();
    let cases = [
        ("missing.txt", "not_found", Stage::Parameters),
        ("dir", "is_a_directory", Stage::Parameters),
        ("../x", "path_escape", Stage::Authorization),
        ("a\0b", "invalid_path", Stage::Parameters),
    ];
    for (path, code, stage) in cases {
        let err = sb.read(read_req(path, None, None), c()).await.unwrap_err();
        assert_eq!((err.code(), err.stage()), (code, stage), "{path:?}: {err}");
    }
    let err = sb
        .read(read_req("x", None, Some(0)), c())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
}

#[tokio::test]
async fn write_is_atomic_keeps_permissions_creates_parents_and_verifies() {
    let (tmp, sb) = project();
    put(tmp.path(), "script.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(
        tmp.path().join("script.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();

    let req = WriteRequest {
        path: "script.sh".into(),
        content: "#!/bin/sh\necho new\nexit 0\n".into(),
        expect: None,
    };
    let plan = sb.preview_write(req.clone(), c()).await.unwrap();
    assert_eq!(
        plan.existing,
        Some(FileStats {
            bytes: 19,
            lines: 2
        })
    );
    assert_eq!(
        plan.new,
        FileStats {
            bytes: 26,
            lines: 3
        }
    );
    assert!(plan.creates_dirs.is_empty());
    assert!(
        plan.diff
            .as_deref()
            .unwrap()
            .contains("-echo old\n+echo new\n+exit 0\n"),
        "{plan:?}"
    );
    let out = sb
        .write(
            WriteRequest {
                expect: Some(Expected::Content(plan.fingerprint.unwrap())),
                ..req
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        WriteOutcome {
            path: "script.sh".into(),
            bytes_written: 26,
            created: false,
            previous: Some(FileStats {
                bytes: 19,
                lines: 2
            }),
            lines: 3,
            mode: 0o750,
            verified: Verified {
                region: "whole file".into(),
                bytes_compared: 26
            },
        }
    );
    let meta = std::fs::metadata(tmp.path().join("script.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);

    let req = WriteRequest {
        path: "a/b/c/new.txt".into(),
        content: "hi\n".into(),
        expect: Some(Expected::Absent),
    };
    let plan = sb.preview_write(req.clone(), c()).await.unwrap();
    assert_eq!(plan.creates_dirs, vec!["a", "a/b", "a/b/c"]);
    let out = sb.write(req, c()).await.unwrap();
    assert!(out.created);
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("a/b/c/new.txt")).unwrap(),
        "hi\n"
    );
    let names: Vec<_> = std::fs::read_dir(tmp.path().join("a/b/c"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("new.txt")],
        "no temp file left"
    );
}

#[tokio::test]
async fn write_refuses_a_changed_file_and_symlinks_and_directories() {
    let (tmp, sb) = project();
    put(tmp.path(), "f.txt", "one\n");
    let req = WriteRequest {
        path: "f.txt".into(),
        content: "two\n".into(),
        expect: None,
    };
    let plan = sb.preview_write(req.clone(), c()).await.unwrap();
    put(tmp.path(), "f.txt", "changed meanwhile\n");
    let err = sb
        .write(
            WriteRequest {
                expect: Some(Expected::Content(plan.fingerprint.unwrap())),
                ..req.clone()
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.stage()),
        ("changed_during_operation", Stage::Execution)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("f.txt")).unwrap(),
        "changed meanwhile\n"
    );
    let err = sb
        .write(
            WriteRequest {
                expect: Some(Expected::Absent),
                ..req
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "changed_during_operation");

    std::os::unix::fs::symlink("f.txt", tmp.path().join("link")).unwrap();
    let err = sb
        .write(
            WriteRequest {
                path: "link".into(),
                content: "x".into(),
                expect: None,
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.stage()),
        ("symlink_target", Stage::Parameters)
    );
    std::fs::create_dir(tmp.path().join("d")).unwrap();
    let err = sb
        .write(
            WriteRequest {
                path: "d".into(),
                content: "x".into(),
                expect: None,
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "is_a_directory");
}

fn edit(old: &str, new: &str, all: bool) -> EditSpec {
    EditSpec {
        old_string: old.into(),
        new_string: new.into(),
        replace_all: all,
    }
}

#[tokio::test]
async fn edit_replaces_exactly_all_or_nothing_with_a_diff() {
    let (tmp, sb) = project();
    let original = "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n";
    put(tmp.path(), "src/lib.rs", original);

    // Missing and ambiguous old text: Parameters errors, file untouched.
    for (spec, code) in [
        (edit("fn z()", "fn y()", false), "old_string_not_found"),
        (
            edit("let x = 1;", "let x = 2;", false),
            "old_string_not_unique",
        ),
    ] {
        let err = sb
            .edit(
                EditRequest {
                    path: "src/lib.rs".into(),
                    edits: vec![spec],
                    expect: None,
                },
                c(),
            )
            .await
            .unwrap_err();
        assert_eq!((err.code(), err.stage()), (code, Stage::Parameters));
    }
    // A later edit failing undoes nothing because nothing was applied.
    let err = sb
        .edit(
            EditRequest {
                path: "src/lib.rs".into(),
                edits: vec![edit("fn a()", "fn aa()", false), edit("nope", "x", false)],
                expect: None,
            },
            c(),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        SandboxError::OldStringNotFound { index: 1, .. }
    ));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("src/lib.rs")).unwrap(),
        original
    );

    let req = EditRequest {
        path: "src/lib.rs".into(),
        edits: vec![
            edit("fn a()", "fn aa()", false),
            edit("let x = 1;", "let x = 2;", true),
        ],
        expect: None,
    };
    let plan = sb.preview_edit(req.clone(), c()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("src/lib.rs")).unwrap(),
        original,
        "preview wrote"
    );
    let out = sb
        .edit(
            EditRequest {
                expect: Some(plan.fingerprint),
                ..req
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(out.diff, plan.diff);
    assert_eq!(out.replacements, 3);
    assert_eq!(out.changed_lines, vec![(1, 1), (3, 4)]);
    assert_eq!(out.verified.region, "lines 1, 3-4 (whole file compared)");
    assert_eq!(
        out.diff,
        "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,4 +1,4 @@\n-fn a() {}\n+fn aa() {}\n fn b() {}\n-let x = 1;\n-let x = 1;\n+let x = 2;\n+let x = 2;\n"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("src/lib.rs")).unwrap(),
        "fn aa() {}\nfn b() {}\nlet x = 2;\nlet x = 2;\n"
    );
    put(tmp.path(), "bad.txt", b"\xff\xfe old");
    let err = sb
        .edit(
            EditRequest {
                path: "bad.txt".into(),
                edits: vec![edit("old", "new", false)],
                expect: None,
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.stage()), ("not_text", Stage::Parameters));
}

fn gitignored_project() -> (tempfile::TempDir, Arc<dyn Sandbox>) {
    let (tmp, sb) = project();
    let r = tmp.path();
    put(r, ".gitignore", "target/\n*.log\n");
    put(r, "src/a.rs", "fn alpha() {}\n// TODO one\n");
    put(r, "src/b.rs", "fn beta() {}\n// todo two\n// TODO three\n");
    put(r, "src/nested/c.rs", "fn gamma() {}\n");
    put(r, "target/debug/gen.rs", "// TODO generated\n");
    put(r, "notes.log", "TODO log\n");
    put(r, ".hidden/h.rs", "// TODO hidden\n");
    put(r, "README.md", "todo: readme\n");
    put(r, "bin.dat", b"TODO\0binary");
    (tmp, sb)
}

#[tokio::test]
async fn glob_is_gitignore_aware_ordered_and_bounded() {
    let (_tmp, sb) = gitignored_project();
    let out = sb
        .glob(
            GlobRequest {
                pattern: "*.rs".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        GlobOutcome {
            path: ".".into(),
            entries: vec![
                "src/a.rs".into(),
                "src/b.rs".into(),
                "src/nested/c.rs".into()
            ],
            omitted: 0
        }
    );
    let out = sb
        .glob(
            GlobRequest {
                pattern: "src/*.rs".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(out.entries, vec!["src/a.rs", "src/b.rs"]);
    let out = sb
        .glob(
            GlobRequest {
                pattern: "**/*.rs".into(),
                path: Some("src".into()),
                limit: Some(2),
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(
        (out.path.as_str(), out.entries.clone(), out.omitted),
        ("src", vec!["src/a.rs".into(), "src/b.rs".into()], 1)
    );
    let err = sb
        .glob(
            GlobRequest {
                pattern: "a[".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.stage()),
        ("invalid_argument", Stage::Parameters)
    );
}

#[tokio::test]
async fn grep_modes_context_case_glob_and_bounds() {
    let (tmp, sb) = gitignored_project();
    let grep = |req: GrepRequest| {
        let sb = Arc::clone(&sb);
        async move { sb.grep(req, c()).await.unwrap() }
    };
    let out = grep(GrepRequest {
        pattern: "TODO".into(),
        ..Default::default()
    })
    .await;
    let found: Vec<_> = out
        .matches
        .iter()
        .map(|m| (m.path.as_str(), m.number, m.text.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("src/a.rs", 2, "// TODO one"),
            ("src/b.rs", 3, "// TODO three")
        ]
    );
    assert_eq!(
        (
            out.total_matches,
            out.total_files,
            out.omitted,
            out.binary_files
        ),
        (2, 2, 0, 1)
    );

    let out = grep(GrepRequest {
        pattern: "todo".into(),
        case_insensitive: true,
        ..Default::default()
    })
    .await;
    assert_eq!(out.total_matches, 4, "{out:?}");

    let out = grep(GrepRequest {
        pattern: "todo".into(),
        case_insensitive: true,
        limit: Some(2),
        ..Default::default()
    })
    .await;
    assert_eq!((out.matches.len(), out.omitted), (2, 2));
    assert_eq!(
        (out.matches[0].path.as_str(), out.matches[1].path.as_str()),
        ("README.md", "src/a.rs")
    );

    let out = grep(GrepRequest {
        pattern: "todo".into(),
        case_insensitive: true,
        mode: GrepMode::FilesWithMatches,
        ..Default::default()
    })
    .await;
    assert_eq!(out.files, vec!["README.md", "src/a.rs", "src/b.rs"]);
    let out = grep(GrepRequest {
        pattern: "todo".into(),
        case_insensitive: true,
        mode: GrepMode::Count,
        glob: Some("*.rs".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(
        out.counts,
        vec![
            FileCount {
                path: "src/a.rs".into(),
                count: 1
            },
            FileCount {
                path: "src/b.rs".into(),
                count: 2
            }
        ]
    );

    let out = grep(GrepRequest {
        pattern: "TODO three".into(),
        context: 1,
        ..Default::default()
    })
    .await;
    assert_eq!(
        out.matches,
        vec![GrepMatch {
            path: "src/b.rs".into(),
            number: 3,
            text: "// TODO three".into(),
            before: vec![ContextLine {
                number: 2,
                text: "// todo two".into()
            }],
            after: vec![],
        }]
    );
    // A search started in a subfolder still honours the root's .gitignore.
    put(tmp.path(), "target/x.rs", "TODO in target\n");
    let out = grep(GrepRequest {
        pattern: "TODO".into(),
        path: Some("target".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(out.total_matches, 0, "{out:?}");
    // An explicit file is searched.
    let out = grep(GrepRequest {
        pattern: "TODO".into(),
        path: Some("src/a.rs".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(out.total_matches, 1);
    let err = sb
        .grep(
            GrepRequest {
                pattern: "(".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.stage()),
        ("invalid_argument", Stage::Parameters)
    );
}

#[tokio::test]
async fn ls_is_bounded_typed_and_summarises_heavy_folders() {
    let (tmp, sb) = gitignored_project();
    put(tmp.path(), "node_modules/x/index.js", "x");
    put(tmp.path(), "node_modules/y.js", "y");
    std::os::unix::fs::symlink("/etc", tmp.path().join("etc_link")).unwrap();
    let out = sb.list(ListRequest::default(), c()).await.unwrap();
    let by_name = |n: &str| out.entries.iter().find(|e| e.name == n).unwrap().clone();
    assert_eq!(by_name("README.md").size, Some(13));
    assert_eq!(by_name("src").kind, EntryKind::Dir);
    assert_eq!(
        by_name("node_modules").ignored,
        Some(IgnoredSummary {
            reason: "node_modules".into(),
            children: 2,
            more: false
        })
    );
    assert_eq!(by_name("target").ignored.unwrap().reason, "gitignored");
    let link = by_name("etc_link");
    assert_eq!(
        (link.kind, link.symlink_inside_root),
        (EntryKind::Symlink, Some(false))
    );
    let names: Vec<_> = out.entries.iter().map(|e| e.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);

    let out = sb
        .list(
            ListRequest {
                path: None,
                limit: Some(3),
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(
        (out.entries.len() as u64, out.omitted),
        (3, names.len() as u64 - 3)
    );
}

#[tokio::test]
async fn non_utf8_names_are_listed_and_found_without_panics() {
    use std::os::unix::ffi::OsStrExt;
    let (tmp, sb) = project();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(tmp.path().join(name), "needle\n").unwrap();
    let out = sb.list(ListRequest::default(), c()).await.unwrap();
    assert_eq!(out.entries[0].name, "caf\u{fffd}.txt");
    let out = sb
        .grep(
            GrepRequest {
                pattern: "needle".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(out.total_matches, 1);
    let out = sb
        .glob(
            GlobRequest {
                pattern: "*.txt".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(out.entries, vec!["caf\u{fffd}.txt"]);
}

#[tokio::test]
async fn capabilities_and_exec_run_in_the_root() {
    let (tmp, sb) = project();
    let caps = sb.capabilities();
    assert_eq!(
        (caps.kind, caps.fs_read, caps.fs_write, caps.exec),
        (SandboxKind::Local, true, true, true)
    );
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    assert_eq!(sb.root(), root);
    let req = aibuddy_exec::ExecRequest::new("pwd", "/");
    let out = sb
        .exec(req, c(), Arc::new(aibuddy_exec::NullSink))
        .await
        .unwrap();
    assert!(out.termination.success());
    assert_eq!(
        String::from_utf8_lossy(&out.head).trim(),
        root.to_string_lossy()
    );
}

#[tokio::test]
async fn permission_denied_is_an_authorization_error_and_changes_nothing() {
    // Even root may not replace an immutable file (chattr +i), so this runs as root too.
    let Some(project) = immutable_project() else {
        return;
    };
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(&project.root)).unwrap();
    let locked = project.locked.clone();
    let write = sb
        .write(
            WriteRequest {
                path: "locked.txt".into(),
                content: "changed\n".into(),
                expect: None,
            },
            c(),
        )
        .await;
    let edit = sb
        .edit(
            EditRequest {
                path: "locked.txt".into(),
                edits: vec![edit("original", "changed", false)],
                expect: None,
            },
            c(),
        )
        .await;
    let read = sb.read(read_req("locked.txt", None, None), c()).await;
    let names: Vec<_> = std::fs::read_dir(&project.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    chattr("-i", &locked);
    for result in [write.map(|_| ()), edit.map(|_| ())] {
        let err = result.unwrap_err();
        assert_eq!(
            (err.code(), err.stage()),
            ("permission_denied", Stage::Authorization),
            "{err}"
        );
        assert!(err.to_string().contains("locked.txt"), "{err}");
    }
    assert!(read.is_ok(), "reading stays allowed");
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), "original\n");
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("locked.txt")],
        "temp file left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changing_during_a_read_is_a_clear_error() {
    let (tmp, sb) = project();
    let body: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    put(tmp.path(), "growing.log", &body);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), tmp.path().join("growing.log"));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(b"appended\n").unwrap();
            }
        })
    };
    let mut changed = 0;
    for _ in 0..50 {
        match sb
            .read(read_req("growing.log", None, Some(100_000)), c())
            .await
        {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(
                    (e.code(), e.stage()),
                    ("changed_during_operation", Stage::Execution),
                    "{e}"
                );
                assert!(e.to_string().contains("growing.log"));
                changed += 1;
            }
        }
        if changed >= 3 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(changed > 0, "no read noticed the concurrent appends");
}
