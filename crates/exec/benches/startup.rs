//! Startup overhead of the namespace path vs the Landlock-only path, and the per-call cost of the
//! protected-paths guard on each, measured in the same run.
//!
//! `cargo bench -p aibuddy-exec --bench startup [-- rounds]` (never part of `make test`): runs
//! `true` through `aibuddy_exec::run` on each path, interleaved, with and without protected paths
//! (every built-in entry in `unprotected_paths` turns the guard off), plus a bare
//! `/bin/sh -c true` spawn as the floor, and prints p50 / p90 / mean per variant, the ratio
//! namespaces : landlock and, per path, protected : unprotected and its difference in ms.
//!
//! The project is a git repository (a `.git` with hooks and info, a conditional include) with a
//! nested repository and a tree of 300 directories (`src/d<i>/e<j>`), so the guard's search for
//! git directories, includes and nested repositories has something to walk.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_exec::{Confinement, ExecRequest, NamespacePolicy, NullSink, PROTECTED_PATHS, run};
use tokio_util::sync::CancellationToken;

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
    (ms(v[v.len() / 2]), ms(v[v.len() * 9 / 10]), mean)
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let st = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(st.success(), "git {args:?}");
}

/// A project as a person has it: a repository, an include, a nested repository, 300 folders.
fn project(base: &std::path::Path) -> std::path::PathBuf {
    let p = base.join("proj");
    std::fs::create_dir(&p).expect("project dir");
    git(&p, &["init", "-q"]);
    let config = p.join(".git/config");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("[includeIf \"onbranch:main\"]\n\tpath = ../team.gitconfig\n");
    std::fs::write(&config, text).expect("config written");
    std::fs::create_dir_all(p.join("vendor/lib")).expect("nested dir");
    git(&p.join("vendor/lib"), &["init", "-q"]);
    for i in 0..30 {
        for j in 0..9 {
            std::fs::create_dir_all(p.join(format!("src/d{i}/e{j}"))).expect("tree");
        }
    }
    p
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let proj = project(&dir.path().canonicalize().expect("resolved"));
    let everything: Vec<String> = PROTECTED_PATHS.iter().map(|(p, _)| p.to_string()).collect();
    // (path, protected) in the order measured.
    let variants = [
        (NamespacePolicy::Off, true),
        (NamespacePolicy::Off, false),
        (NamespacePolicy::Auto, true),
        (NamespacePolicy::Auto, false),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut bare = Vec::new();
    let mut label = String::new();
    for i in 0..rounds + 5 {
        let t = Instant::now();
        let st = std::process::Command::new("/bin/sh")
            .args(["-c", "true"])
            .status()
            .expect("sh runs");
        assert!(st.success());
        let bare_t = t.elapsed();
        for (k, (policy, protected)) in variants.iter().enumerate() {
            let mut req = ExecRequest::new("true", &proj);
            req.namespaces = *policy;
            if !protected {
                req.unprotected_paths = everything.clone();
            }
            let t = Instant::now();
            let out = run(req, CancellationToken::new(), Arc::new(NullSink))
                .await
                .expect("run");
            let took = t.elapsed();
            assert!(out.termination.success());
            if *policy == NamespacePolicy::Auto {
                assert!(
                    matches!(out.confinement, Confinement::Namespaces { .. }),
                    "no namespaces on this host: {:?}",
                    out.confinement
                );
                label = out.confinement.label();
            }
            if i >= 5 {
                times[k].push(took);
            }
        }
        if i >= 5 {
            // The first rounds warm caches (bwrap probe, page cache).
            bare.push(bare_t);
        }
    }
    let s: Vec<(f64, f64, f64)> = times.into_iter().map(stats).collect();
    let b = stats(bare);
    println!("startup of `true`, {rounds} interleaved rounds (ms: p50 / p90 / mean)");
    let row = |name: &str, v: (f64, f64, f64)| {
        println!("  {name:<44} {:7.2} / {:7.2} / {:7.2}", v.0, v.1, v.2);
    };
    row("bare sh -c true", b);
    row("landlock-only path, protected paths", s[0]);
    row("landlock-only path, no protected paths", s[1]);
    row(&format!("namespace path ({label}), protected paths"), s[2]);
    row(
        &format!("namespace path ({label}), no protected paths"),
        s[3],
    );
    println!(
        "  ratio namespaces : landlock  p50 {:.2}x  mean {:.2}x",
        s[2].0 / s[0].0,
        s[2].2 / s[0].2
    );
    for (name, with, without) in [("landlock-only", s[0], s[1]), ("namespace", s[2], s[3])] {
        println!(
            "  protection guard, {name} path: protected : unprotected  p50 {:.2}x (+{:.2} ms)  mean {:.2}x (+{:.2} ms)",
            with.0 / without.0,
            with.0 - without.0,
            with.2 / without.2,
            with.2 - without.2
        );
    }
}
