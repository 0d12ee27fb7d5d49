//! Regression tests of issue 22, "network through an allow-list proxy": with the network on, a
//! command reached every host loopback port (dev servers, local MCP servers, a local model
//! server, the OAuth redirect listener) and `/proc/net/tcp` listed them. Each test runs a REAL
//! loopback server on the host and a real command (`curl`, bash's `/dev/tcp`) through `run`.

use crate::registry::registry;
use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

use aibuddy_exec::netproxy::Policy;
use aibuddy_exec::{ExecOutcome, ExecRequest, NamespacePolicy, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

const PATHS: [NamespacePolicy; 2] = [NamespacePolicy::Auto, NamespacePolicy::Off];

fn policy(allow: &[&str], deny: &[&str]) -> Policy {
    let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (p, errors) = Policy::from_lists(&s(allow), &s(deny));
    assert!(errors.is_empty());
    p
}

async fn run_text(r: ExecRequest) -> (ExecOutcome, String) {
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let mut text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    text.push_str(&String::from_utf8_lossy(&rec.stream(Stream::Stderr)));
    (out, text)
}

fn req(cmd: &str, dir: &Path, path: NamespacePolicy, policy: Option<Policy>) -> ExecRequest {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = path;
    r.network_policy = policy;
    r
}

/// curl through the command's proxy variables, even for `localhost` (which `NO_PROXY` sends
/// direct); `-p` tunnels with CONNECT, without it an absolute-form GET is sent.
fn curl(host: &str, port: u16, tunnel: bool) -> String {
    format!(
        "NO_PROXY= no_proxy= curl -sS --max-time 10 {} http://{host}:{port}/ 2>&1; echo \" curl-exit=$?\"",
        if tunnel { "-p" } else { "" }
    )
}

#[tokio::test]
async fn host_loopback_ports_are_out_of_reach_with_the_network_on() {
    let port = registry();
    let project = tempfile::tempdir().unwrap();
    let cmd = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo tcp-connected || echo tcp-refused; \
         curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/ 2>&1; echo \" direct-exit=$?\""
    );
    for path in PATHS {
        let (out, text) = run_text(req(&cmd, project.path(), path, None)).await;
        assert!(text.contains("tcp-refused"), "{path:?}: {text}");
        assert!(!text.contains("registry-ok"), "{path:?}: {text}");
        assert!(!text.contains("direct-exit=0"), "{path:?}: {text}");
        let mode = out.network.expect("a network report").mode;
        assert!(mode.starts_with("proxy"), "{mode}");
    }
}

#[tokio::test]
async fn proc_net_tcp_shows_no_host_listener() {
    let port = registry();
    let project = tempfile::tempdir().unwrap();
    let (_, text) = run_text(req(
        "cat /proc/net/tcp /proc/net/tcp6",
        project.path(),
        NamespacePolicy::Auto,
        None,
    ))
    .await;
    let needle = format!(":{port:04X} ");
    assert!(text.contains("local_address"), "{text}");
    assert!(
        !text.contains(&needle),
        "host listener {port} visible:\n{text}"
    );
}

#[tokio::test]
async fn an_allowed_loopback_registry_works_through_the_proxy_and_others_are_refused() {
    let port = registry();
    let other = registry();
    let project = tempfile::tempdir().unwrap();
    let cmd = format!(
        "{}; {}; {}; {}",
        curl("localhost", port, false),
        curl("localhost", port, true),
        // SOCKS5, names resolved by the proxy.
        format_args!(
            "NO_PROXY= no_proxy= curl -sS --max-time 10 --proxy \"$ALL_PROXY\" http://localhost:{port}/ 2>&1; echo \" socks-exit=$?\""
        ),
        curl("localhost", other, false),
    );
    let allow = format!("localhost:{port}");
    for path in PATHS {
        let (out, text) = run_text(req(
            &cmd,
            project.path(),
            path,
            Some(policy(&[&allow], &[])),
        ))
        .await;
        assert_eq!(text.matches("registry-ok").count(), 3, "{path:?}: {text}");
        assert!(text.contains("socks-exit=0"), "{path:?}: {text}");
        assert!(
            text.contains(&format!(
                "refused connection to localhost:{other} (not on exec.network.allow)"
            )),
            "{path:?}: {text}"
        );
        let net = out.network.unwrap();
        let allowed: u32 = net
            .events
            .iter()
            .filter(|e| e.allowed && e.port == port)
            .map(|e| e.connections)
            .sum();
        assert_eq!(allowed, 3, "{net:?}");
        let refused: Vec<_> = net.refused().collect();
        assert_eq!(refused.len(), 1, "{net:?}");
        assert_eq!(
            (refused[0].host.as_str(), refused[0].port),
            ("localhost", other)
        );
    }
}

