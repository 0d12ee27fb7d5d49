//! Behaviour of the walks on real files: gitignore-aware, ordered and bounded glob, grep and ls,
//! and names that are not UTF-8.

use std::sync::Arc;

use aibuddy_sandbox::*;
use ops_support::{c, gitignored_project, glob_req, grep_req, ls_req, project, put, put_all};
use pretty_assertions::assert_eq;

use crate::ops_support;

#[tokio::test]
async fn glob_is_gitignore_aware_ordered_and_bounded() {
    let (_tmp, sb) = gitignored_project();
    let out = sb.glob(glob_req("*.rs", None, None), c()).await.unwrap();
    assert_eq!(
        out,
        GlobOutcome {
            path: ".".into(),
            entries: vec![
                "src/a.rs".into(),
                "src/b.rs".into(),
                "src/nested/c.rs".into()
            ],
            omitted: 0,
            skipped: SkippedDirs::default(),
        }
    );
    let out = sb
        .glob(glob_req("src/*.rs", None, None), c())
        .await
        .unwrap();
    assert_eq!(out.entries, vec!["src/a.rs", "src/b.rs"]);
    let out = sb
        .glob(glob_req("**/*.rs", Some("src"), Some(2)), c())
        .await
        .unwrap();
    assert_eq!(
        (out.path.as_str(), out.entries.clone(), out.omitted),
        ("src", vec!["src/a.rs".into(), "src/b.rs".into()], 1)
    );
    let err = sb.glob(glob_req("a[", None, None), c()).await.unwrap_err();
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
    let out = grep(grep_req("TODO")).await;
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
        case_insensitive: true,
        ..grep_req("todo")
    })
    .await;
    assert_eq!(out.total_matches, 4, "{out:?}");

    let out = grep(GrepRequest {
        case_insensitive: true,
        limit: Some(2),
        ..grep_req("todo")
    })
    .await;
    assert_eq!((out.matches.len(), out.omitted), (2, 2));
    assert_eq!(
        (out.matches[0].path.as_str(), out.matches[1].path.as_str()),
        ("README.md", "src/a.rs")
    );

    let out = grep(GrepRequest {
        case_insensitive: true,
        mode: GrepMode::FilesWithMatches,
        ..grep_req("todo")
    })
    .await;
    assert_eq!(out.files, vec!["README.md", "src/a.rs", "src/b.rs"]);
    let out = grep(GrepRequest {
        case_insensitive: true,
        mode: GrepMode::Count,
        glob: Some("*.rs".into()),
        ..grep_req("todo")
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
        context: 1,
        ..grep_req("TODO three")
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
        path: Some("target".into()),
        ..grep_req("TODO")
    })
    .await;
    assert_eq!(out.total_matches, 0, "{out:?}");
    // An explicit file is searched.
    let out = grep(GrepRequest {
        path: Some("src/a.rs".into()),
        ..grep_req("TODO")
    })
    .await;
    assert_eq!(out.total_matches, 1);
    let err = sb.grep(grep_req("("), c()).await.unwrap_err();
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
    let out = sb.grep(grep_req("needle"), c()).await.unwrap();
    assert_eq!(out.total_matches, 1);
    let out = sb.glob(glob_req("*.txt", None, None), c()).await.unwrap();
    assert_eq!(out.entries, vec!["caf\u{fffd}.txt"]);
}

/// The files ripgrep lists in `root` (`rg --files`, no ignore file above the root or global one),
/// or `None` when `rg` is not installed.
fn rg_files(root: &std::path::Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("rg")
        .args(["--files", "--no-ignore-parent", "--no-ignore-global"])
        .current_dir(root)
        .output()
        .ok()?;
    assert!(out.status.success(), "rg failed: {out:?}");
    let mut files: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect();
    files.sort();
    Some(files)
}

/// glob `*` and grep (files with a match of `.`, every file has one) over the whole project.
async fn walked(sb: &Arc<dyn Sandbox>) -> (Vec<String>, Vec<String>) {
    let glob = sb.glob(glob_req("*", None, None), c()).await.unwrap();
    let grep = sb
        .grep(
            GrepRequest {
                mode: GrepMode::FilesWithMatches,
                ..grep_req(".")
            },
            c(),
        )
        .await
        .unwrap();
    (glob.entries, grep.files)
}

