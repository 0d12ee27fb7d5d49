//! The benchmark driver of `benches/checkpoint_bench.sh`: snapshots of a project, timed.
//!
//! `aibuddy-checkpoint-bench DATA_DIR PROJECT N`: the first snapshot (fresh store), then `N`
//! snapshots with nothing changed; prints `first_ms=<ms>` and `unchanged_ms=<ms>` lines, one
//! per snapshot, on stdout.
//! `aibuddy-checkpoint-bench gen DIR FILES BYTES`: writes a tree of `FILES` files of `BYTES` in
//! all (100 per folder, sizes spread around the mean, half text, half pseudo-random bytes).

use std::path::PathBuf;
use std::time::Instant;

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
    if args.len() != 4 {
        eprintln!("usage: aibuddy-checkpoint-bench DATA_DIR PROJECT N");
        return std::process::ExitCode::from(2);
    }
    let data = PathBuf::from(&args[1]);
    let project = PathBuf::from(&args[2]);
    let n: usize = args[3].parse().unwrap_or(20);
    let run = || -> aibuddy_checkpoint::Result<()> {
        let t = Instant::now();
        let store = aibuddy_checkpoint::CheckpointStore::open(
            &data,
            &project,
            aibuddy_checkpoint::SnapshotOptions::default(),
        )?;
        let s = store.snapshot()?;
        println!(
            "first_ms={:.2} entries={} read={}",
            t.elapsed().as_secs_f64() * 1000.0,
            s.stats.entries,
            s.stats.read
        );
        for _ in 0..n {
            // A fresh store each time, as each `aibuddy call` process opens one: the stat cache
            // comes from HEAD on disk.
            let t = Instant::now();
            let store = aibuddy_checkpoint::CheckpointStore::open(
                &data,
                &project,
                aibuddy_checkpoint::SnapshotOptions::default(),
            )?;
            let s = store.snapshot()?;
            println!(
                "unchanged_ms={:.2} read={}",
                t.elapsed().as_secs_f64() * 1000.0,
                s.stats.read
            );
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
