//! A hostile project folder against the walks: ignore files (`.gitignore`, `.ignore`,
//! `.git/info/exclude`) that are fifos, symlinks leading out or a `.git` file naming a directory
//! elsewhere must neither hang ls, glob or grep nor be read outside the root; a huge line must not
//! be buffered whole by grep.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::*;
use ops_support::{c, glob_req, grep_req, ls_req, project_with_line_bound, put, put_all, read_req};
use pretty_assertions::assert_eq;

use crate::ops_support;

/// A project `root` beside an `outside` folder (both under one temp dir).
fn layout() -> (tempfile::TempDir, std::path::PathBuf, Arc<dyn Sandbox>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    put(&root, "src/keep.rs", "// TODO keep\n");
    put(&root, "sub/deep/also.rs", "// TODO also\n");
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(&root)).unwrap();
    (tmp, root, sb)
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// Runs `walks_finish` on its own runtime and does not wait for a worker that is still blocked
/// (a hung open would otherwise keep the test from ever reporting).
fn walks_finish_bounded(sb: &Arc<dyn Sandbox>) -> (Vec<String>, Vec<String>, u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let out = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), walks_finish(sb)).await });
    rt.shutdown_background();
    out.expect("a walk hung on an ignore file")
}

/// ls, glob and grep from the root and from `sub`: they must see the project's files.
async fn walks_finish(sb: &Arc<dyn Sandbox>) -> (Vec<String>, Vec<String>, u64) {
    let listing = sb.list(ListRequest::default(), c()).await.unwrap();
    let sub = sb.list(ls_req(Some("sub/deep")), c()).await.unwrap();
    assert!(sub.entries.iter().any(|e| e.name == "also.rs"), "{sub:?}");
    let glob = sb.glob(glob_req("*.rs", None, None), c()).await.unwrap();
    let grep = sb
        .grep(
            GrepRequest {
                path: Some("sub".into()),
                ..grep_req("TODO")
            },
            c(),
        )
        .await
        .unwrap();
    (
        listing.entries.into_iter().map(|e| e.name).collect(),
        glob.entries,
        grep.total_matches,
    )
}

#[test]
fn a_fifo_as_ignore_file_never_hangs_a_walk() {
    for name in [
        ".gitignore",
        ".ignore",
        "sub/.gitignore",
        ".git/info/exclude",
    ] {
        let (_tmp, root, sb) = layout();
        std::fs::create_dir_all(root.join(name).parent().unwrap()).unwrap();
        mkfifo(&root.join(name));
        let (_, glob, grep) = walks_finish_bounded(&sb);
        assert_eq!(
            (glob, grep),
            (vec!["src/keep.rs".into(), "sub/deep/also.rs".into()], 1),
            "{name}"
        );
    }
}

