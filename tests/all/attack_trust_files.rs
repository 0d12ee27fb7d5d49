//! Red-team regression test of how the trust-relevant files are read. A command running in the
//! project (or one it left behind) swapped `.aibuddy/mcp.json` between a regular file and a FIFO:
//! the reader checked the type with `stat` and then opened the path, so a swap in between made
//! the open of the FIFO block forever, and `tools list`, `trust` or the desktop app hung on
//! opening the project. Now the file is opened non-blocking and its type checked on the open file.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aibuddy::trust::{FileContent, Snapshot};

#[test]
fn swapping_mcp_json_for_a_fifo_never_hangs_the_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let root: PathBuf = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    let target = root.join(".aibuddy/mcp.json");
    // The two things swapped in, prepared once; each swap is a hard link renamed over the target.
    let (file_src, fifo_src) = (root.join("file.json"), root.join("fifo"));
    std::fs::write(&file_src, r#"{"mcpServers": {}}"#).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo_src)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::hard_link(&file_src, &target).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, root, target) = (stop.clone(), root.clone(), target.clone());
        std::thread::spawn(move || {
            let tmp = root.join(".aibuddy/swap.tmp");
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for src in [&fifo_src, &file_src] {
                    let _ = std::fs::remove_file(&tmp);
                    std::fs::hard_link(src, &tmp).unwrap();
                    std::fs::rename(&tmp, &target).unwrap();
                    swaps += 1;
                }
            }
            swaps
        })
    };

    // The reader runs in its own thread: if an open blocks, the channel stays silent.
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_root = root.clone();
    std::thread::spawn(move || {
        let mut seen = (0u32, 0u32);
        // Until both kinds were read many times (the race is exercised), within a bound.
        for _ in 0..200_000 {
            if seen.0 >= 500 && seen.1 >= 500 {
                break;
            }
            match Snapshot::read(&reader_root).mcp.content {
                FileContent::Present(_) => seen.0 += 1,
                FileContent::Refused(_) => seen.1 += 1,
                FileContent::Absent => {}
            }
        }
        let _ = tx.send(seen);
    });
    // Generous: the reads take about a second on an idle machine.
    let result = rx.recv_timeout(Duration::from_secs(120));
    stop.store(true, Ordering::Relaxed);
    let (present, refused) =
        result.expect("a read of the trust files blocked on a swapped-in FIFO");
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert!(
        present > 0 && refused > 0,
        "both kinds were read ({present} present, {refused} refused): the race was exercised"
    );
}

/// The same attack made deterministic: the swap lands exactly between the type check and the open
/// (what the reader does after its check is run on a FIFO). It must answer at once, refusing it.
#[test]
fn a_fifo_swapped_in_after_the_type_check_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let root: PathBuf = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
    std::fs::create_dir_all(root.join(".aibuddy")).unwrap();
    let target = root.join(".aibuddy/mcp.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&target)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(aibuddy::trust::files::read_checked(&root, &target));
    });
    let content = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("opening the swapped-in FIFO blocked");
    assert_eq!(
        content,
        FileContent::Refused("is not a regular file".to_string())
    );
}
