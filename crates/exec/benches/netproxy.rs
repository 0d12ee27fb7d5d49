//! The cost of the allow-list proxy (issue 22), measured against the direct transfer in the same
//! run: `cargo bench -p aibuddy-exec --bench netproxy [-- rounds [megabytes]]` (or
//! `benches/netproxy_bench.sh`; never part of `make test`).
//!
//! A loopback HTTP server in this process serves a `megabytes` (default 100) body and an empty
//! one. **Direct**: `curl` on the host, straight to the server. **Proxy**: the same `curl` inside
//! a command (`aibuddy_exec::run`, the namespace path: curl -> the init's bridge on 127.0.0.1:3128
//! in the command's network namespace -> Unix socket -> the proxy -> the server), the server
//! allowed as `localhost:PORT`. Times are curl's own (`%{time_total}`), so sandbox start-up is not
//! counted; both sides run the same curl command line (only the proxy variables differ).
//!
//! Honest on a shared machine: one warm-up of each side is discarded; then `rounds` (default 9)
//! pairs, a direct and a proxied download back to back with the order alternating; the verdict is
//! the median of the pairs' ratios (load from other processes falls on both sides of a pair), and
//! every value is printed with its spread (min..max) and the load average before and after. The
//! set-up cost is the median of 30 empty requests per side and round, differenced per pair.
//! Marks: download ratio <= 1.1x, set-up <= +5 ms (PASS or MISS).

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
    text.lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .collect()
}

/// Sorted copy.
fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn median(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "no timings");
    let v = sorted(v);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median [min..max]` of `v` scaled by `k`, with `prec` decimals.
fn spread(v: &[f64], k: f64, prec: usize) -> String {
    let s = sorted(v);
    format!(
        "{:.prec$} [{:.prec$}..{:.prec$}]",
        median(v) * k,
        s[0] * k,
        s[s.len() - 1] * k
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
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

/// One timing per request of `cmd` run directly or through the proxy.
async fn measure(cmd_direct: &str, cmd_proxied: &str, port: u16, proxy: bool) -> Vec<f64> {
    if proxy {
        times(&proxied(cmd_proxied, port).await)
    } else {
        times(&direct(cmd_direct))
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let rounds = args.next().unwrap_or(9).max(1);
    let mb = args.next().unwrap_or(100);
    let port = server(mb * 1024 * 1024);
    let setup_rounds = 30;
    let big = (
        curl_loop(port, "/big", 1, false),
        curl_loop(port, "/big", 1, true),
    );
    let small = (
        curl_loop(port, "/small", setup_rounds, false),
        curl_loop(port, "/small", setup_rounds, true),
    );
    let load_before = loadavg();
    // Warm-up (not counted): the first sandbox start, the page cache, the sockets' buffers.
    for proxy in [false, true] {
        measure(&big.0, &big.1, port, proxy).await;
        measure(&small.0, &small.1, port, proxy).await;
    }
    // Paired rounds: one direct and one proxied download back to back, the order alternating,
    // so load from other processes falls on both sides of a pair alike; the verdict is the
    // median of the pairs' ratios.
    let (mut d_big, mut p_big, mut ratios) = (vec![], vec![], vec![]);
    let (mut d_small, mut p_small, mut extras) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut pair = [0.0f64; 2];
        let mut pair_small = [0.0f64; 2];
        for proxy in order {
            let t = measure(&big.0, &big.1, port, proxy).await;
            pair[usize::from(proxy)] = t.first().copied().expect("a download timing");
            let s = measure(&small.0, &small.1, port, proxy).await;
            pair_small[usize::from(proxy)] = median(&s);
        }
        d_big.push(pair[0]);
        p_big.push(pair[1]);
        ratios.push(pair[1] / pair[0]);
        d_small.push(pair_small[0]);
        p_small.push(pair_small[1]);
        extras.push(pair_small[1] - pair_small[0]);
    }
    let ratio = median(&ratios);
    let extra_ms = median(&extras) * 1e3;
    let mark = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!(
        "netproxy bench: {mb} MB download, {rounds} paired rounds (+1 warm-up); set-up: median of \
         {setup_rounds} empty requests per round; load average {load_before} before, {} after",
        loadavg()
    );
    println!("  values: median [min..max] over the rounds");
    println!(
        "  download  direct {} ms  proxy {} ms  ({:.0} vs {:.0} MB/s)",
        spread(&d_big, 1e3, 1),
        spread(&p_big, 1e3, 1),
        mb as f64 / median(&d_big),
        mb as f64 / median(&p_big),
    );
    println!(
        "  download  ratio (per pair) {}x (goal <= 1.10x) {}",
        spread(&ratios, 1.0, 2),
        mark(ratio <= 1.10)
    );
    println!(
        "  set-up    direct {} ms  proxy {} ms  extra {} ms (goal <= 5 ms) {}",
        spread(&d_small, 1e3, 2),
        spread(&p_small, 1e3, 2),
        spread(&extras, 1e3, 2),
        mark(extra_ms <= 5.0)
    );
}
