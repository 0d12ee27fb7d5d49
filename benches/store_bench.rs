//! Store benchmark (not part of `make test`; run `bash benches/store_bench.sh`). Prints, in one
//! run, side by side:
//! 1. per-call overhead of the whole pipeline (lookup, validation, projections, persistence:
//!    `running` row + committed finish) for a trivial tool, against a bare rusqlite INSERT of the
//!    same finished row into the same WAL database (target: at most 2x);
//! 2. a history page and FTS searches over 100,000 stored calls (targets: < 10 ms, < 50 ms);
//! 3. recovery of a 10 MB raw output by id.
//!
//! Ratios are against baselines measured in the same run; nothing here is asserted.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy::confirm::ApproveAll;
use aibuddy::contract::{DefineError, ToolError, define_tool};
use aibuddy::discovery::{self, HostCaps};
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::{CallRequest, Runner};
use aibuddy::registry::{
    CallContext, RawOutput, Registry, Risk, Source, ToolConfig, ToolConfigMeta, ToolDef,
    ToolHandler,
};
use aibuddy::results::Persistence;
use aibuddy::services::Services;
use aibuddy::settings::Settings;
use aibuddy_store::rusqlite::params;
use aibuddy_store::{CallFinish, CallStart, HistoryFilter, Store, open_connection};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Echo;

#[async_trait]
impl ToolHandler for Echo {
    async fn run(&self, _ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        Ok(RawOutput::json(json!({"echo": args["text"]})))
    }
}

struct EchoConfig;

