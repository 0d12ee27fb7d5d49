//! Test helper for the durability test (`tests/all/durability.rs`): writes tool calls forever,
//! `TASKS` at a time, until it is killed. Protocol on stdout, one line each, flushed:
//! `BEGIN <id>` after `begin_call` returned, `FINISHED <id> <len>` after `finish_call` returned.
//! The raw output of a call is `expected_output(id, len)`: the id repeated to `len` bytes, so the
//! test can check the bytes without having seen them.
//!
//! Usage: aibuddy-store-crashwriter DATA_DIR [TASKS]

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use aibuddy_store::{CallFinish, CallStart, CallStatus, Store, new_id};

fn expected_output(id: &str, len: usize) -> Vec<u8> {
    id.bytes().cycle().take(len).collect()
}

/// Output sizes spread over inline and blob storage (the last id character picks one).
fn size_for(id: &str) -> usize {
    match id.bytes().last().unwrap_or(0) % 4 {
        0 => 0,
        1 => 300,
        2 => 20 * 1024,
        _ => 200 * 1024,
    }
}

fn say(out: &std::sync::Mutex<std::io::Stdout>, line: &str) {
    let out = out.lock().unwrap_or_else(|p| p.into_inner());
    let mut lock = out.lock();
    let _ = writeln!(lock, "{line}");
    let _ = lock.flush();
}

async fn one_call(store: &Store, out: &std::sync::Mutex<std::io::Stdout>, run: &str) {
    let id = new_id();
    let start = CallStart {
        tool_call_id: id.clone(),
        run_id: run.to_string(),
        project_root: Some("/tmp/crash-project".into()),
        tool: "echo".into(),
        config: "test".into(),
        input: format!("{{\"text\":\"call {id}\"}}"),
        started_at_ms: None,
    };
    if let Err(e) = store.begin_call(start).await {
        eprintln!("begin failed: {e}");
        return;
    }
    say(out, &format!("BEGIN {id}"));
    let len = size_for(&id);
    let bytes = expected_output(&id, len);
    if let Ok(mut spool) = store.spool(&id) {
        let half = len / 2;
        let _ = spool.append(&bytes[..half]);
    }
    tokio::time::sleep(Duration::from_millis(u64::from(id.as_bytes()[25] % 5))).await;
    let mut fin = CallFinish::new(&id, CallStatus::Ok);
    fin.raw_output = bytes;
    fin.model_projection = Some(format!("output of {id}"));
    fin.display_text = Some(format!("echo {id}"));
    match store.finish_call(fin).await {
        Ok(()) => say(out, &format!("FINISHED {id} {len}")),
        Err(e) => eprintln!("finish failed: {e}"),
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: aibuddy-store-crashwriter DATA_DIR [TASKS]");
        std::process::exit(2);
    };
    let tasks: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(4);
    let store = match Store::open(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    say(&std::sync::Mutex::new(std::io::stdout()), "READY");
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let run = new_id();
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (store, out, run) = (store.clone(), out.clone(), run.clone());
        handles.push(tokio::spawn(async move {
            loop {
                one_call(&store, &out, &run).await;
            }
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}
