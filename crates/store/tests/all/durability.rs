//! Durability with a real `kill -9`: a child process (`aibuddy-store-crashwriter`) writes calls
//! concurrently; it is killed at a random moment, the store is reopened, and
//! - every call the child reported FINISHED is there, `ok`, with its exact raw output;
//! - every call it reported BEGIN but not FINISHED is `ok` (finished but not yet reported) or
//!   `interrupted`, never `running`;
//! - the database passes `PRAGMA integrity_check`.
//!
//! Repeated over several rounds on the same data directory.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use aibuddy_store::{CallStatus, HistoryFilter, Store, open_connection};

fn expected_output(id: &str, len: usize) -> Vec<u8> {
    id.bytes().cycle().take(len).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_call_loses_nothing_reported_finished() {
    let dir = tempfile::tempdir().unwrap();
    let mut all_finished: HashMap<String, usize> = HashMap::new();
    let mut interrupted_total = 0;
    for round in 0..8u64 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aibuddy-store-crashwriter"))
            .arg(dir.path())
            .arg("4")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until the child has finished a few calls (load on the machine varies), then let it
        // run a varying while longer before the kill.
        let mut lines = Vec::new();
        let want = 3 + round as usize * 4;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while lines
            .iter()
            .filter(|l: &&String| l.starts_with("FINISHED"))
            .count()
            < want
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the child made no progress"
            );
            if let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) {
                lines.push(line);
            }
        }
        std::thread::sleep(Duration::from_millis(round * 7));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        lines.extend(rx.try_iter());

        let mut begun = HashSet::new();
        let mut finished = HashMap::new();
        for line in lines {
            if line == "READY" {
                continue;
            }
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["BEGIN", id] => {
                    begun.insert(id.to_string());
                }
                ["FINISHED", id, len] => {
                    finished.insert(id.to_string(), len.parse::<usize>().unwrap());
                }
                other => panic!("unexpected line {other:?}"),
            }
        }
        assert!(
            !finished.is_empty(),
            "round {round}: the child finished no call before the kill"
        );

        let store = Store::open(dir.path()).unwrap();
        for (id, len) in &finished {
            let rec = store
                .get_call(id)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{id} lost"));
            assert_eq!(rec.status, CallStatus::Ok, "{id}");
            let raw = store.read_raw_slice(id, 0, u64::MAX >> 1).await.unwrap();
            assert!(
                raw.bytes == expected_output(id, *len),
                "{id}: raw output differs"
            );
        }
        for id in begun.iter().filter(|id| !finished.contains_key(*id)) {
            let rec = store
                .get_call(id)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{id} lost"));
            assert!(
                matches!(rec.status, CallStatus::Ok | CallStatus::Interrupted),
                "{id} is {:?}",
                rec.status
            );
            if rec.status == CallStatus::Interrupted {
                interrupted_total += 1;
                // Whatever was spooled is attached, byte-exact.
                let raw = store.read_raw_slice(id, 0, u64::MAX >> 1).await.unwrap();
                assert_eq!(raw.partial, rec.raw_output_partial);
                assert!(
                    raw.bytes == expected_output(id, raw.bytes.len()),
                    "{id}: partial output differs"
                );
            }
        }
        let running = store
            .history(HistoryFilter {
                status: Some(CallStatus::Running),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            running.is_empty(),
            "round {round}: still running after reopen: {running:?}"
        );
        drop(store);
        let conn = open_connection(dir.path()).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        all_finished.extend(finished);
    }
    // Everything reported finished in any round is still there at the end.
    let store = Store::open(dir.path()).unwrap();
    for id in all_finished.keys() {
        assert_eq!(
            store.get_call(id).await.unwrap().unwrap().status,
            CallStatus::Ok
        );
    }
    eprintln!(
        "durability: {} finished calls checked, {} interrupted in flight",
        all_finished.len(),
        interrupted_total
    );
    assert!(interrupted_total > 0, "no kill landed mid-call in 8 rounds");
}
