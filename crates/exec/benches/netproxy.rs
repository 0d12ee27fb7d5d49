//! The cost of the allow-list proxy (issue 22), measured against the direct transfer in the same
//! run: `cargo bench -p aibuddy-exec --bench netproxy [-- rounds [megabytes]]` (or
//! `benches/netproxy_bench.sh`; never part of `make test`).
//!
//! A loopback HTTP server in this process serves a `megabytes` (default 100) body and an empty
//! one. **Direct**: `curl` on the host, straight to the server. **Proxy**: the same `curl` inside
//! a command (`aibuddy_exec::run`, the namespace path: curl -> the init's bridge on 127.0.0.1:3128
//! in the command's network namespace -> Unix socket -> the proxy -> the server), the server
//! allowed as `localhost:PORT`. Times are curl's own (`%{time_total}`), so sandbox start-up is not
//! counted. Prints medians, the download ratio (goal <= 1.1x) and the set-up difference of the
//! empty request (goal <= 5 ms), each marked PASS or MISS.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

use aibuddy_exec::netproxy::Policy;
use aibuddy_exec::{ExecRequest, NamespacePolicy, NullSink, run};
use tokio_util::sync::CancellationToken;

fn server(big: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let body = Arc::new(vec![b'x'; big]);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&got);
                let n = if line.contains(" /big ") {
                    body.len()
                } else {
                    0
                };
                let head =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n");
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&body[..n]);
            });
        }
    });
    port
}

fn curl_loop(port: u16, path: &str, rounds: usize, proxied: bool) -> String {
    let env = if proxied { "NO_PROXY= no_proxy= " } else { "" };
    let noproxy = if proxied { "" } else { "--noproxy '*'" };
    format!(
        "for i in $(seq {rounds}); do {env}curl -s {noproxy} -o /dev/null -w '%{{time_total}}\\n' \
         http://localhost:{port}{path}; done"
    )
}

fn times(text: &str) -> Vec<f64> {
    let mut v: Vec<f64> = text
        .lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn median(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "no timings");
    v[v.len() / 2]
}

async fn proxied(cmd: &str, port: u16) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut req = ExecRequest::new(cmd, dir.path());
    req.namespaces = NamespacePolicy::Auto;
    req.timeout = std::time::Duration::from_secs(600);
    let (p, _) = Policy::from_lists(&[format!("localhost:{port}")], &[]);
    req.network_policy = Some(p);
    let out = run(req, CancellationToken::new(), Arc::new(NullSink))
        .await
        .expect("run");
    let mut all = out.head.clone();
    all.extend_from_slice(&out.tail);
    let text = String::from_utf8_lossy(&all).into_owned();
    let refused = out.network.map(|n| n.refused().count()).unwrap_or(0);
    assert_eq!(refused, 0, "the proxy refused the bench server: {text}");
    text
}

fn direct(cmd: &str) -> String {
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", cmd])
        .output()
        .expect("sh runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let rounds = args.next().unwrap_or(5);
    let mb = args.next().unwrap_or(100);
    let port = server(mb * 1024 * 1024);
    let setup_rounds = 30;
    let (mut d_big, mut p_big, mut d_small, mut p_small) = (vec![], vec![], vec![], vec![]);
    // Interleaved: direct, proxy, direct, proxy... one command per kind per pair.
    for _ in 0..rounds {
        d_big.extend(times(&direct(&curl_loop(port, "/big", 1, false))));
        p_big.extend(times(
            &proxied(&curl_loop(port, "/big", 1, true), port).await,
        ));
        d_small.extend(times(&direct(&curl_loop(
            port,
            "/small",
            setup_rounds,
            false,
        ))));
        p_small.extend(times(
            &proxied(&curl_loop(port, "/small", setup_rounds, true), port).await,
        ));
    }
    for v in [&mut d_big, &mut p_big, &mut d_small, &mut p_small] {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    let (db, pb) = (median(&d_big), median(&p_big));
    let (ds, ps) = (median(&d_small), median(&p_small));
    let ratio = pb / db;
    let extra_ms = (ps - ds) * 1e3;
    let mark = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!(
        "netproxy bench: {mb} MB download, {rounds} rounds; set-up {} requests",
        rounds * setup_rounds
    );
    println!(
        "  download  direct {:.1} ms ({:.0} MB/s)  proxy {:.1} ms ({:.0} MB/s)  ratio {ratio:.2}x (goal <= 1.10x) {}",
        db * 1e3,
        mb as f64 / db,
        pb * 1e3,
        mb as f64 / pb,
        mark(ratio <= 1.10)
    );
    println!(
        "  set-up    direct {:.2} ms  proxy {:.2} ms  +{extra_ms:.2} ms (goal <= 5 ms) {}",
        ds * 1e3,
        ps * 1e3,
        mark(extra_ms <= 5.0)
    );
}
