//! Regression tests of issue 22 ("protected paths inside every writable root"): from one approved
//! command, a hostile command plants a git hook, `core.fsmonitor`, an alias and a credential helper
//! in `.git/config`, an editor task, an `.envrc` and agent config; the person's next `git status`
//! or `git commit` would run them with full authority. On the namespace path every write is
//! refused and nothing is left behind; on the Landlock-only path (which cannot refuse) everything
//! is restored or removed after the command. Real git throughout.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use aibuddy_exec::{ExecOutcome, ExecRequest, NamespacePolicy, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

/// A directory outside `/tmp` (the namespace path replaces `/tmp` by a private tmpfs), wherever the
/// clone (and so `CARGO_TARGET_TMPDIR`) is.
fn visible_tempdir() -> tempfile::TempDir {
    support::visible_tempdir()
}

/// The person's git: no global or system config, a fixed identity.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=p", "-c", "user.email=p@p"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn repo() -> (tempfile::TempDir, PathBuf) {
    let t = visible_tempdir();
    let p = t.path().canonicalize().unwrap().join("proj");
    std::fs::create_dir(&p).unwrap();
    assert!(git(&p, &["init", "-q", "-b", "main"]).status.success());
    std::fs::write(p.join("a"), "a\n").unwrap();
    assert!(git(&p, &["add", "a"]).status.success());
    assert!(git(&p, &["commit", "-qm", "a"]).status.success());
    (t, p)
}

async fn run_in(dir: &Path, path: NamespacePolicy, cmd: &str) -> (ExecOutcome, String) {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = path;
    r.env.set = vec![
        ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
    ];
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let mut text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    text.push_str(&String::from_utf8_lossy(&rec.stream(Stream::Stderr)));
    (out, text)
}

/// Every write of the attack, each reporting `WROTE <what>` when it succeeded.
fn attack(marker: &Path) -> String {
    let m = marker.display();
    [
        "printf '#!/bin/sh\\ntouch {m}.hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo WROTE hook".to_string(),
        format!("git config core.fsmonitor 'touch {m}.fsmonitor; false' && echo WROTE fsmonitor"),
        format!("git config alias.st '!touch {m}.alias' && echo WROTE alias"),
        format!("git config credential.helper '!touch {m}.cred' && echo WROTE credential"),
        "mkdir -p .git/info && echo '*' >> .git/info/exclude && echo WROTE info".to_string(),
        "mkdir -p .vscode && echo '{\"tasks\":[]}' > .vscode/tasks.json && echo WROTE vscode".to_string(),
        "echo 'touch x' > .envrc && echo WROTE envrc".to_string(),
        "mkdir -p .claude && echo x > .claude/x && echo WROTE claude".to_string(),
        "echo '{}' > .mcp.json && echo WROTE mcp".to_string(),
        // Renaming the directory away and planting a new one.
        "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo evil > .git/hooks/pre-commit && echo WROTE hooks-swap".to_string(),
        "echo '../evil' > .git/commondir && echo WROTE commondir".to_string(),
    ]
    .iter()
    .map(|l| format!("( {l} ) 2>/dev/null"))
    .collect::<Vec<_>>()
    .join("\n")
}

/// The person's own git after the command: status, an alias, a commit; none may run the plant.
fn person_uses_git(p: &Path, marker: &Path) {
    let _ = git(p, &["status"]);
    let _ = git(p, &["st"]);
    std::fs::write(p.join("b"), "b\n").unwrap();
    assert!(git(p, &["add", "b"]).status.success());
    let c = git(p, &["commit", "-qm", "b"]);
    assert!(c.status.success(), "{c:?}");
    let planted: Vec<String> = std::fs::read_dir(marker.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("marker"))
        .collect();
    assert!(planted.is_empty(), "the person's git ran {planted:?}");
}

fn left_behind(p: &Path) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (rel, what) in [
        (".git/hooks/pre-commit", "hook"),
        (".vscode", "vscode"),
        (".envrc", "envrc"),
        (".claude", "claude"),
        (".mcp.json", "mcp"),
        (".git/commondir", "commondir"),
    ] {
        if std::fs::symlink_metadata(p.join(rel)).is_ok() {
            out.push(what);
        }
    }
    out
}

