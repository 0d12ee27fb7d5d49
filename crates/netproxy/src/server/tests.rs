//! Tests of the proxy server.

use super::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its questions; answers after a delay (a person thinking).
struct Slow(Arc<AtomicUsize>, Answer);

impl Decider for Slow {
    fn decide(&self, _ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let answer = self.1.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            answer
        })
    }
}

async fn connect_through(port: u16, target: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 512];
    let n = s.read(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Issue 22: the same host asked by several connections at once is asked about once; a
/// refusal carries the decider's reason; another port is another question.
#[tokio::test]
async fn concurrent_connections_to_one_host_ask_once() {
    let asked = Arc::new(AtomicUsize::new(0));
    let deny = Answer::Deny {
        rule: Some("asked: denied".into()),
        reason: "refused by the person".into(),
    };
    let cfg = ProxyConfig {
        policy: Policy::from_lists(&["crates.io".to_string()], &[]).0,
        decider: Arc::new(Slow(asked.clone(), deny)),
    };
    let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
    let (a, b, c) = tokio::join!(
        connect_through(port, "unlisted.example:443"),
        connect_through(port, "unlisted.example:443"),
        connect_through(port, "unlisted.example:443"),
    );
    for r in [&a, &b, &c] {
        assert!(
            r.starts_with("HTTP/1.1 403")
                && r.contains("refused connection to unlisted.example:443 (refused by the person)"),
            "{r}"
        );
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    connect_through(port, "unlisted.example:80").await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let (events, _) = proxy.stop();
    let e = events.iter().find(|e| e.port == 443).unwrap();
    assert_eq!(
        (e.allowed, e.connections, e.rule.as_deref()),
        (false, 3, Some("asked: denied"))
    );
}

/// A name the person allowed must still resolve to public addresses (what was shown is what
/// is reached); `localhost` and IP literals are shown as what they are.
#[tokio::test]
async fn an_allowed_name_that_resolves_to_loopback_is_refused() {
    let allow = Answer::Allow {
        rule: "asked: allowed once".into(),
    };
    let cfg = ProxyConfig {
        policy: Policy::from_lists(&[], &[]).0,
        decider: Arc::new(Slow(Arc::new(AtomicUsize::new(0)), allow)),
    };
    let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
    assert!(!shown_as_is("intranet.example") && !shown_as_is("localtest.me"));
    assert!(shown_as_is("localhost") && shown_as_is("::1") && shown_as_is("10.0.0.5"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
    let r = connect_through(port, &target).await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    drop(proxy);
}

/// The tunnel moves bytes both ways at once, in order and complete, and passes a half-close
/// on: 24 MB echoed back while still being sent (both pipes full and draining at the same
/// time, where a lost wake-up would hang), then the client's end of file ends the echo.
#[tokio::test]
async fn a_tunnel_echoes_a_large_stream_both_ways_at_once_and_passes_the_half_close() {
    let allow = Answer::Allow {
        rule: "asked: allowed once".into(),
    };
    let cfg = ProxyConfig {
        policy: Policy::from_lists(&[], &[]).0,
        decider: Arc::new(Slow(Arc::new(AtomicUsize::new(0)), allow)),
    };
    let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("127.0.0.1:{}", echo.local_addr().unwrap().port());
    tokio::spawn(async move {
        let (s, _) = echo.accept().await.unwrap();
        let (mut r, mut w) = s.into_split();
        tokio::io::copy(&mut r, &mut w).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    let data: Vec<u8> = (0..24 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let (mut r, mut w) = s.into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        for chunk in sent.chunks(100_003) {
            w.write_all(chunk).await.unwrap();
        }
        w.shutdown().await.unwrap();
    });
    let mut back = Vec::with_capacity(data.len());
    let got = tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut back)).await;
    assert!(got.is_ok(), "the tunnel stalled after {} bytes", back.len());
    writer.await.unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == data, "the echoed bytes differ");
    drop(proxy);
}

/// An `Allow` decider that never asks anybody (answers at once).
fn allow_all() -> ProxyConfig {
    let allow = Answer::Allow {
        rule: "asked: allowed once".into(),
    };
    ProxyConfig {
        policy: Policy::from_lists(&[], &[]).0,
        decider: Arc::new(Slow(Arc::new(AtomicUsize::new(0)), allow)),
    }
}

/// Reads a response head byte by byte (nothing of the tunnel's bytes after it).
async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        head.push(b[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Held by the tests that need tunnels on threads, and by the one that takes every place.
static THREAD_PLACES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The copying threads of tunnels alive in this process (other tests' tunnels included).
fn tunnel_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == threaded::THREAD_NAME)
        .count()
}

/// A stop in the middle of a transfer releases everything: the upstream connection is closed
/// (the server's writes fail), the client sees the end, and no copying thread stays behind,
/// also when both threads are blocked (the client reads nothing, the server writes on).
#[tokio::test]
async fn a_stop_mid_transfer_closes_both_sides_and_ends_the_tunnel_threads() {
    let _places = THREAD_PLACES.lock().await;
    let (proxy, port) = Proxy::serve_tcp_loopback(allow_all()).unwrap();
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("127.0.0.1:{}", server.local_addr().unwrap().port());
    let (closed_tx, closed_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = server.accept().unwrap();
        let chunk = vec![7u8; 64 * 1024];
        while std::io::Write::write_all(&mut s, &chunk).is_ok() {}
        let _ = closed_tx.send(());
    });
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut c).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut got = vec![0u8; 1024 * 1024];
    c.read_exact(&mut got).await.unwrap();
    assert!(got.iter().all(|b| *b == 7));
    // Stop reading: the buffers fill and both threads block; then the proxy stops.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(tunnel_threads() >= 2, "the tunnel runs on its threads");
    let (events, _) = proxy.stop();
    assert!(events.iter().any(|e| e.allowed && e.connections == 1));
    let closed =
        tokio::task::spawn_blocking(move || closed_rx.recv_timeout(Duration::from_secs(10)));
    assert!(
        closed.await.unwrap().is_ok(),
        "the upstream connection stayed open after the stop"
    );
    let mut rest = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut rest)).await;
    assert!(
        end.is_ok(),
        "the client's connection stayed open after the stop"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tunnel_threads() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(tunnel_threads(), 0, "tunnel threads left after the stop");
}

