//! The cost of the allow-list proxy (issue 22), measured against the direct transfer and
//! against the cheapest relays this machine can run, in the same run:
//! `cargo bench -p aibuddy-exec --bench netproxy [-- rounds [megabytes]]` (or
//! `benches/netproxy_bench.sh`; never part of `make test`).
//!
//! A loopback HTTP server in this process serves a `megabytes` (default 100) body and an empty
//! one. The same `curl` command line fetches them by each side:
//!
//! | side | path of the bytes |
//! |---|---|
//! | direct | curl -> server |
//! | floor: splice relay | curl -> blocking `splice(2)` relay, no policy -> server |
//! | floor: copy relay | curl -> blocking `read`/`write` relay, no policy -> server |
//! | floor: socat | curl -> `socat` -> server (when `socat` is installed) |
//! | proxy, host | `curl -x` -> our proxy on a loopback port -> server (no namespace, no bridge) |
//! | proxy, command | curl inside a command (`aibuddy_exec::run`, namespace path) -> the init's bridge on 127.0.0.1:3128 hands the socket to the proxy (`SCM_RIGHTS`, no relay) -> the proxy -> server |
//!
//! Every relay has the hops of the proxy (two loopback TCP connections, one relay between), so
//! `floor/direct` is what any relay costs here and `proxy/floor` what the proxy adds to it. A
//! loopback transfer is CPU-bound (both ends copy): on a 2-core machine a third party doing
//! work cannot run beside both, and no relay reaches 1.1x of direct.
//!
//! Times are curl's own (`%{time_total}`), so sandbox start-up is not counted. **cpu** is the
//! CPU time of the whole transfer (this process: server, relays, proxies; its children: curl,
//! and for the command also the sandbox's start, ~10-15 ms; `socat`'s from `/proc`): unlike
//! wall time it barely moves with load from other processes, so it is what to compare on a
//! busy machine.
//!
//! Honest on a shared machine: one warm-up of each side is discarded; then `rounds` (default 9)
//! rounds of every side back to back, the starting side rotating; ratios are taken within a
//! round and the verdict is their median; every value is printed with its spread (min..max),
//! with the load average before and after. The set-up cost is the median of 30 empty requests
//! per side and round, differenced per round. Marks: proxy/direct <= 1.1x, set-up <= +5 ms.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

use aibuddy_exec::netproxy::{Policy, Proxy, ProxyConfig, Refuse};
use aibuddy_exec::{ExecRequest, NamespacePolicy, NullSink, run};
use tokio_util::sync::CancellationToken;

#[path = "netproxy/floor.rs"]
mod floor;

/// Set in the server's process: the size of the big body.
const SERVE_ENV: &str = "NETPROXY_BENCH_SERVE";

/// The loopback HTTP server, in a process and session of its own: with the scheduler's
/// autogroups (one per session) it competes for the CPU as a remote server's machine would not
/// and as the app and the command do, each on its own, instead of sharing the share of the
/// relays and proxies in this process (which slowed every relaying side and not the direct one).
struct Server {
    child: std::process::Child,
    port: u16,
}