#[tokio::test]
async fn the_attack_is_refused_on_the_namespace_path_and_undone_on_the_landlock_path() {
    for path in PATHS {
        let (t, p) = repo();
        let marker = t.path().canonicalize().unwrap().join("marker");
        let config_before = std::fs::read(p.join(".git/config")).unwrap();
        let exclude_before = std::fs::read(p.join(".git/info/exclude")).unwrap();
        let (out, text) = run_in(&p, path, &attack(&marker)).await;
        let wrote: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("WROTE "))
            .collect();
        if path == NamespacePolicy::Auto {
            assert!(
                matches!(
                    out.confinement,
                    aibuddy_exec::Confinement::Namespaces { .. }
                ),
                "{:?}",
                out.confinement
            );
            // Everything is refused (`.git/commondir` too: its placeholder names `.git` itself).
            assert_eq!(wrote, Vec::<&str>::new(), "refused on the namespace path");
            assert_eq!(out.protected.removed, Vec::<PathBuf>::new());
            assert_eq!(out.protected.restored, Vec::<PathBuf>::new());
        } else {
            // Landlock cannot refuse: the writes happen, and are undone when the command ends.
            assert!(
                wrote.contains(&"fsmonitor") && wrote.contains(&"hook"),
                "{text}"
            );
            assert!(
                out.protected.restored.contains(&p.join(".git/config")),
                "{:?}",
                out.protected
            );
            assert!(out.protected.removed.contains(&p.join(".envrc")));
        }
        assert_eq!(left_behind(&p), Vec::<&str>::new(), "{path:?}: {text}");
        assert_eq!(
            std::fs::read(p.join(".git/config")).unwrap(),
            config_before,
            "{path:?}"
        );
        assert_eq!(
            std::fs::read(p.join(".git/info/exclude")).unwrap(),
            exclude_before
        );
        person_uses_git(&p, &marker);
    }
}

#[tokio::test]
async fn git_add_commit_and_checkout_work_inside_a_command() {
    for path in PATHS {
        let (_t, p) = repo();
        let cmd = "set -e; g() { git -c user.name=c -c user.email=c@c \"$@\"; }
            echo c > c; g add c; g commit -qm c; g checkout -qb side; echo d > d; g add d;
            g commit -qm d; g checkout -q main; g merge -q side; g log --format=%s | tr '\\n' ' '";
        let (out, text) = run_in(&p, path, cmd).await;
        assert!(out.termination.success(), "{path:?}: {text}");
        assert_eq!(text.trim(), "d c a", "{path:?}");
        assert!(out.protected.is_empty(), "{path:?}: {:?}", out.protected);
        let log = git(&p, &["log", "--format=%s", "side"]);
        assert_eq!(String::from_utf8_lossy(&log.stdout), "d\nc\na\n");
    }
}

#[tokio::test]
async fn the_git_directory_cannot_be_swapped_and_a_missing_one_cannot_be_created() {
    // The namespace path: `.git` is a mount point (cannot be renamed away and replaced).
    let (t, p) = repo();
    let marker = t.path().canonicalize().unwrap().join("marker");
    let cmd = format!(
        "mv .git .git2 && mkdir .git && cp -r .git2/. .git/ && git config core.fsmonitor 'touch {}.swap' && echo WROTE",
        marker.display()
    );
    let (_, text) = run_in(&p, NamespacePolicy::Auto, &cmd).await;
    assert!(!text.contains("WROTE"), "{text}");
    assert!(!p.join(".git2").exists());
    person_uses_git(&p, &marker);
    // Not a repository: a command may not make one (its config would be obeyed by the person's
    // git); on both paths nothing is left.
    for path in PATHS {
        let t = visible_tempdir();
        let p = t.path().canonicalize().unwrap();
        let (out, _) = run_in(&p, path, "git init -q . ; git config core.fsmonitor x").await;
        assert!(!p.join(".git").exists(), "{path:?}");
        if path == NamespacePolicy::Off {
            assert_eq!(out.protected.removed, vec![p.join(".git")]);
        }
        assert_eq!(std::fs::read_dir(&p).unwrap().count(), 0, "{path:?}");
    }
}