/// The bridge's path: a TCP connection handed to the proxy's Unix socket (`F` + `SCM_RIGHTS`)
/// is served on the passed socket itself; an allowed host's bytes arrive identical both ways
/// and the half-close passes; an unlisted host is still refused on that path.
#[tokio::test]
async fn a_handed_over_connection_carries_identical_bytes_and_refusals_still_hold() {
    use std::os::fd::AsRawFd;
    let dir = std::env::temp_dir().join(format!("aibuddy-netproxy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("proxy.sock");
    let _ = std::fs::remove_file(&sock);
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_port = echo.local_addr().unwrap().port();
    let cfg = ProxyConfig {
        policy: Policy::from_lists(&[format!("127.0.0.1:{echo_port}")], &[]).0,
        decider: Arc::new(crate::Refuse),
    };
    let proxy = Proxy::serve_unix(&sock, cfg).unwrap();
    tokio::spawn(async move {
        let (s, _) = echo.accept().await.unwrap();
        let (mut r, mut w) = s.into_split();
        tokio::io::copy(&mut r, &mut w).await.unwrap();
        w.shutdown().await.unwrap();
    });
    // What the bridge does: accept a TCP connection, pass it over the Unix socket, close ours.
    let hand_over = |sock: std::path::PathBuf| async move {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (accepted, _) = l.accept().unwrap();
        let unix = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        send_fd(&unix, accepted.as_raw_fd());
        drop(accepted);
        client
    };
    let mut refused = hand_over(sock.clone()).await;
    refused
        .write_all(b"CONNECT unlisted.example:443 HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let head = read_head(&mut refused).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");

    let mut c = hand_over(sock.clone()).await;
    let target = format!("127.0.0.1:{echo_port}");
    c.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut c).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let data: Vec<u8> = (0..8 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_246_822_519) >> 23) as u8)
        .collect();
    let (mut r, mut w) = c.into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        for chunk in sent.chunks(65_537) {
            w.write_all(chunk).await.unwrap();
        }
        w.shutdown().await.unwrap();
    });
    let mut back = Vec::with_capacity(data.len());
    let got = tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut back)).await;
    assert!(got.is_ok(), "the tunnel stalled after {} bytes", back.len());
    writer.await.unwrap();
    assert!(
        back == data,
        "the echoed bytes differ ({} of {})",
        back.len(),
        data.len()
    );
    let (events, _) = proxy.stop();
    assert!(
        events
            .iter()
            .any(|e| !e.allowed && e.host == "unlisted.example")
    );
    assert!(events.iter().any(|e| e.allowed && e.port == echo_port));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bridge's `send_fd` (one byte `F`, one descriptor).
