//! Behaviour of the walks on real files: gitignore-aware, ordered and bounded glob, grep and ls,
//! and names that are not UTF-8.

use std::sync::Arc;

use aibuddy_sandbox::*;
use ops_support::{c, gitignored_project, project, put};
use pretty_assertions::assert_eq;

mod ops_support;

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