#[tokio::test]
async fn a_worktree_and_its_common_directory_are_protected_too() {
    let (t, main) = repo();
    let wt = t.path().canonicalize().unwrap().join("wt");
    assert!(
        git(&main, &["worktree", "add", "-q", "../wt"])
            .status
            .success()
    );
    let marker = t.path().canonicalize().unwrap().join("marker");
    let mut r = ExecRequest::new(
        format!(
            "( git config core.fsmonitor 'touch {m}.wt' && echo WROTE config ) 2>/dev/null
             ( echo 'gitdir: /nowhere' > .git && echo WROTE dotgit ) 2>/dev/null
             ( echo x > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\" && echo WROTE hook ) 2>/dev/null
             echo y > y; git -c user.name=c -c user.email=c@c add y && git -c user.name=c -c user.email=c@c commit -qm y && echo COMMITTED",
            m = marker.display()
        ),
        &wt,
    );
    // The main repository is writable too (its objects receive the worktree's commits).
    r.writable_roots = vec![main.clone()];
    r.env.set = vec![("GIT_CONFIG_GLOBAL".into(), "/dev/null".into())];
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    assert!(out.termination.success(), "{text}");
    assert_eq!(text.trim(), "COMMITTED", "{text}");
    person_uses_git(&wt, &marker);
}

#[tokio::test]
async fn an_added_entry_is_protected_and_a_removed_builtin_is_not() {
    for path in PATHS {
        let t = visible_tempdir();
        let p = t.path().canonicalize().unwrap();
        std::fs::write(p.join("Makefile"), "all:\n").unwrap();
        let mut r = ExecRequest::new(
            "( echo evil > Makefile ) 2>/dev/null; ( mkdir .idea && echo x > .idea/x ) && echo IDEA",
            &p,
        );
        r.namespaces = path;
        r.protected_paths = vec!["Makefile".into()];
        r.unprotected_paths = vec![".idea".into()];
        let rec = Recorder::new();
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        let text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
        assert_eq!(text.trim(), "IDEA", "{path:?}");
        assert_eq!(
            std::fs::read_to_string(p.join("Makefile")).unwrap(),
            "all:\n"
        );
        assert!(p.join(".idea/x").exists(), "{path:?}: {:?}", out.protected);
    }
}

#[tokio::test]
async fn a_dropped_run_still_sweeps_on_both_paths() {
    for path in PATHS {
        let t = visible_tempdir();
        let p = t.path().canonicalize().unwrap();
        let mut r = ExecRequest::new(
            "echo x > .envrc; mkdir -p .claude && echo x > .claude/x; echo started; sleep 30",
            &p,
        );
        r.namespaces = path;
        let rec = Recorder::new();
        let fut = run(r, CancellationToken::new(), rec.clone());
        // The caller gives up (a hard deadline): the run future is dropped mid-command.
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(1500), fut).await;
        assert!(dropped.is_err(), "{path:?}: still running when dropped");
        assert!(
            String::from_utf8_lossy(&rec.stream(Stream::Stdout)).contains("started"),
            "{path:?}"
        );
        assert!(!p.join(".envrc").exists(), "{path:?}");
        assert!(!p.join(".claude").exists(), "{path:?}");
        assert_eq!(std::fs::read_dir(&p).unwrap().count(), 0, "{path:?}");
    }
}

