//! Behaviour of reads, writes and edits on real files: bounds at the source, atomic writes that
//! keep permissions, edits all-or-nothing with diffs, typed errors.

use std::os::unix::fs::PermissionsExt;

use aibuddy_sandbox::*;
use ops_support::{c, edit, project, put, read_req};
use pretty_assertions::assert_eq;

use crate::ops_support;

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