#[test]
fn ignore_rules_outside_the_root_are_never_read() {
    // Each hostile layout points an ignore file at an outside file that would hide every `.rs`
    // file: if it were read, glob would find nothing.
    let cases: &[&str] = &["gitignore-link", "ignore-link", "git-dir-link", "git-file"];
    for case in cases {
        let (tmp, root, sb) = layout();
        let outside = tmp.path().join("outside");
        put(&outside, "rules", "*.rs\n");
        put(&outside, "gitdir/info/exclude", "*.rs\n");
        put(
            &outside,
            "gitdir/commondir",
            outside.join("gitdir").to_str().unwrap(),
        );
        match *case {
            "gitignore-link" => symlink(outside.join("rules"), root.join(".gitignore")).unwrap(),
            "ignore-link" => symlink("../outside/rules", root.join("sub/.ignore")).unwrap(),
            "git-dir-link" => symlink(outside.join("gitdir"), root.join(".git")).unwrap(),
            "git-file" => put(
                &root,
                ".git",
                format!("gitdir: {}\n", outside.join("gitdir").display()),
            ),
            _ => unreachable!(),
        }
        let (_, glob, grep) = walks_finish_bounded(&sb);
        assert_eq!(
            (glob, grep),
            (vec!["src/keep.rs".into(), "sub/deep/also.rs".into()], 1),
            "{case}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_rules_inside_the_root_still_apply_at_every_level() {
    let (_tmp, root, sb) = layout();
    put_all(
        &root,
        &[
            (".gitignore", "\u{feff}gen/\n*.log\n"),
            ("sub/.gitignore", "skip.rs\n"),
            ("sub/.ignore", "!skip.rs\nhidden_by_ignore.rs\n"),
            (".git/info/exclude", "excluded.rs\n"),
            ("gen/x.rs", "// TODO gen\n"),
            ("a.log", "TODO\n"),
            ("sub/skip.rs", "// TODO skip\n"),
            ("sub/hidden_by_ignore.rs", "// TODO h\n"),
            ("sub/deep/excluded.rs", "// TODO x\n"),
        ],
    );
    let (names, glob, grep) = walks_finish(&sb).await;
    assert_eq!(
        glob,
        vec!["src/keep.rs", "sub/deep/also.rs", "sub/skip.rs"],
        "`.ignore` wins over `.gitignore`, the deeper level over the root"
    );
    assert_eq!(grep, 2);
    assert!(names.contains(&"gen".to_string()), "{names:?}");
    let listing = sb.list(ListRequest::default(), c()).await.unwrap();
    let gen_dir = listing.entries.iter().find(|e| e.name == "gen").unwrap();
    assert_eq!(
        gen_dir.ignored.as_ref().map(|i| i.reason.as_str()),
        Some("gitignored")
    );
    // A search started inside an ignored folder finds nothing, as before.
    let out = sb
        .glob(glob_req("*.rs", Some("gen"), None), c())
        .await
        .unwrap();
    assert_eq!(out.entries, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_longer_than_the_bound_is_not_buffered_by_grep() {
    // One 4 MiB line (no newline, no NUL: not binary) with the needle at its very end.
    let mut long = vec![b'a'; 4 << 20];
    long.extend_from_slice(b"needle");
    let (_tmp, sb) =
        project_with_line_bound(&[("min.js", &long), ("small.txt", b"needle\n")], 1 << 20);
    for mode in [GrepMode::Content, GrepMode::Count] {
        let out = sb
            .grep(
                GrepRequest {
                    mode,
                    ..grep_req("needle")
                },
                c(),
            )
            .await
            .unwrap();
        assert_eq!(
            (out.total_files, out.total_matches, out.unreadable_total),
            (1, 1, 1),
            "{mode:?}: {out:?}"
        );
        assert_eq!(
            out.unreadable,
            vec![
                "Execution: a line in min.js is longer than 1 MiB (grep_line_bytes); this file \
                 was skipped, the others were searched (read_file shows the line cut)"
            ],
            "{mode:?}"
        );
    }
    // read_file still shows the line, cut.
    let read = sb.read(read_req("min.js", None, None), c()).await.unwrap();
    assert!(
        matches!(&read.content, ReadContent::Text { cut_lines: 1, .. }),
        "{read:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_past_a_small_bound_skips_that_file_in_our_words_and_searches_the_rest() {
    let mut long = vec![b'x'; 300 << 10];
    long.extend_from_slice(b"needle\n");
    let files: &[(&str, &[u8])] = &[
        ("src/x.min.js", &long),
        ("src/a.js", b"needle\n"),
        ("src/z.js", b"// needle\n"),
    ];
    let (_tmp, sb) = project_with_line_bound(files, 4 << 10);
    let said = |rest: &str| {
        format!(
            "Execution: a line in src/x.min.js is longer than 4 KiB (grep_line_bytes); {rest} \
             (read_file shows the line cut)"
        )
    };
    for (path, rest) in [
        ("src", "this file was skipped, the others were searched"),
        ("src/x.min.js", "this file was not searched"),
    ] {
        let out = sb
            .grep(
                GrepRequest {
                    path: Some(path.into()),
                    mode: GrepMode::FilesWithMatches,
                    ..grep_req("needle")
                },
                c(),
            )
            .await
            .unwrap();
        let found: Vec<&str> = if path == "src" {
            vec!["src/a.js", "src/z.js"]
        } else {
            vec![]
        };
        assert_eq!(
            (out.files, out.unreadable, out.unreadable_total),
            (
                found.into_iter().map(String::from).collect(),
                vec![said(rest)],
                1
            ),
            "{path}"
        );
    }
}

/// Peak resident memory of this process, in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_of_wildcard_ignore_patterns_in_every_folder_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Wildcard patterns (each one a regex): 2,000 in the root (within the budget, applied) and
    // ~1 MiB (25,000) in each of 8 folders (not applied: their files are shown).
    let pattern = |i: usize| format!("**/*a{i}*b*c*d*e*f*g*h*/**/x{i}?[a-z]*\n");
    let mut wall = String::new();
    let mut i = 0;
    while wall.len() < (1 << 20) - 100 {
        wall.push_str(&pattern(i));
        i += 1;
    }
    let mut in_budget = String::from("*.log\n");
    in_budget.extend((0..2_000).map(pattern));
    put(root, ".gitignore", &in_budget);
    put(root, "hidden.log", "TODO\n");
    for d in 0..8 {
        put(root, &format!("d{d}/.gitignore"), &wall);
        put(root, &format!("d{d}/kept.rs"), "// TODO\n");
    }
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(root)).unwrap();
    let before = peak_kib();
    let out = sb.glob(glob_req("*", None, None), c()).await.unwrap();
    assert_eq!(out.entries.len(), 8, "{out:?}");
    assert!(!out.entries.contains(&"hidden.log".to_string()));
    let grown_mib = peak_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 400, "the walk took {grown_mib} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_over_a_huge_project_file_does_not_load_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // 192 MiB, sparse (no disk), above edit_max_bytes (16 MiB) and below the 1 GiB bound.
    let big = std::fs::File::create(root.join("huge.bin")).unwrap();
    big.set_len(192 << 20).unwrap();
    drop(big);
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(root)).unwrap();
    let before = peak_kib();
    let req = WriteRequest {
        path: "huge.bin".into(),
        content: "small now\n".into(),
        expect: None,
    };
    let plan = sb.preview_write(req.clone(), c()).await.unwrap();
    assert_eq!(
        (plan.existing, plan.diff.is_none()),
        (
            Some(FileStats {
                bytes: 192 << 20,
                lines: 1
            }),
            true
        )
    );
    let fp = plan.fingerprint.unwrap();
    let out = sb
        .write(
            WriteRequest {
                expect: Some(Expected::Content(fp)),
                ..req
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(out.previous.map(|p| p.bytes), Some(192 << 20));
    assert_eq!(
        std::fs::read(root.join("huge.bin")).unwrap(),
        b"small now\n"
    );
    let grown_mib = peak_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 100, "writing took {grown_mib} MiB");
}

/// `limit: 100000` over a file of long lines returns at most `read_max_bytes` of text (plus the
/// line that reaches it) and says where the next slice starts; consecutive reads cover the file
/// exactly once.
#[tokio::test]
async fn one_read_of_many_long_lines_is_bounded_in_bytes() {
    let (_tmp, root, sb) = layout();
    let line = "x".repeat(1999);
    let text: String = (0..5000).map(|i| format!("{i:>5}{line}\n")).collect();
    std::fs::write(root.join("wide.txt"), &text).unwrap();
    let bound = Limits::default().read_max_bytes;
    let mut offset = 1u64;
    let mut seen = 0u64;
    let mut reads = 0;
    loop {
        let out = sb
            .read(read_req("wide.txt", Some(offset), Some(100_000)), c())
            .await
            .unwrap();
        let ReadContent::Text {
            lines, more_after, ..
        } = out.content
        else {
            panic!("text expected");
        };
        let bytes: usize = lines.iter().map(|l| l.text.len()).sum();
        assert!(bytes < bound + 2004, "{bytes} bytes in one read");
        assert_eq!(lines.first().map(|l| l.number), Some(offset));
        seen += lines.len() as u64;
        reads += 1;
        offset += lines.len() as u64;
        if !more_after {
            break;
        }
    }
    assert_eq!(seen, 5000);
    assert!(reads >= 5000 * 2004 / (bound + 2004), "{reads} reads");
}