#[test]
fn placeholders_left_by_a_killed_app_are_removed_at_the_next_start() {
    use std::io::BufRead;
    let t = visible_tempdir();
    let p = t.path().canonicalize().unwrap();
    let helper = || Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"));
    let mut app = helper()
        .arg(&p)
        .arg("echo up; sleep 1074")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(app.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "up");
    // While the command runs, absent protected paths are empty placeholders on the host.
    assert!(p.join(".envrc").is_file() && p.join(".vscode").is_dir());
    app.kill().unwrap();
    app.wait().unwrap();
    assert!(support::wait_no_process_with_args(
        &["sleep", "1074"],
        std::time::Duration::from_secs(5)
    ));
    assert!(p.join(".envrc").exists(), "a kill -9 leaves them");
    // The next app's first command removes them (still empty), then its own come and go.
    let out = helper().arg(&p).arg("true").output().unwrap();
    assert!(out.status.success());
    let left: Vec<_> = std::fs::read_dir(&p)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The person's setup: hooks and config kept in the work tree through an include (`.git/config`
/// includes `../project.gitconfig`, which sets `core.hooksPath = .githooks`) and a conditional
/// include of a file that does not exist yet.
fn repo_with_includes() -> (tempfile::TempDir, PathBuf) {
    let (t, p) = repo();
    let mut config = std::fs::read_to_string(p.join(".git/config")).unwrap();
    config.push_str(
        "[include]\n\tpath = ../project.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = ../later.gitconfig\n",
    );
    std::fs::write(p.join(".git/config"), config).unwrap();
    std::fs::write(
        p.join("project.gitconfig"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    (t, p)
}

#[tokio::test]
async fn config_and_hooks_reached_through_includes_are_protected_on_both_paths() {
    for path in PATHS {
        let (t, p) = repo_with_includes();
        let marker = t.path().canonicalize().unwrap().join("marker");
        let m = marker.display();
        let cmd = [
            format!("mkdir -p .githooks && printf '#!/bin/sh\\ntouch {m}.hook\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit && echo WROTE hook"),
            format!("printf '[core]\\n\\tfsmonitor = \"touch {m}.inc; false\"\\n' >> project.gitconfig && echo WROTE include"),
            format!("printf '[alias]\\n\\tst = !touch {m}.later\\n' > later.gitconfig && echo WROTE later"),
        ]
        .iter()
        .map(|l| format!("( {l} ) 2>/dev/null"))
        .collect::<Vec<_>>()
        .join("\n");
        let (out, text) = run_in(&p, path, &cmd).await;
        if path == NamespacePolicy::Auto {
            assert!(
                !text.contains("WROTE"),
                "refused on the namespace path: {text}"
            );
        } else {
            assert!(
                out.protected
                    .restored
                    .contains(&p.join("project.gitconfig")),
                "{:?}",
                out.protected
            );
            assert!(out.protected.removed.contains(&p.join("later.gitconfig")));
        }
        assert_eq!(
            std::fs::read_to_string(p.join("project.gitconfig")).unwrap(),
            "[core]\n\thooksPath = .githooks\n",
            "{path:?}"
        );
        assert!(!p.join("later.gitconfig").exists(), "{path:?}");
        assert!(!p.join(".githooks/pre-commit").exists(), "{path:?}");
        person_uses_git(&p, &marker);
    }
}

#[tokio::test]
async fn a_nested_repository_that_is_no_submodule_is_protected_on_both_paths() {
    for path in PATHS {
        let (t, p) = repo();
        let lib = p.join("vendor/lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert!(git(&lib, &["init", "-q", "-b", "main"]).status.success());
        let marker = t.path().canonicalize().unwrap().join("marker");
        let m = marker.display();
        let cmd = [
            format!("printf '#!/bin/sh\\ntouch {m}.hook\\n' > vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit && echo WROTE hook"),
            format!("git -C vendor/lib config core.fsmonitor 'touch {m}.fsmonitor; false' && echo WROTE fsmonitor"),
            "echo 'x' >> vendor/lib/.git/info/exclude && echo WROTE info".to_string(),
        ]
        .iter()
        .map(|l| format!("( {l} ) 2>/dev/null"))
        .collect::<Vec<_>>()
        .join("\n");
        let config_before = std::fs::read(lib.join(".git/config")).unwrap();
        let (out, text) = run_in(&p, path, &cmd).await;
        if path == NamespacePolicy::Auto {
            assert!(
                !text.contains("WROTE"),
                "refused on the namespace path: {text}"
            );
        } else {
            assert!(
                out.protected.restored.contains(&lib.join(".git/config")),
                "{:?}",
                out.protected
            );
        }
        assert_eq!(
            std::fs::read(lib.join(".git/config")).unwrap(),
            config_before
        );
        assert!(!lib.join(".git/hooks/pre-commit").exists(), "{path:?}");
        person_uses_git(&lib, &marker);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commondir_cannot_be_planted_while_the_command_runs() {
    // While the command still runs, the person's prompt runs `git status`: a `commondir` naming a
    // copy of the git directory with `core.fsmonitor` set would run it with full authority.
    let (t, p) = repo();
    let marker = t.path().canonicalize().unwrap().join("marker");
    let cmd = format!(
        "cp -r .git evil && git --git-dir=evil config core.fsmonitor 'touch {}.commondir; false'
         ( echo ../evil > .git/commondir && echo WROTE commondir ) 2>/dev/null
         echo planted; sleep 30",
        marker.display()
    );
    let mut r = ExecRequest::new(cmd, &p);
    r.namespaces = NamespacePolicy::Auto;
    r.env.set = vec![("GIT_CONFIG_GLOBAL".into(), "/dev/null".into())];
    let rec = Recorder::new();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(r, cancel.clone(), rec.clone()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let stdout = || String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    while !stdout().contains("planted") {
        assert!(std::time::Instant::now() < deadline, "{}", stdout());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!stdout().contains("WROTE"), "{}", stdout());
    // The person's git while the command runs.
    let st = git(&p, &["status", "--porcelain"]);
    assert!(st.status.success(), "{st:?}");
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert!(
        matches!(
            out.confinement,
            aibuddy_exec::Confinement::Namespaces { .. }
        ),
        "{:?}",
        out.confinement
    );
    assert_eq!(left_behind(&p), Vec::<&str>::new());
    std::fs::remove_dir_all(p.join("evil")).unwrap();
    person_uses_git(&p, &marker);
}
