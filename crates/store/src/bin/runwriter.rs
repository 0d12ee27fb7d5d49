//! Test helper for `tests/all/run_durability.rs`: drives an agent run's storage the way the run loop
//! does, step after step, until it is killed. Protocol on stdout, one flushed line each:
//! `RUN <run_id>` once the run exists, `STEP <n>` after step n's messages were appended.
//! A step: an assistant message (exact JSON text, usage, two requested calls), then for each call
//! `begin_call` / `finish_call` and its result message. A `kill -9` lands anywhere in between.
//!
//! Usage: aibuddy-store-runwriter DATA_DIR

use std::io::Write;

use aibuddy_store::{
    CallFinish, CallStart, CallStatus, NewMessage, NewRun, RequestedCall, Store, Usage,
};

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The exact assistant JSON text of step `n` (key order and spacing matter).
fn assistant_content(run: &str, n: u64) -> String {
    format!(
        r#"[{{"type":"text","text":"step {n} \u00e9"}}, {{"type":"tool_use","id":"toolu_{run}_{n}_a","name":"read_file","input":{{"z":1,"a":2}}}},{{"type":"tool_use","id":"toolu_{run}_{n}_b","name":"grep","input":{{}}}}]"#
    )
}

async fn step(store: &Store, run: &str, n: u64) -> Result<(), aibuddy_store::StoreError> {
    // Call ids are unique across runs (`tool_calls.tool_call_id` is), as provider ids are.
    let ids = [format!("toolu_{run}_{n}_a"), format!("toolu_{run}_{n}_b")];
    let calls = vec![
        RequestedCall {
            tool_call_id: ids[0].clone(),
            tool: "read_file".into(),
        },
        RequestedCall {
            tool_call_id: ids[1].clone(),
            tool: "grep".into(),
        },
    ];
    let usage = Usage {
        input_tokens: 100 + n as i64,
        output_tokens: 10,
        cache_read_tokens: 5,
        cache_write_tokens: 1,
    };
    store
        .append_message(
            run,
            NewMessage::assistant("anthropic", assistant_content(run, n), Some(usage), calls),
        )
        .await?;
    for id in &ids {
        store
            .begin_call(CallStart {
                tool_call_id: id.clone(),
                run_id: run.to_string(),
                project_root: None,
                tool: "read_file".into(),
                config: "fs".into(),
                input: "{}".into(),
                started_at_ms: None,
            })
            .await?;
        let mut fin = CallFinish::new(id, CallStatus::Ok);
        fin.model_projection = Some(format!("result of {id}"));
        store.finish_call(fin).await?;
        store
            .append_message(run, NewMessage::tool_result(id))
            .await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: aibuddy-store-runwriter DATA_DIR");
        std::process::exit(2);
    };
    let store = match Store::open(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    let run = match store
        .create_run(NewRun {
            run_id: None,
            title: Some("durability".into()),
            provider: "anthropic".into(),
            model: "test-model".into(),
            presentation: "native".into(),
            project_root: Some("/tmp/run-project".into()),
        })
        .await
    {
        Ok(id) => id,
        Err(e) => {
            eprintln!("create_run failed: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = store
        .append_message(&run, NewMessage::user_text("go"))
        .await
    {
        eprintln!("append failed: {e}");
        std::process::exit(1);
    }
    say(&format!("RUN {run}"));
    for n in 1.. {
        if let Err(e) = step(&store, &run, n).await {
            eprintln!("step {n} failed: {e}");
            std::process::exit(1);
        }
        say(&format!("STEP {n}"));
    }
}