/// Builds `files` (path, content) under a fresh project and checks that glob and grep list
/// exactly `expected`, and that ripgrep lists the same (when installed).
async fn walks_match_ripgrep(files: &[(&str, &str)], expected: &[&str]) -> tempfile::TempDir {
    let (tmp, sb) = project();
    put_all(tmp.path(), files);
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    let (glob, grep) = walked(&sb).await;
    assert_eq!(glob, expected, "glob");
    assert_eq!(grep, expected, "grep");
    match rg_files(tmp.path()) {
        Some(rg) => assert_eq!(rg, expected, "rg --files"),
        None => eprintln!("rg not installed: not compared with ripgrep"),
    }
    tmp
}

#[tokio::test]
async fn a_nested_repository_stops_the_outer_git_rules_as_in_ripgrep() {
    let tmp = walks_match_ripgrep(
        &[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/info/exclude", "excluded.rs\n"),
            (".gitignore", "*.log\nbuild/\n"),
            (".ignore", "*.gen\n"),
            ("a.log", "x\n"),
            ("excluded.rs", "x\n"),
            ("src/main.rs", "x\n"),
            ("build/out.rs", "x\n"),
            ("gen.gen", "x\n"),
            // A nested repository (a `.git` directory): its own rules, not the outer ones.
            ("vendor/lib/.git/HEAD", "ref: refs/heads/main\n"),
            ("vendor/lib/.git/info/exclude", "secret.txt\n"),
            ("vendor/lib/.gitignore", "*.tmp\n"),
            ("vendor/lib/x.log", "x\n"),
            ("vendor/lib/excluded.rs", "x\n"),
            ("vendor/lib/build/y.rs", "x\n"),
            ("vendor/lib/z.tmp", "x\n"),
            ("vendor/lib/secret.txt", "x\n"),
            ("vendor/lib/deep/w.log", "x\n"),
            ("vendor/lib/deep/v.tmp", "x\n"),
            // `.ignore` files apply across the boundary.
            ("vendor/lib/code.gen", "x\n"),
            // Beside it, not a repository: the outer rules apply.
            ("vendor/plain/x.log", "x\n"),
            ("vendor/plain/keep.rs", "x\n"),
        ],
        &[
            "src/main.rs",
            "vendor/lib/build/y.rs",
            "vendor/lib/deep/w.log",
            "vendor/lib/excluded.rs",
            "vendor/lib/x.log",
            "vendor/plain/keep.rs",
        ],
    )
    .await;
    // ls inside the nested repository does not call its `build` gitignored; outside it does.
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(tmp.path())).unwrap();
    let ignored = |path: &'static str| {
        let sb = Arc::clone(&sb);
        async move {
            let out = sb.list(ls_req(Some(path)), c()).await.unwrap();
            let build = out.entries.iter().find(|e| e.name == "build").unwrap();
            build.ignored.as_ref().map(|i| i.reason.clone())
        }
    };
    assert_eq!(ignored(".").await, Some("gitignored".into()));
    assert_eq!(ignored("vendor/lib").await, None);
    // A search started inside the nested repository uses its rules only.
    let out = sb
        .glob(glob_req("*", Some("vendor/lib/deep"), None), c())
        .await
        .unwrap();
    assert_eq!(out.entries, vec!["vendor/lib/deep/w.log"]);
}

#[tokio::test]
async fn a_git_file_starts_a_repository_and_an_ignored_repository_stays_ignored() {
    walks_match_ripgrep(
        &[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".gitignore", "*.log\nignored_repo/\n"),
            // A submodule's `.git` file (its gitdir is never followed).
            ("sub/mod/.git", "gitdir: ../../.git/modules/mod\n"),
            ("sub/mod/x.log", "x\n"),
            ("sub/other/x.log", "x\n"),
            ("sub/other/keep.rs", "x\n"),
            // The outer rules still decide about the nested repository's own folder.
            ("ignored_repo/.git/HEAD", "ref: refs/heads/main\n"),
            ("ignored_repo/a.rs", "x\n"),
        ],
        &["sub/mod/x.log", "sub/other/keep.rs"],
    )
    .await;
}

#[tokio::test]
async fn repositories_nested_twice_use_the_nearest_repository_rules() {
    walks_match_ripgrep(
        &[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".gitignore", "*.md\n"),
            ("a/.git/HEAD", "ref: refs/heads/main\n"),
            ("a/.gitignore", "*.rs\n"),
            ("a/c.rs", "x\n"),
            ("a/n.md", "x\n"),
            ("a/b/.git/HEAD", "ref: refs/heads/main\n"),
            ("a/b/c.rs", "x\n"),
            ("a/b/n.md", "x\n"),
            ("a/b/d/e.rs", "x\n"),
            ("top.md", "x\n"),
        ],
        &["a/b/c.rs", "a/b/d/e.rs", "a/b/n.md", "a/n.md"],
    )
    .await;
}
