//! Issue 25, background processes and the recoverable cut middle, through the real `aibuddy run`
//! against the scripted fake provider: `execute` with `"background": true` returns at once with a
//! process id; `process_input`, `process_output` (with a bounded wait) and `process_list` reach
//! it; an unknown id is a Parameters error; the run's end stops it and the CLI says so; its
//! complete output is stored as a call of its own; `kill -9` of the app leaves no process behind.
//! A cut `execute` output names the omitted byte range and `view_tool_call` reads it by the
//! model's own call id.

use crate::support;

use support::cli_run::CliRun;

use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::{Value, json};

const K: ProviderKind = ProviderKind::Anthropic;

async fn fx() -> CliRun {
    CliRun::start(K).await
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn model(v: &Value) -> &str {
    v["model"].as_str().unwrap_or_default()
}

async fn gone_within(marker: &str, max: Duration) -> bool {
    let until = Instant::now() + max;
    while Instant::now() < until {
        if support::processes_with(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    support::processes_with(marker).is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_takes_input_shows_output_and_is_stopped_at_the_end_of_the_run() {
    let f = fx().await;
    // A marker no other process has: its sleep must not outlive the run.
    let marker = format!("4{}.{}", std::process::id() % 10, std::process::id());
    let command = format!("read line; echo got:$line; sleep {marker}");
    f.server.push(
        Turn::text("Starting it.")
            .call(
                "toolu_b1",
                "execute",
                json!({"command": command, "background": true, "description": "a server"}),
            )
            .reply(K),
    );
    f.server.push(
        Turn::text("Saying hello.")
            .call(
                "toolu_b2",
                "process_input",
                json!({"process_id": "bg1", "input": "hello\n"}),
            )
            .reply(K),
    );
    f.server.push(
        Turn::text("Reading.")
            .call(
                "toolu_b3",
                "process_output",
                json!({"process_id": "bg1", "wait_ms": 10000}),
            )
            .reply(K),
    );
    f.server.push(
        Turn::text("Checking.")
            .call("toolu_b4", "process_output", json!({"process_id": "bg99"}))
            .call("toolu_b5", "process_list", json!({}))
            .reply(K),
    );
    f.server.push(Turn::text("Done.").reply(K));
    let started = Instant::now();
    let (code, ev, err) = f
        .events(&["run", "--json", "--yes", "start the server"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the run waited for the process: {:?}",
        started.elapsed()
    );
    let r = results(&ev);
    assert_eq!(r.len(), 5, "{ev:?}");
    assert_eq!(r[0]["status"], "ok", "{}", r[0]);
    assert!(
        model(r[0]).starts_with(&format!("started background process bg1: {command}")),
        "{}",
        model(r[0])
    );
    assert_eq!(r[1]["status"], "ok", "{}", r[1]);
    assert!(model(r[1]).contains("wrote 6 bytes to the stdin of process bg1"));
    assert_eq!(r[2]["status"], "ok", "{}", r[2]);
    let out = model(r[2]);
    assert!(out.starts_with("process bg1: running"), "{out}");
    assert!(
        out.ends_with("new output (bytes 0..10):\ngot:hello\n"),
        "{out}"
    );
    assert_eq!(r[3]["status"], "error");
    assert_eq!(r[3]["stage"], "Parameters", "{}", r[3]);
    assert!(model(r[3]).contains("no background process has the id `bg99`"));
    assert!(
        model(r[4]).starts_with("process bg1: running"),
        "{}",
        model(r[4])
    );
    assert!(
        err.contains(&format!(
            "aibuddy: stopped background process bg1 at the end of the run: {command}"
        )),
        "{err}"
    );
    assert!(
        gone_within(&marker, Duration::from_secs(2)).await,
        "the background process outlived the CLI"
    );
    f.server.assert_clean();

    // Its complete output is stored as a call of its own, named in the start's text.
    let run_id = ev[0]["run_id"].as_str().unwrap();
    let own = model(r[0])
        .split("stored as tool call \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the output's call id");
    assert!(own.starts_with("bg1."), "{own}");
    let reader = aibuddy_store::Reader::open(&f.data).unwrap();
    let stored = format!("{run_id}:{own}");
    let rec = reader
        .get_call(&stored)
        .unwrap()
        .expect("the process's record");
    assert_eq!(rec.tool, "execute");
    assert_eq!(rec.status.as_str(), "cancelled");
    let raw = reader.read_raw_slice(&stored, 0, 1000).unwrap();
    assert_eq!(String::from_utf8_lossy(&raw.bytes), "got:hello\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_timeout_ends_the_process_and_process_output_says_so() {
    let f = fx().await;
    f.server.push(
        Turn::text("Starting it.")
            .call(
                "toolu_t1",
                "execute",
                json!({"command": "echo up; sleep 30", "background": true, "timeout_ms": 300}),
            )
            .reply(K),
    );
    for (i, wait) in [(2, 10_000), (3, 10_000)] {
        f.server.push(
            Turn::text("Reading.")
                .call(
                    &format!("toolu_t{i}"),
                    "process_output",
                    json!({"process_id": "bg1", "wait_ms": wait}),
                )
                .reply(K),
        );
    }
    f.server.push(
        Turn::text("Stopping.")
            .call("toolu_t4", "process_stop", json!({"process_id": "bg1"}))
            .reply(K),
    );
    f.server.push(Turn::text("Done.").reply(K));
    let started = Instant::now();
    let (code, ev, err) = f.events(&["run", "--json", "--yes", "start it"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(started.elapsed() < Duration::from_secs(25));
    let r = results(&ev);
    assert_eq!(r.len(), 4, "{ev:?}");
    assert!(
        model(r[0]).contains("it is ended after 300 ms"),
        "{}",
        model(r[0])
    );
    assert!(model(r[1]).ends_with("up\n"), "{}", model(r[1]));
    // The second read waits for the end: the timeout ended it.
    assert!(
        model(r[2]).starts_with("process bg1: ended (timed out, "),
        "{}",
        model(r[2])
    );
    let stop = model(r[3]);
    assert!(
        stop.starts_with("it had already ended: process bg1: ended (timed out, "),
        "{stop}"
    );
    assert!(
        stop.contains(
            "note: files it changed after its execute call returned are in no call's change set"
        ),
        "{stop}"
    );
    // Nothing was left to stop at the end of the run.
    assert!(!err.contains("stopped background process"), "{err}");
    f.server.assert_clean();
}

/// Starts `aibuddy run` whose model starts `sleep MARKER` in the background and then waits for
/// its output (60 s; the process writes nothing), and returns once the process runs and the run
/// waits in `process_output`: the app (its output as `stdio` makes it) and the marker. `digit`
/// keeps the marker apart from other tests' (no other process has it).
async fn run_waiting_on_a_background_sleep(
    f: &CliRun,
    digit: u32,
    stdio: fn() -> std::process::Stdio,
) -> (tokio::process::Child, String) {
    let marker = format!("{digit}{}.{}", std::process::id() % 10, std::process::id());
    f.server.push(
        Turn::text("Starting it.")
            .call(
                "toolu_w1",
                "execute",
                json!({"command": format!("sleep {marker}"), "background": true}),
            )
            .reply(K),
    );
    f.server.push(
        Turn::text("Waiting.")
            .call(
                "toolu_w2",
                "process_output",
                json!({"process_id": "bg1", "wait_ms": 60000}),
            )
            .reply(K),
    );
    f.server.push(Turn::text("Done.").reply(K));
    let child = f
        .command(&["run", "--json", "--yes", "start it"])
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while support::processes_with(&marker).is_empty() {
        assert!(
            Instant::now() < until,
            "the background process never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The run waits in process_output now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    (child, marker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_app_leaves_no_background_process() {
    let f = fx().await;
    let (mut child, marker) =
        run_waiting_on_a_background_sleep(&f, 5, std::process::Stdio::null).await;
    // The app dies without any clean-up.
    let pid = child.id().unwrap() as i32;
    // SAFETY: kill with a pid this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let _ = child.wait().await;
    assert!(
        gone_within(&marker, Duration::from_secs(5)).await,
        "a process outlived kill -9 of the app: {:?}",
        support::processes_with(&marker)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_run_and_its_background_processes_and_says_so() {
    let f = fx().await;
    let (child, marker) =
        run_waiting_on_a_background_sleep(&f, 6, std::process::Stdio::piped).await;
    // Ctrl-C ends the run.
    let pid = child.id().unwrap() as i32;
    // SAFETY: a signal to a pid this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("aibuddy ended after Ctrl-C")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("aibuddy: stopped background process bg1 at the end of the run"),
        "{err}"
    );
    assert!(
        gone_within(&marker, Duration::from_secs(2)).await,
        "the background process outlived the stopped run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_output_names_its_omitted_range_and_the_model_reads_it_by_its_own_call_id() {
    let f = fx().await;
    let full: String = (1..=60000).map(|i| format!("{i}\n")).collect();
    let probe = 170_000usize;
    f.server.push(
        Turn::text("Counting.")
            .call("toolu_big", "execute", json!({"command": "seq 1 60000"}))
            .reply(K),
    );
    f.server.push(
        Turn::text("Reading the middle.")
            .call(
                "toolu_view",
                "view_tool_call",
                json!({"tool_call_id": "toolu_big", "offset": probe, "limit": 200}),
            )
            .reply(K),
    );
    f.server.push(Turn::text("Done.").reply(K));
    let (code, ev, err) = f.events(&["run", "--json", "--yes", "count"]).await;
    assert_eq!(code, 0, "{err}");
    let r = results(&ev);
    assert_eq!(r.len(), 2, "{ev:?}");
    let cut = model(r[0]);
    let omitted = r[0]["omitted_bytes"].as_u64().expect("the output was cut");
    let from: u64 = cut
        .split("view_tool_call {\"tool_call_id\": \"toolu_big\", \"offset\": ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no recovery pointer in: {}", &cut[cut.len() - 600..]));
    assert!(
        cut.contains(&format!(
            "omitted: output bytes {from}..{} are not shown",
            from + omitted
        )),
        "{}",
        &cut[cut.len() - 600..]
    );
    // The probe lies in the omitted middle: the cut text does not have it, the page does.
    assert!(from < probe as u64 && (probe as u64) < from + omitted);
    let line_at_probe = &full[probe..probe + 200];
    let whole_line = line_at_probe.lines().nth(1).unwrap();
    assert!(!cut.contains(&format!("\n{whole_line}\n")), "{whole_line}");
    assert_eq!(r[1]["status"], "ok", "{}", r[1]);
    let page = model(r[1]);
    assert!(page.contains(line_at_probe), "{page}");
    assert!(
        page.contains(&format!("raw output bytes {probe}..{}", probe + 200)),
        "{page}"
    );
    f.server.assert_clean();
}

/// The table's rules, on the real type: an unknown id is a Parameters error, another run's
/// process an Authorization error, and a run has at most `MAX_LIVE_PER_RUN` running.
#[test]
fn processes_are_reachable_from_their_own_run_only_and_bounded_per_run() {
    use aibuddy::contract::Stage;
    use aibuddy::tools::process::{MAX_LIVE_PER_RUN, Proc, Processes};
    use std::sync::Arc;
    let table = Processes::default();
    let proc = |run: &str| {
        let id = table.next_id();
        Arc::new(Proc::new(
            id,
            run.into(),
            "c".into(),
            None,
            "sleep 1".into(),
        ))
    };
    let a = proc("runA");
    table.insert(a.clone()).unwrap();
    assert_eq!(a.id, "bg1");
    assert!(Arc::ptr_eq(&table.get("bg1", "runA").unwrap(), &a));
    assert_eq!(
        table.get("bg1", "runB").unwrap_err().stage,
        Stage::Authorization
    );
    assert_eq!(
        table.get("bg7", "runA").unwrap_err().stage,
        Stage::Parameters
    );
    for _ in 1..MAX_LIVE_PER_RUN {
        table.insert(proc("runA")).unwrap();
    }
    let over = table.insert(proc("runA")).unwrap_err();
    assert_eq!(over.code, "process_limit");
    // Another run is not limited by this one's processes.
    table.insert(proc("runB")).unwrap();
    assert_eq!(table.of_run("runA").len(), MAX_LIVE_PER_RUN);
}

#[test]
fn the_model_names_a_call_by_its_own_id_when_the_stored_one_is_run_scoped() {
    use aibuddy::tools::view_tool_call::model_call_id;
    assert_eq!(model_call_id("01RUN", "01RUN:toolu_1"), "toolu_1");
    assert_eq!(model_call_id("01RUN", "01OTHER:toolu_1"), "01OTHER:toolu_1");
    assert_eq!(model_call_id("", ":x"), ":x");
    let long = "x".repeat(200);
    let stored = aibuddy_store::scoped_call_id("01RUN", &long);
    // Whatever form is named, view_tool_call's run-scoped lookup finds the stored call again.
    let named = model_call_id("01RUN", &stored);
    assert_eq!(aibuddy_store::scoped_call_id("01RUN", &named), stored);
}

#[test]
fn aibuddy_call_stops_its_background_process_when_it_exits_and_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("p"), base.join("d"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let marker = format!("7{}.{}", std::process::id() % 10, std::process::id());
    let args =
        json!({"command": format!("echo hi; sleep {marker}"), "background": true}).to_string();
    let out = support::aibuddy_output(&project, &data, &["call", "execute", &args, "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "aibuddy: stopped background process bg1 at the end of the run: echo hi; sleep {marker}"
        )),
        "{err}"
    );
    assert!(
        support::processes_with(&marker).is_empty(),
        "the process outlived `aibuddy call`"
    );
    // Its record is final (cancelled by the stop), not left running for the next open.
    let reader = aibuddy_store::Reader::open(&data).unwrap();
    let rows = reader.history(&Default::default()).unwrap();
    let own = rows
        .iter()
        .find(|r| r.tool_call_id.contains(":bg1."))
        .expect("the process's record");
    assert_eq!(own.status.as_str(), "cancelled", "{own:?}");
}
