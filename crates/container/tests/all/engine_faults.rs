//! An engine that hangs mid-request and one that disappears, through a proxy in front of the real
//! engine's socket: the call's deadline holds, a lost connection is an Execution error that says
//! so, and the command does not run on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_sandbox::aibuddy_exec::{ExecRequest, NullSink};
use aibuddy_sandbox::{Sandbox, Stage};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::engine_or_skip;
use crate::exec::{SLEEPERS, sleepers};
use crate::sink::{Started, start};
use crate::support::project;

/// A Unix socket that forwards to the engine until told to hang (stop answering, keep every
/// connection open) or to vanish (close every connection and refuse new ones).
pub struct Proxy {
    pub path: PathBuf,
    pub hang: CancellationToken,
    pub vanish: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Proxy {
    pub async fn start(upstream: &Path) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proxy.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let (hang, vanish) = (CancellationToken::new(), CancellationToken::new());
        let upstream = upstream.to_path_buf();
        let (h, v) = (hang.clone(), vanish.clone());
        tokio::spawn(async move {
            loop {
                let client = tokio::select! {
                    r = listener.accept() => match r { Ok((c, _)) => c, Err(_) => return },
                    _ = v.cancelled() => return, // the listener is dropped: connections refused
                };
                let (h, v, upstream) = (h.clone(), v.clone(), upstream.clone());
                tokio::spawn(async move { forward(client, &upstream, h, v).await });
            }
        });
        Proxy {
            path,
            hang,
            vanish,
            _dir: dir,
        }
    }
}

async fn forward(
    mut client: UnixStream,
    upstream: &Path,
    hang: CancellationToken,
    vanish: CancellationToken,
) {
    if hang.is_cancelled() {
        // Accept, read nothing, answer nothing, until the test ends.
        tokio::select! { _ = vanish.cancelled() => {}, _ = std::future::pending::<()>() => {} }
        return;
    }
    let Ok(mut server) = UnixStream::connect(upstream).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = async {
            hang.cancelled().await;
            std::future::pending::<()>().await // keep both ends open, move nothing
        } => {}
        _ = vanish.cancelled() => {} // both ends dropped: closed
    }
}

#[tokio::test]
async fn a_hanging_engine_cannot_hold_the_call_past_its_deadline() {
    let engine = engine_or_skip!();
    let dir = project();
    let proxy = Proxy::start(&engine.socket).await;
    let sb = engine.sandbox_on(dir.path(), &proxy.path, Duration::from_secs(2));
    // The container exists (created through the proxy), then the engine stops answering.
    let warm = sb
        .exec(
            ExecRequest::new("true", "/"),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await;
    assert!(warm.unwrap().termination.success());
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
    eprintln!("hanging engine: the call returned after {took:?}: {err}");
    assert_eq!(err.stage(), Stage::Execution);
    assert!(
        err.to_string().contains("container engine unix://"),
        "{err}"
    );
    // timeout 1 s + grace 0.2 s + 2 x engine timeout 2 s
    assert!(took < Duration::from_millis(5200 + 1000), "{took:?}");
    // A stop is immediate even while the engine hangs.
    let Started {
        task: call, cancel, ..
    } = start(&sb, ExecRequest::new("true", "/"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    cancel.cancel();
    let stopped = call.await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(stopped.unwrap_err().code(), "cancelled");
    // A fresh sandbox whose engine never answers: creating its container is bounded too.
    let sb3 = engine.sandbox_on(dir.path(), &proxy.path, Duration::from_secs(1));
    let t = Instant::now();
    let err = sb3
        .exec(
            ExecRequest::new("true", "/"),
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
        .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_eq!(err.stage(), Stage::Execution);
    // The container the first sandbox made is removed through the real engine.
    let direct = engine.sandbox(dir.path());
    let id = sb.container_id().unwrap();
    let rm = engine
        .podman()
        .args(["rm", "--force", "--time", "0", &id])
        .output()
        .unwrap();
    assert!(rm.status.success());
    direct.close().await.unwrap();
    // Dropping a sandbox waits (boundedly) for its container's removal: refuse at once here.
    proxy.vanish.cancel();
}

#[tokio::test]
async fn an_engine_that_disappears_is_an_execution_error_and_the_command_ends() {
    let engine = engine_or_skip!();
    let dir = project();
    let proxy = Proxy::start(&engine.socket).await;
    let sb = engine.sandbox_on(dir.path(), &proxy.path, Duration::from_secs(5));
    let Started {
        task: call, rec, ..
    } = start(&sb, ExecRequest::new(SLEEPERS, "/"));
    rec.wait_for("started", Duration::from_secs(30)).await;
    let id = sb.container_id().unwrap();
    let t = Instant::now();
    proxy.vanish.cancel();
    let err = call.await.unwrap().unwrap_err();
    eprintln!(
        "vanished engine: the call returned after {:?}: {err}",
        t.elapsed()
    );
    assert_eq!(err.stage(), Stage::Execution);
    assert!(err.to_string().contains("lost the connection"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    // The real engine is still there: the closed connection ended the command's processes.
    let direct = engine.sandbox(dir.path());
    let count = engine
        .podman()
        .args([
            "exec",
            &id,
            "sh",
            "-c",
            "grep -lz '^300$' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
        ])
        .output()
        .unwrap();
    let mut left: usize = String::from_utf8_lossy(&count.stdout)
        .trim()
        .parse()
        .unwrap();
    let t = Instant::now();
    while left > 0 && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let c = engine
            .podman()
            .args([
                "exec",
                &id,
                "sh",
                "-c",
                "grep -lz '^300$' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
            ])
            .output()
            .unwrap();
        left = String::from_utf8_lossy(&c.stdout).trim().parse().unwrap();
    }
    assert_eq!(
        left, 0,
        "processes left after the engine connection was lost"
    );
    let _ = sleepers; // the same count, through podman exec here (the sandbox's engine is gone)
    let rm = engine
        .podman()
        .args(["rm", "--force", "--time", "0", &id])
        .output()
        .unwrap();
    assert!(rm.status.success());
    direct.close().await.unwrap();
}
