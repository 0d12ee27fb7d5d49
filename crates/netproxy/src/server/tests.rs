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
