//! The benchmark driver of `benches/checkpoint_bench.sh`: snapshots of a project, timed.
//!
//! `aibuddy-checkpoint-bench DATA_DIR PROJECT N`: the first snapshot (fresh store), then `N`
//! rounds of: a snapshot with nothing changed on the store kept open (as in a run or the window,
//! where the stat cache stays in memory: `unchanged_ms`), the same in a store opened afresh (as
//! an `aibuddy call` process does: `cold_ms`), and a whole mutating call that changes one file
//! (before-snapshot, the write, after-snapshot: `call_ms`, the write itself not counted).
//! Prints one `name=<ms>` line per measure on stdout (`unchanged_ms` also with the CPU time the
//! snapshot took, every thread counted: `cpu_ms`).
//! `aibuddy-checkpoint-bench gen DIR FILES BYTES`: writes a tree of `FILES` files of `BYTES` in
//! all (100 per folder, sizes spread around the mean, half text, half pseudo-random bytes).
//! `aibuddy-checkpoint-bench touch PROJECT I`: rewrites one file of the tree (round `I`), as the
//! shadow-git side of `call_ms` does.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aibuddy_checkpoint::{CheckpointStore, SnapshotOptions};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// CPU time of the process so far (user + system, every thread), in ms: unlike wall time, it
/// hardly moves with the load other processes put on a shared machine.
fn cpu_ms() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 5 && args[1] == "gen" {
        let files: u64 = args[3].parse().unwrap_or(10_000);
        let bytes: u64 = args[4].parse().unwrap_or(200 << 20);
        return match generate(&PathBuf::from(&args[2]), files, bytes) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("checkpoint bench: generate: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    if args.len() == 4 && args[1] == "touch" {
        let round: usize = args[3].parse().unwrap_or(0);
        return match touch(Path::new(&args[2]), round) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("checkpoint bench: touch: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    if args.len() == 5 && args[1] == "warm" {
        // Profiling aid: N unchanged snapshots on one open store (THREADS: hashing threads,
        // WALK_THREADS: walk threads; CALLS=1:
        // each after a one-file rewrite; COLD=1: each from a store opened afresh; SLEEP_MS: a
        // pause before each), wall and CPU time per snapshot.
        let n: usize = args[4].parse().unwrap_or(100);
        let run = || -> aibuddy_checkpoint::Result<()> {
            let mut opts = SnapshotOptions::default();
            if let Some(t) = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()) {
                opts.threads = t;
            }
            if let Some(t) = std::env::var("WALK_THREADS")
                .ok()
                .and_then(|t| t.parse().ok())
            {
                opts.walk_threads = t;
            }
            let store =
                CheckpointStore::open(Path::new(&args[2]), Path::new(&args[3]), opts.clone())?;
            store.snapshot_shared()?;
            // COLD=1: each snapshot from a store opened afresh (as a new process).
            let cold = std::env::var("COLD").is_ok_and(|v| v == "1");
            // CALLS=1: each snapshot follows a rewrite of one file (the after-snapshot of a call).
            let calls = std::env::var("CALLS").is_ok_and(|v| v == "1");
            let (mut wall, mut cpu) = (Vec::new(), Vec::new());
            // SLEEP_MS: a pause before each snapshot (as between two calls).
            let pause = std::env::var("SLEEP_MS").ok().and_then(|v| v.parse().ok());
            // AFTER_CALL=1: each snapshot follows a call (a one-file rewrite and its snapshot,
            // then the pause), as the unchanged measure of the benchmark does.
            let after_call = std::env::var("AFTER_CALL").is_ok_and(|v| v == "1");
            for round in 0..n {
                if after_call {
                    touch(Path::new(&args[3]), round).map_err(|e| {
                        aibuddy_checkpoint::CheckpointError::io("touch", Path::new(&args[3]), e)
                    })?;
                    store.snapshot_shared()?;
                }
                if let Some(p) = pause {
                    std::thread::sleep(std::time::Duration::from_millis(p));
                }
                if calls {
                    touch(Path::new(&args[3]), round).map_err(|e| {
                        aibuddy_checkpoint::CheckpointError::io("touch", Path::new(&args[3]), e)
                    })?;
                }
                let (t, c) = (Instant::now(), cpu_ms());
                if cold {
                    CheckpointStore::open(Path::new(&args[2]), Path::new(&args[3]), opts.clone())?
                        .snapshot_shared()?;
                } else {
                    store.snapshot_shared()?;
                }
                wall.push(ms(t));
                cpu.push(cpu_ms() - c);
            }
            wall.sort_by(f64::total_cmp);
            cpu.sort_by(f64::total_cmp);
            println!(
                "warm_p50_ms={:.2} cpu_p50_ms={:.2}",
                wall[n / 2],
                cpu[n / 2]
            );
            Ok(())
        };
        return match run() {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("checkpoint bench: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    if args.len() != 4 {
        eprintln!("usage: aibuddy-checkpoint-bench DATA_DIR PROJECT N");
        return std::process::ExitCode::from(2);
    }
    let data = PathBuf::from(&args[1]);
    let project = PathBuf::from(&args[2]);
    let n: usize = args[3].parse().unwrap_or(20);
    // WALK_THREADS: the walk's threads (to compare; the default otherwise).
    let mut opts = SnapshotOptions::default();
    if let Some(t) = std::env::var("WALK_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
    {
        opts.walk_threads = t;
    }
    let open = || CheckpointStore::open(&data, &project, opts.clone());
    let run = || -> aibuddy_checkpoint::Result<()> {
        let t = Instant::now();
        let store = open()?;
        let s = store.snapshot_shared()?;
        println!(
            "first_ms={:.2} entries={} read={}",
            ms(t),
            s.stats.entries,
            s.stats.read
        );
        // Past the racy window of the first snapshot, as between two calls of a person.
        std::thread::sleep(std::time::Duration::from_millis(100));
        store.snapshot_shared()?;
        for round in 0..n {
            let (t, c) = (Instant::now(), cpu_ms());
            let s = store.snapshot_shared()?;
            println!(
                "unchanged_ms={:.2} read={} cpu_ms={:.2} listed={}",
                ms(t),
                s.stats.read,
                cpu_ms() - c,
                s.stats.listed
            );

            let t = Instant::now();
            let cold = open()?;
            let s = cold.snapshot_shared()?;
            println!("cold_ms={:.2} read={}", ms(t), s.stats.read);

            let t = Instant::now();
            let before = store.snapshot_shared()?;
            let before_ms = ms(t);
            touch(&project, round)
                .map_err(|e| aibuddy_checkpoint::CheckpointError::io("touch", &project, e))?;
            let t = Instant::now();
            let after = store.snapshot_shared()?;
            let changes = aibuddy_checkpoint::diff(&before.manifest, &after.manifest);
            println!(
                "call_ms={:.2} files={}",
                before_ms + ms(t),
                changes.files.len()
            );
            std::thread::sleep(std::time::Duration::from_millis(60));
        }
        Ok(())
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("checkpoint bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Rewrites one file of a generated tree (a different one each round).
fn touch(project: &Path, round: usize) -> std::io::Result<()> {
    let i = (round * 7919) % 10_000;
    let path = project
        .join(format!("d{:03}", i / 100))
        .join(format!("f{i:05}.dat"));
    std::fs::write(path, format!("round {round}: edited\n"))
}

/// A deterministic tree: `files` files, `bytes` in all.
fn generate(dir: &std::path::Path, files: u64, bytes: u64) -> std::io::Result<()> {
    let mean = bytes / files.max(1);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..files {
        let sub = dir.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&sub)?;
        // Sizes from mean/2 to 3*mean/2.
        let size = (mean / 2 + next() % mean.max(1)) as usize;
        let mut content = Vec::with_capacity(size);
        if i % 2 == 0 {
            let mut line = 0u64;
            while content.len() < size {
                content.extend_from_slice(
                    format!("line {line} of file {i}: value = {}\n", next() % 100_000).as_bytes(),
                );
                line += 1;
            }
        } else {
            while content.len() < size {
                content.extend_from_slice(&next().to_le_bytes());
            }
        }
        content.truncate(size);
        std::fs::write(sub.join(format!("f{i:05}.dat")), content)?;
    }
    Ok(())
}