impl Server {
    fn start(big: usize) -> Server {
        let exe = std::env::current_exe().expect("the bench's own path");
        let mut child = std::process::Command::new(exe)
            .env(SERVE_ENV, big.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the server process starts");
        let mut line = String::new();
        let out = child.stdout.take().expect("the server's stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line)
            .expect("the server's port");
        let port = line.trim().parse().expect("the server prints its port");
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server process: a session of its own, its port on stdout, then serving until killed.
fn serve(big: usize) {
    // SAFETY: setsid has no preconditions (fails harmlessly if already a group leader).
    unsafe { libc::setsid() };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    println!("{port}");
    std::io::stdout().flush().unwrap();
    let body = Arc::new(vec![b'x'; big]);
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
}

/// How one side reaches the server.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// `curl` on the host, straight to the server.
    Direct,
    /// `curl` on the host through the blocking splice relay ([`floor::splice_relay`]).
    Splice(u16),
    /// `curl` on the host through the read/write relay ([`floor::copy_relay`]).
    Copy(u16),
    /// `curl` on the host through `socat`.
    Socat(u16),
    /// `curl -x` on the host through our proxy on a loopback port (no namespace, no bridge).
    ProxyHost(u16),
    /// `curl` inside a command (`aibuddy_exec::run`, namespace path) through its proxy.
    Proxy,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Direct => "direct",
            Side::Splice(_) => "floor: splice relay",
            Side::Copy(_) => "floor: copy relay",
            Side::Socat(_) => "floor: socat",
            Side::ProxyHost(_) => "proxy, host (curl -x)",
            Side::Proxy => "proxy, command",
        }
    }

    /// The shell loop of `rounds` requests of `path` (the server is always named by its own
    /// port as `localhost`, so the proxy decides the same host on both proxy sides).
    fn curl_loop(self, port: u16, path: &str, rounds: usize) -> String {
        let (env, how, target) = match self {
            Side::Direct => ("", "--noproxy '*'".to_string(), port),
            Side::Splice(p) | Side::Copy(p) | Side::Socat(p) => {
                ("", "--noproxy '*'".to_string(), p)
            }
            Side::ProxyHost(p) => ("", format!("--noproxy '' -x http://127.0.0.1:{p}"), port),
            Side::Proxy => ("NO_PROXY= no_proxy= ", String::new(), port),
        };
        format!(
            "for i in $(seq {rounds}); do {env}curl -s {how} -o /dev/null -w '%{{time_total}} %{{size_download}}\\n' \
             http://localhost:{target}{path}; done"
        )
    }
}

/// curl's `time_total` of each request that received `size` bytes (a failed request, or one
/// that got something else, is left out, and the side then has too few timings).
fn times(text: &str, size: usize) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            let (t, n) = l.trim().split_once(' ')?;
            (n.parse::<usize>().ok()? == size).then_some(t.parse::<f64>().ok()?)
        })
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
    let net = out.network.expect("the command's network report");
    assert!(
        net.mode.starts_with("proxy: own network namespace"),
        "the command did not get the namespace path's proxy ({}): run the bench binary where \
         cargo built it (the init program is found beside it); {text}",
        net.mode
    );
    let refused = net.refused().count();
    assert_eq!(refused, 0, "the proxy refused the bench server: {text}");
    text
}