#[tokio::test]
async fn deny_wins_over_allow() {
    let port = registry();
    let project = tempfile::tempdir().unwrap();
    let allow = format!("localhost:{port}");
    for path in PATHS {
        let (out, text) = run_text(req(
            &curl("localhost", port, true),
            project.path(),
            path,
            Some(policy(&[&allow, "*"], &["localhost"])),
        ))
        .await;
        assert!(!text.contains("registry-ok"), "{path:?}: {text}");
        let net = out.network.unwrap();
        let refused: Vec<_> = net.refused().collect();
        assert_eq!(refused.len(), 1, "{net:?}");
        assert_eq!(refused[0].rule.as_deref(), Some("deny: localhost"));
    }
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_under_the_wildcard() {
    let port = registry();
    let project = tempfile::tempdir().unwrap();
    let cmd = format!(
        "{}; {}",
        curl("localhost", port, false),
        curl("127.0.0.1", port, true)
    );
    for path in PATHS {
        let (out, text) =
            run_text(req(&cmd, project.path(), path, Some(policy(&["*"], &[])))).await;
        assert!(!text.contains("registry-ok"), "{path:?}: {text}");
        assert!(text.contains("non-public address"), "{path:?}: {text}");
        assert_eq!(out.network.unwrap().refused().count(), 2);
    }
}

#[tokio::test]
async fn network_off_gives_no_egress_and_no_proxy() {
    let port = registry();
    let project = tempfile::tempdir().unwrap();
    let cmd = format!(
        "echo \"proxy=[$HTTP_PROXY]\"; curl -sS --max-time 5 -x http://127.0.0.1:3128 http://localhost:{port}/ 2>&1; \
         echo \" exit=$?\"; bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo tcp-connected || echo tcp-refused"
    );
    for path in PATHS {
        let mut r = req(&cmd, project.path(), path, Some(policy(&["*"], &[])));
        r.network_allowed = false;
        let (out, text) = run_text(r).await;
        assert!(text.contains("proxy=[]"), "{path:?}: {text}");
        assert!(!text.contains("registry-ok"), "{path:?}: {text}");
        assert!(text.contains("tcp-refused"), "{path:?}: {text}");
        let net = out.network.unwrap();
        assert!(net.mode.starts_with("off"), "{}", net.mode);
        assert!(net.events.is_empty());
    }
}

/// A host loopback server streaming an endless body (64 KiB every 5 ms); its sender says when
/// a write failed, i.e. its connection was closed.
fn endless() -> (u16, std::sync::mpsc::Receiver<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n";
                let chunk = vec![b'z'; 64 * 1024];
                if s.write_all(head.as_bytes()).is_ok() {
                    while s.write_all(&chunk).is_ok() {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                let _ = tx.send(());
            });
        }
    });
    (port, rx)
}

/// The proxy's copying threads alive in this process (other tests' tunnels included).
fn tunnel_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == "aibuddy-tunnel")
        .count()
}

/// A stop in the middle of a download through the proxy releases everything, on both launch
/// paths: the run ends, the upstream connection is closed, and no tunnel thread stays behind.
#[tokio::test]
async fn a_stop_mid_download_closes_the_upstream_connection_and_ends_the_tunnel() {
    let project = tempfile::tempdir().unwrap();
    for path in PATHS {
        let (port, closed) = endless();
        let cmd = format!("NO_PROXY= no_proxy= curl -s -o /dev/null http://localhost:{port}/");
        let allow = format!("localhost:{port}");
        let stop = CancellationToken::new();
        let stopper = stop.clone();
        let during = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            let threads = tunnel_threads();
            stopper.cancel();
            threads
        });
        let r = req(&cmd, project.path(), path, Some(policy(&[&allow], &[])));
        let started = std::time::Instant::now();
        let out = run(r, stop, Recorder::new()).await.unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{path:?}: the stop took {:?}",
            started.elapsed()
        );
        let net = out.network.unwrap();
        assert!(
            net.events.iter().any(|e| e.allowed && e.port == port),
            "{path:?}: the download never went through the proxy: {net:?}"
        );
        assert!(
            during.await.unwrap() >= 2,
            "{path:?}: no tunnel thread copied the download"
        );
        let gone = tokio::task::spawn_blocking(move || {
            closed.recv_timeout(std::time::Duration::from_secs(10))
        });
        assert!(
            gone.await.unwrap().is_ok(),
            "{path:?}: the upstream connection stayed open after the stop"
        );
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tunnel_threads() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(tunnel_threads(), 0, "tunnel threads left after the stop");
}
