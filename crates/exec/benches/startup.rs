//! Startup overhead of the namespace path vs the Landlock-only path, measured in the same run.
//!
//! `cargo bench -p aibuddy-exec --bench startup [-- rounds]` (never part of `make test`): runs
//! `true` through `aibuddy_exec::run` on each path, interleaved, plus a bare `/bin/sh -c true`
//! spawn as the floor, and prints p50 / p90 / mean per path and the ratio namespaces : landlock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_exec::{Confinement, ExecRequest, NamespacePolicy, NullSink, run};
use tokio_util::sync::CancellationToken;

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
    (ms(v[v.len() / 2]), ms(v[v.len() * 9 / 10]), mean)
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut bare, mut landlock, mut namespaces) = (Vec::new(), Vec::new(), Vec::new());
    let mut label = String::new();
    for i in 0..rounds + 5 {
        let t = Instant::now();
        let st = std::process::Command::new("/bin/sh")
            .args(["-c", "true"])
            .status()
            .expect("sh runs");
        assert!(st.success());
        let bare_t = t.elapsed();
        let mut times = [Duration::ZERO; 2];
        for (k, policy) in [NamespacePolicy::Off, NamespacePolicy::Auto]
            .into_iter()
            .enumerate()
        {
            let mut req = ExecRequest::new("true", dir.path());
            req.namespaces = policy;
            let t = Instant::now();
            let out = run(req, CancellationToken::new(), Arc::new(NullSink))
                .await
                .expect("run");
            times[k] = t.elapsed();
            assert!(out.termination.success());
            if policy == NamespacePolicy::Auto {
                assert!(
                    matches!(out.confinement, Confinement::Namespaces { .. }),
                    "no namespaces on this host: {:?}",
                    out.confinement
                );
                label = out.confinement.label();
            }
        }
        if i >= 5 {
            // The first rounds warm caches (bwrap probe, page cache).
            bare.push(bare_t);
            landlock.push(times[0]);
            namespaces.push(times[1]);
        }
    }
    let (b, l, n) = (stats(bare), stats(landlock), stats(namespaces));
    println!("startup of `true`, {rounds} interleaved rounds (ms: p50 / p90 / mean)");
    println!(
        "  bare sh -c true          {:7.2} / {:7.2} / {:7.2}",
        b.0, b.1, b.2
    );
    println!(
        "  landlock-only path       {:7.2} / {:7.2} / {:7.2}",
        l.0, l.1, l.2
    );
    println!(
        "  namespace path ({label}) {:7.2} / {:7.2} / {:7.2}",
        n.0, n.1, n.2
    );
    println!(
        "  ratio namespaces : landlock  p50 {:.2}x  mean {:.2}x",
        n.0 / l.0,
        n.2 / l.2
    );
}
