//! A directory is swapped for a symlink to the canary folder (and back) while operations run:
//! no result may contain canary content or outside names, and nothing outside may change.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aibuddy_sandbox::*;
use common::{CANARY, layout};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_swapped_in_while_operations_run() {
    let l = layout();
    std::fs::write(l.outside.join("x.txt"), format!("{CANARY} x\n")).unwrap();
    let swap = l.root.join("swap");
    let real = l.root.join("swap_real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("x.txt"), "INSIDE x\n").unwrap();
    let before = l.snapshot_outside();

    // Swapper: `swap` alternates between a real directory (renamed in) and an outside link.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (swap, real, outside) = (swap.clone(), real.clone(), l.outside.clone());
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(&real, &swap);
                std::thread::yield_now();
                let _ = std::fs::rename(&swap, &real);
                let _ = std::os::unix::fs::symlink(&outside, &swap);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&swap);
                flips += 1;
            }
            flips
        })
    };

    let sb = l.sandbox();
    let c = CancellationToken::new;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut ops = 0u64;
    let mut seen_inside = 0u64;
    while Instant::now() < deadline {
        let results: Vec<String> = vec![
            sb.read(
                ReadRequest {
                    path: "swap/x.txt".into(),
                    ..Default::default()
                },
                c(),
            )
            .await
            .map(|r| serde_json::to_string(&r).unwrap())
            .unwrap_or_default(),
            sb.list(
                ListRequest {
                    path: Some("swap".into()),
                    limit: None,
                },
                c(),
            )
            .await
            .map(|r| serde_json::to_string(&r).unwrap())
            .unwrap_or_default(),
            sb.grep(
                GrepRequest {
                    pattern: "CANARY|INSIDE".into(),
                    ..Default::default()
                },
                c(),
            )
            .await
            .map(|r| serde_json::to_string(&r).unwrap())
            .unwrap_or_default(),
            sb.grep(
                GrepRequest {
                    pattern: "x".into(),
                    path: Some("swap".into()),
                    ..Default::default()
                },
                c(),
            )
            .await
            .map(|r| serde_json::to_string(&r).unwrap())
            .unwrap_or_default(),
            sb.glob(
                GlobRequest {
                    pattern: "**/*.txt".into(),
                    ..Default::default()
                },
                c(),
            )
            .await
            .map(|r| {
                // Names that exist only in the canary folder must never be listed.
                for e in &r.entries {
                    assert!(
                        !e.ends_with("secret.txt") && !e.ends_with("inner.txt"),
                        "glob listed an outside name: {e}"
                    );
                }
                serde_json::to_string(&r).unwrap()
            })
            .unwrap_or_default(),
            sb.write(
                WriteRequest {
                    path: "swap/new.txt".into(),
                    content: "written\n".into(),
                    expect: None,
                },
                c(),
            )
            .await
            .map(|r| serde_json::to_string(&r).unwrap())
            .unwrap_or_default(),
        ];
        assert!(
            !results[1].contains("secret.txt") && !results[1].contains("\"dir\""),
            "ls listed outside names: {}",
            results[1]
        );
        for r in &results {
            assert!(!r.contains(CANARY), "canary leaked: {r}");
            if r.contains("INSIDE") {
                seen_inside += 1;
            }
        }
        ops += results.len() as u64;
    }
    stop.store(true, Ordering::Relaxed);
    let flips = swapper.join().unwrap();
    let _ = std::fs::remove_file(&swap);
    // `before` was taken after x.txt was written, so the test itself creates nothing outside
    // from here on: any new, changed or removed entry outside the root (a stray write, a
    // leftover temp file) fails.
    let after = l.snapshot_outside();
    assert!(
        !l.outside.join("new.txt").exists(),
        "a write landed outside the root"
    );
    pretty_assertions::assert_eq!(before, after);
    assert!(flips > 10, "the swapper only flipped {flips} times");
    assert!(ops > 20, "only {ops} operations ran");
    eprintln!("ops={ops} flips={flips} inside_hits={seen_inside}");
}