impl ToolConfig for EchoConfig {
    fn key(&self) -> &str {
        "bench"
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        Ok(vec![ToolDef {
            spec: define_tool(
                "echo",
                "echo",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(Echo),
        }])
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

const CALLS: usize = 2_000;

async fn per_call_overhead(dir: &std::path::Path) {
    let registry = Arc::new(
        Registry::build(
            vec![Arc::new(EchoConfig)],
            vec![ToolConfigMeta::fixed(
                "bench",
                "Bench",
                "test",
                Risk::ReadOnly,
                false,
                &["echo"],
            )],
        )
        .expect("consistent"),
    );
    let data = dir.join("calls");
    let p = Persistence::open(&data, dir, None).await.expect("store");
    let mut settings = Settings::default();
    settings.tools.enabled.push("bench".into());
    let runner = Runner {
        run_id: "run_bench".into(),
        registry: registry.clone(),
        services: Arc::new(Services {
            project_root: dir.to_path_buf(),
            data_dir: data.clone(),
            settings,
            sandbox: Err("none".into()),
            session_rules: Default::default(),
            processes: Default::default(),
        }),
        broker: Arc::new(ApproveAll),
        recorder: p.call_recorder(),
        after_call: Some(p.after_call()),
        sandbox_kind: "local".into(),
        checkpoints: None,
    };
    let toolset = discovery::effective(
        &registry,
        &runner.services.settings,
        &HostCaps::default(),
        &BTreeSet::new(),
    );
    let call = |i: usize| CallRequest {
        id: None,
        name: "echo".into(),
        arguments: json!({"text": format!("hello {i}")}).to_string(),
    };
    // Warm up.
    for i in 0..50 {
        runner
            .call(
                &toolset,
                call(i),
                CancellationToken::new(),
                Arc::new(NullSink),
            )
            .await;
    }
    // The baselines: the same finished row, one bare INSERT (its own transaction), same file.
    let conn = open_connection(&data).expect("conn");
    let insert = |conn: &aibuddy_store::rusqlite::Connection, i: usize| {
        let input = json!({"text": format!("hello {i}")}).to_string();
        let raw = json!({"echo": format!("hello {i}")}).to_string();
        conn.prepare_cached(
            "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at, finished_at,
                duration_ms, input, raw_output, raw_output_len, raw_output_format, model_projection,
                client_projection, display_text)
             VALUES (?1, 'run_bench', 'echo', 'bench', 'ok', ?2, ?2, 0, ?3, ?4, ?5, 'json', ?4, ?4, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![
                format!("base_{}", aibuddy_store::new_id()),
                aibuddy_store::now_ms(),
                input,
                raw.as_bytes(),
                raw.len() as i64,
                format!("hello {i}")
            ])
        })
        .expect("insert");
    };
    // Interleaved, one of each per round, so disk and CPU noise from other work on the machine
    // hits all four alike; medians are compared.
    let (mut t_pipe, mut t_store, mut t_full, mut t_normal) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..CALLS {
        let t = Instant::now();
        let out = runner
            .call(
                &toolset,
                call(i),
                CancellationToken::new(),
                Arc::new(NullSink),
            )
            .await;
        t_pipe.push(t.elapsed());
        assert_eq!(out.status, CallStatus::Ok);

        let id = format!("store_{}", aibuddy_store::new_id());
        let t = Instant::now();
        p.store
            .begin_call(CallStart {
                tool_call_id: id.clone(),
                run_id: "run_bench".into(),
                project_root: None,
                tool: "echo".into(),
                config: "bench".into(),
                input: json!({"text": format!("hello {i}")}).to_string(),
                started_at_ms: None,
            })
            .await
            .expect("begin");
        let mut fin = CallFinish::new(&id, aibuddy_store::CallStatus::Ok);
        fin.raw_output = json!({"echo": format!("hello {i}")})
            .to_string()
            .into_bytes();
        fin.model_projection = Some(format!("hello {i}"));
        p.store.finish_call(fin).await.expect("finish");
        t_store.push(t.elapsed());

        conn.pragma_update(None, "synchronous", "FULL")
            .expect("pragma");
        let t = Instant::now();
        insert(&conn, i);
        t_full.push(t.elapsed());
        conn.pragma_update(None, "synchronous", "NORMAL")
            .expect("pragma");
        let t = Instant::now();
        insert(&conn, i);
        t_normal.push(t.elapsed());
    }
    let pipeline = median(t_pipe);
    let store_only = median(t_store);
    let base = [("FULL", median(t_full)), ("NORMAL", median(t_normal))];
    println!(
        "1. per-call overhead (median of {CALLS} interleaved rounds, trivial tool, ext4 data dir)"
    );
    println!(
        "   pipeline (lookup, validation, projections, running row + durable finish): {}",
        us(pipeline)
    );
    println!(
        "   of which the store (begin_call + finish_call alone)                     : {}",
        us(store_only)
    );
    for (sync, d) in &base {
        println!(
            "   bare INSERT of the same row, synchronous={sync:<6}: {}   pipeline/baseline = {:.2}x",
            us(*d),
            pipeline.as_secs_f64() / d.as_secs_f64()
        );
    }
}

async fn history_and_search(dir: &std::path::Path) {
    let data = dir.join("hist");
    drop(Store::open(&data).expect("store"));
    let n = 100_000;
    {
        let mut conn = open_connection(&data).expect("conn");
        let tx = conn.transaction().expect("tx");
        let tools = ["read_file", "grep", "execute", "write_file", "ls", "glob"];
        let words = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
        ];
        tx.execute(
            "INSERT INTO runs (run_id, started_at) VALUES ('run_hist', 0)",
            [],
        )
        .expect("run");
        {
            let mut s = tx
                .prepare(
                    "INSERT INTO tool_calls (tool_call_id, run_id, tool, config, status, started_at,
                        finished_at, duration_ms, input, raw_output, raw_output_len, raw_output_format,
                        model_projection, display_text)
                     VALUES (?1, 'run_hist', ?2, 'cfg', ?3, ?4, ?4, 3, ?5, ?6, ?7, 'text', ?6, ?8)",
                )
                .expect("prepare");
            for i in 0..n {
                let tool = tools[i % tools.len()];
                let w = words[i % words.len()];
                let input = json!({"path": format!("src/module_{i}/{w}.rs"), "pattern": format!("{w} {}", i % 97)})
                    .to_string();
                let out = format!("{w} result of call {i}");
                let status = if i % 50 == 0 { "error" } else { "ok" };
                s.execute(params![
                    format!("call_{i:08}"),
                    tool,
                    status,
                    1_700_000_000_000i64 + i as i64,
                    input,
                    out.as_bytes(),
                    out.len() as i64,
                    format!("{tool} {w} call {i}")
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let store = Store::open(&data).expect("store");
    let runs = 30;
    let time = async |f: HistoryFilter| {
        let mut v = Vec::new();
        let mut rows = 0;
        for _ in 0..runs {
            let t = Instant::now();
            rows = store.history(f.clone()).await.expect("history").len();
            v.push(t.elapsed());
        }
        (median(v), rows)
    };
    let page = HistoryFilter {
        limit: Some(50),
        ..Default::default()
    };
    let (d_page, r_page) = time(page).await;
    let (d_deep, r_deep) = time(HistoryFilter {
        limit: Some(50),
        before: Some("call_00050000".into()),
        ..Default::default()
    })
    .await;
    let (d_tool, r_tool) = time(HistoryFilter {
        limit: Some(50),
        tool: Some("grep".into()),
        ..Default::default()
    })
    .await;
    let (d_status, r_status) = time(HistoryFilter {
        limit: Some(50),
        status: Some(aibuddy_store::CallStatus::Error),
        ..Default::default()
    })
    .await;
    let search = |s: &str| HistoryFilter {
        limit: Some(50),
        search: Some(s.into()),
        ..Default::default()
    };
    let (d_common, r_common) = time(search("alpha")).await;
    let (d_rare, r_rare) = time(search("module_4242")).await;
    let (d_two, r_two) = time(search("grep hotel")).await;
    let (d_filtered, r_filtered) = time(HistoryFilter {
        limit: Some(50),
        search: Some("delta".into()),
        tool: Some("execute".into()),
        ..Default::default()
    })
    .await;
    println!(
        "2. history and search over {n} stored calls (median of {runs}, through Store: reader thread + SQL)"
    );
    println!(
        "   history page (newest 50)                : {} ({r_page} rows)   target < 10 ms",
        ms(d_page)
    );
    println!(
        "   history page in the middle (--before)   : {} ({r_deep} rows)",
        ms(d_deep)
    );
    println!(
        "   history --tool grep                     : {} ({r_tool} rows)",
        ms(d_tool)
    );
    println!(
        "   history --status error                  : {} ({r_status} rows)",
        ms(d_status)
    );
    println!(
        "   search 'alpha' (12,500 matches)         : {} ({r_common} rows)   target < 50 ms",
        ms(d_common)
    );
    println!(
        "   search 'module_4242' (1 match)          : {} ({r_rare} rows)",
        ms(d_rare)
    );
    println!(
        "   search 'grep hotel' (two terms)         : {} ({r_two} rows)",
        ms(d_two)
    );
    println!(
        "   search 'delta' + --tool execute         : {} ({r_filtered} rows)",
        ms(d_filtered)
    );
}

async fn recovery(dir: &std::path::Path) {
    let data = dir.join("big");
    let store = Store::open(&data).expect("store");
    let size = 10 * 1024 * 1024;
    let bytes: Vec<u8> = (0..size).map(|i| b"0123456789abcdef\n"[i % 17]).collect();
    store
        .begin_call(CallStart {
            tool_call_id: "call_big".into(),
            run_id: "run_big".into(),
            project_root: None,
            tool: "execute".into(),
            config: "execute".into(),
            input: "{}".into(),
            started_at_ms: None,
        })
        .await
        .expect("begin");
    let mut fin = CallFinish::new("call_big", aibuddy_store::CallStatus::Ok);
    fin.raw_output = bytes.clone();
    let t = Instant::now();
    store.finish_call(fin).await.expect("finish");
    let write = t.elapsed();
    let (mut whole, mut page, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        let s = store
            .read_raw_slice("call_big", 0, size as u64)
            .await
            .expect("read");
        whole.push(t.elapsed());
        assert_eq!(s.bytes.len(), size);
        drop(s);
        // Baseline: reading the same blob file directly.
        let t = Instant::now();
        let b = std::fs::read(data.join("blobs/call_big.bin")).expect("read");
        direct.push(t.elapsed());
        assert_eq!(b.len(), size);
        drop(b);
        let t = Instant::now();
        let s = store
            .read_raw_slice("call_big", 5_000_000, 20_000)
            .await
            .expect("read");
        page.push(t.elapsed());
        assert_eq!(s.bytes.len(), 20_000);
    }
    println!("3. a 10 MB raw output (blob file)");
    println!("   commit (finish_call, fsynced)           : {}", ms(write));
    println!(
        "   recover whole by id (read_raw_slice)    : {}   plain fs::read of the file: {}",
        ms(median(whole)),
        ms(median(direct))
    );
    println!(
        "   recover one 20 KB page at 5 MB by id    : {}",
        ms(median(page))
    );
}

#[tokio::main]
async fn main() {
    let root = std::env::var_os("STORE_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("aibuddy-store-bench"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("bench dir");
    per_call_overhead(&root).await;
    history_and_search(&root).await;
    recovery(&root).await;
    let _ = std::fs::remove_dir_all(&root);
}