/// `cmd` on the host, in a session of its own (as the command's bubblewrap puts the proxied
/// curl: each its own autogroup).
fn direct(cmd: &str) -> String {
    use std::os::unix::process::CommandExt;
    let mut sh = std::process::Command::new("/bin/sh");
    sh.args(["-c", cmd]);
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        sh.pre_exec(|| {
            libc::setsid();
            Ok(())
        })
    };
    let out = sh.output().expect("sh runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// CPU seconds (user + system) of this process and of its waited-for children so far.
fn cpu_now() -> f64 {
    let secs = |who| {
        // SAFETY: getrusage fills a struct we own.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(who, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        t(u.ru_utime) + t(u.ru_stime)
    };
    let others: f64 = [SOCAT.get(), SERVER.get()]
        .into_iter()
        .flatten()
        .map(|pid| floor::proc_cpu(*pid))
        .sum();
    secs(libc::RUSAGE_SELF) + secs(libc::RUSAGE_CHILDREN) + others
}

/// The `socat` relay's process, when there is one (its CPU is counted with ours).
static SOCAT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
/// The server's process (its CPU is counted with ours).
static SERVER: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// One timing per request of `side`'s loop, and the CPU time all of it took (this process:
/// server, relays, proxies; its children: sh, curl, and for the command the sandbox start too).
async fn measure(
    side: Side,
    port: u16,
    (path, size): (&str, usize),
    rounds: usize,
) -> (Vec<f64>, f64) {
    let cmd = side.curl_loop(port, path, rounds);
    let cpu = cpu_now();
    let t = if side == Side::Proxy {
        proxied(&cmd, port).await
    } else {
        direct(&cmd)
    };
    let t = times(&t, size);
    assert_eq!(
        t.len(),
        rounds,
        "{}: {} of {rounds} requests got the {size} bytes of {path}",
        side.name(),
        t.len()
    );
    if matches!(side, Side::Socat(_)) {
        // socat reaps the child that served the connection on SIGCHLD: let it.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (t, cpu_now() - cpu)
}

/// What one side measured over the rounds.
#[derive(Default)]
struct Series {
    big: Vec<f64>,
    cpu: Vec<f64>,
    small: Vec<f64>,
}

fn main() {
    if let Some(big) = std::env::var(SERVE_ENV).ok().and_then(|v| v.parse().ok()) {
        serve(big);
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(bench());
}

async fn bench() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let rounds = args.next().unwrap_or(9).max(1);
    let mb = args.next().unwrap_or(100);
    let server = Server::start(mb * 1024 * 1024);
    let port = server.port;
    let _ = SERVER.set(server.child.id());
    let (big, small) = (("/big", mb * 1024 * 1024), ("/small", 0));
    let setup_rounds = 30;
    let (host_policy, _) = Policy::from_lists(&[format!("localhost:{port}")], &[]);
    let (host_proxy, host_proxy_port) = Proxy::serve_tcp_loopback(ProxyConfig {
        policy: host_policy,
        decider: Arc::new(Refuse),
    })
    .expect("the host proxy listens");
    let socat = floor::Socat::start(port);
    let mut sides = vec![
        Side::Direct,
        Side::Splice(floor::splice_relay(port)),
        Side::Copy(floor::copy_relay(port)),
    ];
    if let Some(s) = &socat {
        let _ = SOCAT.set(s.pid());
        sides.push(Side::Socat(s.port));
    }
    sides.extend([Side::ProxyHost(host_proxy_port), Side::Proxy]);
    // Profiling one side: `NETPROXY_BENCH_ONLY=<side name prefix>` downloads through that side
    // only, `rounds` times, and prints each time and CPU (run it under `perf record -a -g`).
    if let Ok(only) = std::env::var("NETPROXY_BENCH_ONLY") {
        let side = *sides
            .iter()
            .find(|s| s.name().starts_with(only.as_str()))
            .expect("NETPROXY_BENCH_ONLY names a side");
        for _ in 0..rounds {
            let (t, cpu) = measure(side, port, big, 1).await;
            println!(
                "{}: {:.1} ms, cpu {:.0} ms",
                side.name(),
                t[0] * 1e3,
                cpu * 1e3
            );
        }
        return;
    }
    let load_before = loadavg();
    // Warm-up (not counted): the first sandbox start, the page cache, the sockets' buffers.
    for &side in &sides {
        measure(side, port, big, 1).await;
        measure(side, port, small, setup_rounds).await;
    }
    // Rounds: every side once per round, back to back, the starting side rotating, so load from
    // other processes falls on all sides of a round alike; each ratio is taken within a round and
    // the verdict is the median of the rounds' ratios.
    let mut series: Vec<Series> = sides.iter().map(|_| Series::default()).collect();
    for round in 0..rounds {
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let (t, cpu) = measure(sides[i], port, big, 1).await;
            series[i]
                .big
                .push(t.first().copied().expect("a download timing"));
            series[i].cpu.push(cpu);
            let (s, _) = measure(sides[i], port, small, setup_rounds).await;
            series[i].small.push(median(&s));
        }
    }
    let load_after = loadavg();
    drop(host_proxy);
    drop(socat);
    drop(server);
    report(
        &sides,
        &series,
        mb,
        rounds,
        setup_rounds,
        (&load_before, &load_after),
    );
}

/// Per-round ratio of side `a` to side `b` (download times).
fn ratios(a: &Series, b: &Series) -> Vec<f64> {
    a.big.iter().zip(&b.big).map(|(x, y)| x / y).collect()
}

/// Per-round extra set-up time of `a` over `b`.
fn extras(a: &Series, b: &Series) -> Vec<f64> {
    a.small.iter().zip(&b.small).map(|(x, y)| x - y).collect()
}

/// The floor: the relay with the lowest median download time over the run (one relay for every
/// round: the cheapest of three noisy samples per round would be an optimistic floor).
fn floor_of(sides: &[Side], series: &[Series]) -> usize {
    sides
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Side::Splice(_) | Side::Copy(_) | Side::Socat(_)))
        .min_by(|(i, _), (j, _)| median(&series[*i].big).total_cmp(&median(&series[*j].big)))
        .map(|(i, _)| i)
        .expect("a floor relay was measured")
}

