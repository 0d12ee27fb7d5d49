//! Peak RSS of the `aibuddy` process itself (its `VmHWM`, read from `/proc/PID/status` every
//! 5 ms until it exits) over `aibuddy run --json --yes` with 50 tool steps, one of which prints
//! 50 MB (`head -c 50000000 /dev/urandom | base64`, about 67 MB of text streamed live as
//! `tool_output` events), against a one-step text run measured in the same run, both with the 7
//! real MCP servers configured (they connect in the background and are never searched). Goal
//! <= 64 MiB. Not `/usr/bin/time -f %M`: its figure is the largest process of the tree, which with
//! MCP servers is one of the servers (node or python, 60-80 MiB each), not aibuddy.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::json;

use crate::common::{load, project, real_servers, tools_dir, verdict};

const STEPS: usize = 50;
const BIG_STEP: usize = 25;
const BIG: &str = "head -c 50000000 /dev/urandom | base64";
const GOAL_MIB: f64 = 64.0;

/// `VmHWM` of a live process, in KiB.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Peak RSS in KiB of one `aibuddy run` over `turns`, and the requests the provider received.
async fn peak_rss(bin: &Path, turns: &[Turn], tools: &Path) -> Result<(u64, usize), String> {
    let p = project();
    p.write_data("mcp.json", &real_servers(tools, p.tmp.path()));
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    for t in turns {
        server.push(t.reply(ProviderKind::OpenAiChat));
    }
    p.chat_settings(&server);
    let mut cmd = tokio::process::Command::from(
        p.cli(bin, &["run", "--json", "--yes", "--max-steps", "100", "go"]),
    );
    let stderr_path = p.tmp.path().join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).map_err(|e| e.to_string())?;
    cmd.stdout(Stdio::null())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("spawn aibuddy: {e}"))?;
    let pid = child.id().ok_or("aibuddy ended at once")?;
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = vm_hwm(pid) {
            peak = peak.max(kib);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                return Err("the run did not end within 600 s".into());
            }
            Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
            Err(e) => return Err(e.to_string()),
        }
    };
    if !status.success() {
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        return Err(format!("aibuddy run ended {status}: {}", stderr.trim()));
    }
    if peak == 0 {
        return Err(format!("no VmHWM read from /proc/{pid}/status"));
    }
    if let Some(v) = server.violations().first() {
        return Err(format!("protocol violation [{}] {}", v.rule, v.detail));
    }
    Ok((peak, server.requests().len()))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn run(bin: &Path) {
    println!(
        "\n-- peak RSS of `aibuddy run` over {STEPS} steps with a 50 MB command output and the 7 \
         real MCP servers (CLI)"
    );
    let Some(tools) = tools_dir() else {
        println!("   skipped: the real MCP servers are not installed (.tools/mcp; `make setup`)");
        return;
    };
    let mut turns: Vec<Turn> = (0..STEPS)
        .map(|i| {
            let command = if i == BIG_STEP { BIG } else { "ls" };
            Turn::text("next").call(
                &format!("call_rss_{i}"),
                "execute",
                json!({"command": command}),
            )
        })
        .collect();
    turns.push(Turn::text("done"));
    let base = match peak_rss(bin, &[Turn::text("hello")], &tools).await {
        Ok((k, _)) => k,
        Err(e) => return println!("   skipped: {e}"),
    };
    let (big, requests) = match peak_rss(bin, &turns, &tools).await {
        Ok(x) => x,
        Err(e) => return println!("   skipped: {e}"),
    };
    println!("   one-step text run (baseline): {:.1} MiB", mib(base));
    println!(
        "   {STEPS} steps with a 50 MB output ({requests} requests): {:.1} MiB ({:.2}x the baseline), goal <= {GOAL_MIB} MiB: {}",
        mib(big),
        mib(big) / mib(base).max(1e-9),
        verdict(mib(big), GOAL_MIB)
    );
    println!("   (load average: {})", load());
}