fn send_fd(sock: &std::os::unix::net::UnixStream, fd: std::os::fd::RawFd) {
    use std::os::fd::AsRawFd;
    let mut byte = [b'F'];
    let mut cbuf = [0u64; 4];
    // SAFETY: sendmsg from buffers we own; the control message holds one descriptor.
    let rc = unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::c_int, fd);
        libc::sendmsg(sock.as_raw_fd(), &msg, 0)
    };
    assert_eq!(rc, 1, "sendmsg: {}", std::io::Error::last_os_error());
}

/// The places of tunnels on threads are bounded and given back.
#[test]
fn tunnel_thread_places_are_bounded_and_given_back() {
    static SLOTS: threaded::Slots = threaded::Slots::new(2);
    let a = SLOTS.take();
    let b = SLOTS.take();
    assert!(a.is_some() && b.is_some());
    assert!(SLOTS.take().is_none(), "a third place beyond the bound");
    drop(a);
    assert_eq!(SLOTS.used(), 1);
    assert!(SLOTS.take().is_some());
    assert_eq!(SLOTS.used(), 1, "a place dropped at once is given back");
}

/// A command cannot exhaust the app's threads: with every place on threads taken, a tunnel is
/// copied on the runtime, its bytes identical.
#[tokio::test]
async fn with_every_thread_place_taken_a_tunnel_still_works_on_the_runtime() {
    let _places = THREAD_PLACES.lock().await;
    let (proxy, port) = Proxy::serve_tcp_loopback(allow_all()).unwrap();
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("127.0.0.1:{}", echo.local_addr().unwrap().port());
    tokio::spawn(async move {
        let (s, _) = echo.accept().await.unwrap();
        let (mut r, mut w) = s.into_split();
        tokio::io::copy(&mut r, &mut w).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut held = Vec::new();
    while let Some(slot) = threaded::take_slot() {
        held.push(slot);
    }
    assert!(held.len() <= threaded::MAX_TUNNELS);
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut c).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let data: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = c.into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut back = Vec::new();
    let got = tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut back)).await;
    assert!(got.is_ok(), "the tunnel stalled after {} bytes", back.len());
    writer.await.unwrap();
    assert!(back == data, "the echoed bytes differ");
    drop(held);
    drop(proxy);
}

#[test]
fn authorities_and_absolute_targets() {
    assert_eq!(
        split_authority("crates.io:443", None),
        Some(("crates.io".into(), 443))
    );
    assert_eq!(split_authority("[::1]:80", None), Some(("::1".into(), 80)));
    assert_eq!(split_authority("x.org", None), None);
    assert_eq!(
        split_authority("u:p@X.org", Some(80)),
        Some(("x.org".into(), 80))
    );
    assert_eq!(
        split_absolute("http://Example.com:8080/a?b"),
        Some(("example.com".into(), 8080, "/a?b".into()))
    );
    assert_eq!(
        split_absolute("http://example.com"),
        Some(("example.com".into(), 80, "/".into()))
    );
    assert_eq!(split_absolute("https://example.com/"), None);
    assert_eq!(split_absolute("/relative"), None);
}