/// Per-round ratio of the CPU times of `a` and `b`.
fn cpu_ratios(a: &Series, b: &Series) -> Vec<f64> {
    a.cpu.iter().zip(&b.cpu).map(|(x, y)| x / y).collect()
}

fn report(
    sides: &[Side],
    series: &[Series],
    mb: usize,
    rounds: usize,
    setup_rounds: usize,
    (load_before, load_after): (&str, &str),
) {
    let at = |want: fn(Side) -> bool| sides.iter().position(|s| want(*s)).expect("side measured");
    let direct = &series[at(|s| s == Side::Direct)];
    let host = &series[at(|s| matches!(s, Side::ProxyHost(_)))];
    let proxy = &series[at(|s| s == Side::Proxy)];
    let floor_at = floor_of(sides, series);
    let floor = &series[floor_at];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Wall time means something only while nothing else wants the CPU: a 1-minute load average
    // above half the cores (before or after) turns the time verdicts into no verdict.
    let load1 = |l: &str| {
        l.split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::INFINITY)
    };
    let quiet = load1(load_before).max(load1(load_after)) <= cores as f64 / 2.0;
    let mark = |ok: bool| match (quiet, ok) {
        (false, _) => "NO VERDICT (busy machine: compare cpu)",
        (true, true) => "PASS",
        (true, false) => "MISS",
    };
    println!(
        "netproxy bench: {mb} MB download, {rounds} rounds (+1 warm-up) of {} sides; set-up: \
         median of {setup_rounds} empty requests per side and round; {cores} cores; load \
         average {load_before} before, {load_after} after{}",
        sides.len(),
        if quiet {
            ""
        } else {
            " (BUSY: wall times are not reliable)"
        },
    );
    println!("  values: median [min..max] over the rounds; ratios and extras taken per round");
    for (side, s) in sides.iter().zip(series) {
        println!(
            "  {:<22} download {} ms ({:>5.0} MB/s) x{} of direct; cpu {} ms; set-up {} ms \
             (+{} ms)",
            side.name(),
            spread(&s.big, 1e3, 1),
            mb as f64 / median(&s.big),
            spread(&ratios(s, direct), 1.0, 2),
            spread(&s.cpu, 1e3, 0),
            spread(&s.small, 1e3, 2),
            spread(&extras(s, direct), 1e3, 2),
        );
    }
    println!(
        "  floor = {} (of the relays with the proxy's hops and no policy, the lowest median time)",
        sides[floor_at].name()
    );
    let (pd, fd, pf) = (
        ratios(proxy, direct),
        ratios(floor, direct),
        ratios(proxy, floor),
    );
    println!(
        "  time  proxy/direct {}x (goal <= 1.10x) {}",
        spread(&pd, 1.0, 2),
        mark(median(&pd) <= 1.10)
    );
    println!(
        "  time  floor/direct {}x (no relay does better here)",
        spread(&fd, 1.0, 2)
    );
    println!(
        "  time  proxy/floor  {}x (what the proxy adds to any relay)",
        spread(&pf, 1.0, 2)
    );
    // The fastest of each side's rounds: the least disturbed by other processes, so on a busy
    // machine the closest estimate of a quiet one (taken side by side, not per round).
    let best = |v: &[f64]| sorted(v)[0];
    println!(
        "  best  proxy/direct {:.2}x  floor/direct {:.2}x  proxy/floor {:.2}x (fastest round of \
         each side)",
        best(&proxy.big) / best(&direct.big),
        best(&floor.big) / best(&direct.big),
        best(&proxy.big) / best(&floor.big),
    );
    println!(
        "  cpu   proxy(host)/direct {}x  floor/direct {}x  proxy(host)/floor {}x (the command's \
         cpu also holds its sandbox start)",
        spread(&cpu_ratios(host, direct), 1.0, 2),
        spread(&cpu_ratios(floor, direct), 1.0, 2),
        spread(&cpu_ratios(host, floor), 1.0, 2),
    );
    let extra_ms = median(&extras(proxy, direct)) * 1e3;
    println!(
        "  set-up extra {} ms (goal <= 5 ms) {}",
        spread(&extras(proxy, direct), 1e3, 2),
        mark(extra_ms <= 5.0)
    );
}
