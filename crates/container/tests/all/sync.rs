//! `project: "sync"` over a `tcp://` engine: the project copied in, the command's creations,
//! changes and deletions brought back exactly, a hostile command's escapes refused, and a stop
//! mid-command still bringing back what was written.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_container::SyncLimits;
use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::{ExecRequest, NullSink, SyncReport};
use tokio_util::sync::CancellationToken;

use crate::engine_or_skip;
use crate::sink::{Started, start};
use crate::support::project;

/// Every path under `root` with its content (`/` for folders, `-> target` for links), sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else if m.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else {
                out.push(format!(
                    "{rel}: {}",
                    std::fs::read_to_string(&p).unwrap_or_default()
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

async fn run(sb: &impl Sandbox, command: &str) -> aibuddy_sandbox::aibuddy_exec::ExecOutcome {
    sb.exec(
        ExecRequest::new(command, "/"),
        CancellationToken::new(),
        Arc::new(NullSink),
    )
    .await
    .expect("the command runs")
}

fn report(o: &aibuddy_sandbox::aibuddy_exec::ExecOutcome) -> &SyncReport {
    o.sync.as_ref().expect("a sync report on the call")
}

#[tokio::test]
async fn sync_over_tcp_brings_back_exactly_what_the_command_changed() {
    // With the container's `find` listing the tree, and reading the whole archive back.
    for listing in [Some(0), None] {
        exactly_what_changed(listing).await;
    }
}

async fn exactly_what_changed(listing: Option<u64>) {
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    std::fs::write(root.join("old.txt"), "old\n").unwrap();
    let limits = SyncLimits {
        list_from_bytes: listing,
        ..Default::default()
    };
    let sb = engine.sync_sandbox(root, limits);
    assert!(
        sb.location().contains("copied into the container"),
        "{}",
        sb.location()
    );

    let out = run(
        &sb,
        "cat src/lib.rs README.md old.txt; echo new > created.txt; mkdir -p d/e; echo deep > d/e/f.txt; \
         echo more >> README.md; rm old.txt; chmod +x created.txt",
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&out.head),
        "fn main() {}\n// TODO one\nhello\nworld\nold\n",
        "the project was copied in"
    );
    assert_eq!(out.confinement.label(), "container+sync+nonet");
    let r = report(&out);
    assert_eq!(
        (r.copied_in, r.brought_back, r.deleted),
        (4, 5, 1),
        "src/, src/lib.rs, README.md, old.txt in; created.txt, d/, d/e/, d/e/f.txt, README.md back; old.txt gone: {r:?}"
    );
    assert!(
        r.refused.is_empty() && r.skipped.is_empty() && r.incomplete.is_none(),
        "{r:?}"
    );
    assert_eq!(r.listed, listing.is_some(), "{r:?}");
    assert_eq!(
        tree(root),
        [
            "README.md: hello\nworld\nmore\n",
            "created.txt: new\n",
            "d/",
            "d/e/",
            "d/e/f.txt: deep\n",
            "src/",
            "src/lib.rs: fn main() {}\n// TODO one\n",
        ]
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(root.join("created.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the exec bit came back: {mode:o}");

    // A change here (as a file tool makes it) goes in before the next command; a deletion here
    // is removed there; nothing unchanged is copied again.
    std::fs::write(root.join("tool.txt"), "from a file tool\n").unwrap();
    std::fs::remove_file(root.join("d/e/f.txt")).unwrap();
    let out = run(&sb, "cat tool.txt; ls d/e | wc -l").await;
    assert_eq!(String::from_utf8_lossy(&out.head), "from a file tool\n0\n");
    let r = report(&out);
    assert_eq!(
        (r.copied_in, r.removed_in, r.brought_back, r.deleted),
        (1, 1, 0, 0),
        "{r:?}"
    );
    sb.close().await.unwrap();
}

#[tokio::test]
async fn sync_refuses_what_a_hostile_command_tries_to_bring_back() {
    for listing in [Some(0), None] {
        hostile(listing).await;
    }
}

async fn hostile(listing: Option<u64>) {
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(git.success());
    let hooks_before = tree(&root.join(".git/hooks"));
    let config_before = std::fs::read_to_string(root.join(".git/config")).unwrap();
    let limits = SyncLimits {
        max_file_bytes: 1024 * 1024,
        list_from_bytes: listing,
        ..Default::default()
    };
    let sb = engine.sync_sandbox(root, limits);
    let out = run(
        &sb,
        "ln -s /etc x; echo pwned >> x/passwd; ln -s ../../.. up; ln -s .git/hooks hooks; \
         echo 'rm -rf ~' > .git/hooks/pre-commit; echo '[core] hooksPath = /tmp' >> .git/config; \
         mkdir -p .aibuddy sub/.git; echo '{}' > .aibuddy/settings.json; echo x > sub/.git/config; \
         head -c 3000000 /dev/zero > huge.bin; echo ok > fine.txt",
    )
    .await;
    let r = report(&out);
    let refused: Vec<&str> = r.refused.iter().map(|n| n.path.as_str()).collect();
    for p in [
        "x",
        "up",
        "hooks",
        ".git/hooks/pre-commit",
        ".git/config",
        ".aibuddy",
        "sub/.git",
    ] {
        assert!(refused.contains(&p), "{p} not refused: {r:?}");
    }
    let skipped: Vec<&str> = r.skipped.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(skipped, ["huge.bin"], "{r:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("fine.txt")).unwrap(),
        "ok\n"
    );
    for absent in [
        "x", "up", "hooks", ".aibuddy", "sub/.git", "huge.bin", "passwd",
    ] {
        assert!(
            std::fs::symlink_metadata(root.join(absent)).is_err(),
            "{absent} came back"
        );
    }
    assert_eq!(tree(&root.join(".git/hooks")), hooks_before);
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config_before
    );
    assert!(
        !std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .contains("pwned")
    );

    // The next command sees this side again where it was refused (the container's hook is
    // gone), and the oversized file stays in the container.
    let out = run(&sb, "ls .git/hooks/pre-commit 2>&1 | wc -l; ls -l huge.bin | wc -l; ls -d x 2>/dev/null | wc -l").await;
    assert_eq!(
        String::from_utf8_lossy(&out.head),
        "1\n1\n0\n",
        "{:?}",
        out.sync
    );
    sb.close().await.unwrap();
}

#[tokio::test]
async fn a_stop_mid_command_still_brings_back_what_was_written() {
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    let sb = engine.sync_sandbox(root, SyncLimits::default());
    let Started {
        task: run,
        rec,
        cancel,
    } = start(
        &sb,
        ExecRequest::new(
            "echo before > written.txt; echo started; sleep 60; echo after > late.txt",
            "/",
        ),
    );
    rec.wait_for("started", Duration::from_secs(30)).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the stop returns")
        .unwrap()
        .expect("a stopped outcome");
    assert!(out.cancelled);
    assert_eq!(
        std::fs::read_to_string(root.join("written.txt")).unwrap(),
        "before\n"
    );
    assert!(!root.join("late.txt").exists());
    assert_eq!(report(&out).brought_back, 1, "{:?}", out.sync);
    sb.close().await.unwrap();
}

#[tokio::test]
async fn a_read_only_command_in_sync_mode_changes_nothing_here() {
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    let before = tree(root);
    let sb = engine.sync_sandbox(root, SyncLimits::default());
    let mut req = ExecRequest::new(
        "echo x > ro.txt; echo changed > README.md; rm src/lib.rs",
        "/",
    );
    req.read_only = true;
    let out = sb
        .exec(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    let r = report(&out);
    assert!(
        r.read_only && r.brought_back == 0 && r.deleted == 0,
        "{r:?}"
    );
    assert_eq!(tree(root), before);
    // The next read-only command sees this side again (its container was put back).
    let mut req = ExecRequest::new(
        "cat README.md; ls ro.txt 2>/dev/null | wc -l; cat src/lib.rs | wc -l",
        "/",
    );
    req.read_only = true;
    let out = sb
        .exec(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.head),
        "hello\nworld\n0\n2\n",
        "{:?}",
        out.sync
    );
    sb.close().await.unwrap();
}

#[tokio::test]
async fn sync_requests_hold_the_deadline_the_stop_and_the_lost_connection() {
    use aibuddy_container::Endpoint;
    use aibuddy_sandbox::Stage;
    use std::time::Instant;
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    let proxy = crate::engine_faults::Proxy::start(&engine.socket).await;
    let endpoint = Endpoint::Unix(proxy.path.clone());
    let sb = engine.sync_sandbox_at(
        root,
        endpoint.clone(),
        Duration::from_secs(2),
        SyncLimits::default(),
    );
    let warm = run(&sb, "echo warm > warm.txt").await;
    assert_eq!(report(&warm).brought_back, 1);
    let id = sb.container_id().unwrap();

    // The engine stops answering: the call ends within its bound, and says the tree was not read.
    proxy.hang.cancel();
    let mut req = ExecRequest::new("echo never", "/");
    req.timeout = Duration::from_secs(1);
    req.kill_grace = Duration::from_millis(200);
    let t = Instant::now();
    let err = sb
        .exec(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap_err();
    let took = t.elapsed();
    eprintln!("hanging engine (sync): the call returned after {took:?}: {err}");
    assert_eq!(err.stage(), Stage::Execution);
    assert!(err.to_string().contains("INCOMPLETE"), "{err}");
    // timeout 1 s + grace 0.2 s + 2 x engine timeout 2 s, then one engine timeout for the read
    assert!(took < Duration::from_millis(5200 + 2000 + 1000), "{took:?}");
    assert!(
        root.join("warm.txt").exists() && root.join("README.md").exists(),
        "nothing deleted"
    );

    // A stop while the copy in hangs is immediate.
    std::fs::write(root.join("new.txt"), "to copy in").unwrap();
    let Started {
        task: call, cancel, ..
    } = start(&sb, ExecRequest::new("true", "/"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    cancel.cancel();
    let stopped = call.await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(stopped.unwrap_err().code(), "cancelled");

    // The engine vanishes while a command runs: an Execution error naming the lost connection,
    // with the sync's account (the tree could not be read: nothing deleted here).
    let proxy = crate::engine_faults::Proxy::start(&engine.socket).await;
    let sb2 = engine.sync_sandbox_at(
        root,
        Endpoint::Unix(proxy.path.clone()),
        Duration::from_secs(5),
        SyncLimits::default(),
    );
    let Started {
        task: call, rec, ..
    } = start(
        &sb2,
        ExecRequest::new("rm README.md; echo started; sleep 300", "/"),
    );
    rec.wait_for("started", Duration::from_secs(30)).await;
    let id2 = sb2.container_id().unwrap();
    let t = Instant::now();
    proxy.vanish.cancel();
    let err = call.await.unwrap().unwrap_err();
    eprintln!(
        "vanished engine (sync): the call returned after {:?}: {err}",
        t.elapsed()
    );
    assert_eq!(err.stage(), Stage::Execution);
    let text = err.to_string();
    assert!(
        text.contains("lost the connection") && text.contains("INCOMPLETE"),
        "{text}"
    );
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    assert!(
        root.join("README.md").exists(),
        "nothing deleted from a cut listing"
    );
    for gone in [&id, &id2] {
        let rm = engine
            .podman()
            .args(["rm", "--force", "--time", "0", gone])
            .output()
            .unwrap();
        assert!(rm.status.success());
    }
}

#[tokio::test]
async fn what_the_image_holds_at_the_workdir_never_comes_back() {
    use aibuddy_container::{ContainerSandbox, ProjectMode};
    use aibuddy_sandbox::SandboxSettings;
    let engine = engine_or_skip!();
    let dir = project();
    let root = dir.path();
    let before = tree(root);
    // The test image has `passwd` and `group` in /etc.
    let mut opts = engine.options_on(&engine.socket, Duration::from_secs(30));
    opts.project = ProjectMode::Sync;
    opts.workdir = "/etc".into();
    let sb = ContainerSandbox::open(&SandboxSettings::new(root), opts).unwrap();
    // `passwd` and `group` are removed there; `hostname` and `hosts` are the engine's mounts:
    // they stay, and are the container's own.
    let out = run(&sb, "ls; echo changed > README.md").await;
    assert_eq!(
        String::from_utf8_lossy(&out.head),
        "README.md\nhostname\nhosts\nsrc\n"
    );
    assert_eq!(report(&out).brought_back, 1, "{:?}", out.sync);
    std::fs::write(root.join("README.md"), "hello\nworld\n").unwrap();
    assert_eq!(tree(root), before);
    sb.close().await.unwrap();
}
