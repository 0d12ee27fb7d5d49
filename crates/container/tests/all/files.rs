//! Every file tool on the container sandbox: the project's mount, the local adapter's bounds,
//! errors and scoping, and the container seeing the same bytes.

use std::sync::Arc;

use aibuddy_sandbox::aibuddy_exec::{ExecRequest, NullSink};
use aibuddy_sandbox::api::*;
use aibuddy_sandbox::{Sandbox, SandboxKind, Stage};
use tokio_util::sync::CancellationToken;

use crate::engine_or_skip;
use crate::support::project;

fn c() -> CancellationToken {
    CancellationToken::new()
}

async fn sh(sb: &dyn Sandbox, command: &str) -> String {
    let out = sb
        .exec(ExecRequest::new(command, "/"), c(), Arc::new(NullSink))
        .await
        .expect("exec");
    assert!(
        out.termination.success(),
        "{command}: {:?} {}",
        out.termination,
        String::from_utf8_lossy(&out.head)
    );
    String::from_utf8_lossy(&out.head).into_owned()
}

#[tokio::test]
async fn every_file_tool_works_on_the_mount_and_the_container_sees_it() {
    let engine = engine_or_skip!();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    assert_eq!(sb.kind(), SandboxKind::Container);
    assert_eq!(sb.capabilities().kind, SandboxKind::Container);

    let listing = sb.list(ListRequest::default(), c()).await.unwrap();
    let names: Vec<_> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["README.md", "src"]);

    let read = sb
        .read(
            ReadRequest {
                path: "README.md".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert!(matches!(&read.content, ReadContent::Text { lines, .. } if lines.len() == 2));

    let w = WriteRequest {
        path: "out/new.txt".into(),
        content: "from the host\n".into(),
        expect: None,
    };
    let plan = sb.preview_write(w.clone(), c()).await.unwrap();
    assert_eq!(plan.creates_dirs, ["out"]);
    let written = sb.write(w, c()).await.unwrap();
    assert!(written.created);
    // The container sees the write at its workdir...
    assert_eq!(
        sh(&sb, "cat /workspace/out/new.txt").await,
        "from the host\n"
    );
    // ...and its own writes are the project's files.
    sh(&sb, "echo 'TODO two' > made_inside.txt").await;
    let e = EditRequest {
        path: "made_inside.txt".into(),
        edits: vec![EditSpec {
            old_string: "two".into(),
            new_string: "2".into(),
            replace_all: false,
        }],
        expect: None,
    };
    assert!(
        sb.preview_edit(e.clone(), c())
            .await
            .unwrap()
            .diff
            .contains("+TODO 2")
    );
    assert_eq!(sb.edit(e, c()).await.unwrap().replacements, 1);
    assert_eq!(sh(&sb, "cat made_inside.txt").await, "TODO 2\n");

    let g = sb
        .glob(
            GlobRequest {
                pattern: "**/*.txt".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(g.entries, ["made_inside.txt", "out/new.txt"]);
    let grep = sb
        .grep(
            GrepRequest {
                pattern: "TODO".into(),
                mode: GrepMode::FilesWithMatches,
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap();
    assert_eq!(grep.files, ["made_inside.txt", "src/lib.rs"]);

    // Scoping: nothing outside the project's mount, with the local adapter's stages.
    for path in ["../etc/passwd", "/etc/passwd", "/workspace/../etc/passwd"] {
        let err = sb
            .read(
                ReadRequest {
                    path: path.into(),
                    ..Default::default()
                },
                c(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.stage()),
            ("path_escape", Stage::Authorization),
            "{path}"
        );
    }
    // A link the container makes to its own /etc is refused on the host side too.
    sh(&sb, "ln -s /etc/passwd leak 2>/dev/null || true").await;
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("leak2")).unwrap();
    let err = sb
        .read(
            ReadRequest {
                path: "leak2".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.stage(), Stage::Authorization, "{err}");
    let err = sb
        .read(
            ReadRequest {
                path: "missing".into(),
                ..Default::default()
            },
            c(),
        )
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.stage()), ("not_found", Stage::Parameters));
    assert!(sb.location().contains("container"), "{}", sb.location());
    sb.close().await.unwrap();
}

/// The approval mode `read-only` gets a container whose project mount is read-only; protected
/// paths are read-only in the read-write container too, present or absent.
#[tokio::test]
async fn read_only_commands_and_protected_paths_cannot_change_the_project() {
    let engine = engine_or_skip!();
    let dir = project();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let sb = engine.sandbox(dir.path());
    let mut req = ExecRequest::new(
        "{ echo x > README.md; } 2>/dev/null; echo $?; echo y > /tmp/ok && echo tmp-ok",
        "/",
    );
    req.read_only = true;
    let out = sb.exec(req, c(), Arc::new(NullSink)).await.unwrap();
    let text = String::from_utf8_lossy(&out.head);
    assert_eq!(text, "2\ntmp-ok\n", "the project is read-only, /tmp is not");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        "hello\nworld\n"
    );

    let out = sh(
        &sb,
        "{ echo hook > .git/hooks/pre-commit; } 2>/dev/null; echo $?; \
         { echo x >> .git/config; } 2>/dev/null; echo $?; \
         { echo 'export A=1' > .envrc; } 2>/dev/null; echo $?",
    )
    .await;
    assert_eq!(
        out, "2\n2\n2\n",
        "protected paths are read-only, an absent one cannot be created"
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    sb.close().await.unwrap();
    assert!(
        !dir.path().join(".envrc").exists(),
        "the placeholder is gone with the container"
    );
}

/// Absent protected paths (files and folders, in the project and in a nested repository) cannot
/// be created in the container, git directories cannot be renamed away and replaced, and the
/// placeholders that held them leave nothing behind in the project.
#[tokio::test]
async fn absent_protected_paths_cannot_be_created_and_nothing_is_left_behind() {
    let engine = engine_or_skip!();
    let dir = project();
    for repo in [dir.path().to_path_buf(), dir.path().join("sub")] {
        std::fs::create_dir_all(repo.join(".git/objects")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    let sb = engine.sandbox(dir.path());
    let try_ =
        |what: &str| format!("{{ {what}; }} 2>/dev/null && echo '{what}: done' || echo refused");
    let cmd = [
        "mkdir -p .vscode/x && echo '{}' > .vscode/tasks.json",
        "echo 'export A=1' > .envrc",
        "mkdir .aibuddy",
        "echo '[core] hooksPath = /tmp' > .git/config",
        "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
        "echo '[core] fsmonitor = evil' > sub/.git/config",
        "echo evil > sub/.git/hooks/post-checkout",
        "mv .git .git-away",
        "mv sub/.git sub/.git-away",
        "echo kept > notes.txt",
    ]
    .map(try_)
    .join("; ");
    let out = sh(&sb, &cmd).await;
    assert_eq!(
        out,
        "refused\n".repeat(9) + "echo kept > notes.txt: done\n",
        "{out}"
    );
    sb.close().await.unwrap();
    drop(sb);
    for p in [
        ".vscode",
        ".envrc",
        ".aibuddy",
        ".git/config",
        ".git/hooks",
        "sub/.git/config",
        "sub/.git/hooks",
        ".git-away",
    ] {
        assert!(
            std::fs::symlink_metadata(dir.path().join(p)).is_err(),
            "{p} was left in the project"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "kept\n"
    );
}

/// Mounts are structured values: a `:` in the project's path is part of the path, never a
/// separator of a `src:dst:mode` string.
#[tokio::test]
async fn a_project_path_with_colons_is_mounted_as_it_is() {
    let engine = engine_or_skip!();
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("p:/etc:ro");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("here.txt"), "inside\n").unwrap();
    let sb = engine.sandbox(&root);
    assert_eq!(
        sh(&sb, "cat here.txt; cat /etc/passwd").await,
        "inside\nroot:x:0:0:root:/root:/bin/sh\n",
        "the project at the workdir, the image's own /etc"
    );
    sb.close().await.unwrap();
}
