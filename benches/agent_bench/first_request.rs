//! Time to the first request of `aibuddy run --json` (process start to the fake provider
//! receiving it) with one fast real MCP server, and with the same plus a server that takes 10 s
//! to start (a wrapper that sleeps 10 s, then execs the real server). Goal: the slow server does
//! not delay the first request (allowance: 1 s over the baseline, far under its 10 s).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::json;

use crate::common::{load, median, ms, node_bin, project, tools_dir, verdict};

const SAMPLES: usize = 3;
const SLOW_START: &str = "10";

/// One `aibuddy run`: the time until its first request reached the provider.
async fn first_request(bin: &Path, memory: &Path, slow: bool) -> Result<Duration, String> {
    let p = project();
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    server.push(Turn::text("ok").reply(ProviderKind::OpenAiChat));
    p.chat_settings(&server);
    let mut servers = json!({"memory": {"command": memory,
        "env": {"MEMORY_FILE_PATH": p.tmp.path().join("memory.jsonl")}}});
    if slow {
        let wrapper = p.tmp.path().join("slow-server.sh");
        let script = format!(
            "#!/bin/sh\nsleep {SLOW_START}\nexec '{}' \"$@\"\n",
            memory.display()
        );
        std::fs::write(&wrapper, script).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        servers["slow"] = json!({"command": wrapper,
            "env": {"MEMORY_FILE_PATH": p.tmp.path().join("slow.jsonl")}});
    }
    p.write_data("mcp.json", &json!({ "mcpServers": servers }));
    let started = Instant::now();
    let mut child = tokio::process::Command::from(p.cli(bin, &["run", "--json", "hello"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn aibuddy: {e}"))?;
    let deadline = started + Duration::from_secs(60);
    let first = loop {
        if !server.requests().is_empty() {
            break started.elapsed();
        }
        if Instant::now() > deadline {
            return Err("no request within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    match tokio::time::timeout(Duration::from_secs(60), child.wait()).await {
        Ok(Ok(s)) if s.success() => Ok(first),
        Ok(Ok(s)) => Err(format!("aibuddy run ended {s}")),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("aibuddy run did not end within 60 s".into()),
    }
}

async fn samples(bin: &Path, memory: &Path, slow: bool) -> Result<Duration, String> {
    let mut v = Vec::new();
    for _ in 0..SAMPLES {
        v.push(first_request(bin, memory, slow).await?);
    }
    Ok(median(v))
}

pub async fn run(bin: &Path) {
    println!("\n-- time to the first request with an MCP server that takes 10 s to start (CLI)");
    let Some(t) = tools_dir() else {
        println!("   skipped: the real MCP servers are not installed (.tools/mcp; `make setup`)");
        return;
    };
    let memory = node_bin(&t, "mcp-server-memory");
    let base = match samples(bin, &memory, false).await {
        Ok(d) => d,
        Err(e) => return println!("   skipped: {e}"),
    };
    let slow = match samples(bin, &memory, true).await {
        Ok(d) => d,
        Err(e) => return println!("   skipped: {e}"),
    };
    let delay = slow.saturating_sub(base);
    println!(
        "   without the slow server (baseline): {} (median of {SAMPLES})",
        ms(base)
    );
    println!(
        "   with a server that starts in {SLOW_START} s: {} (median of {SAMPLES})",
        ms(slow)
    );
    println!(
        "   delay caused by the slow server: {} ({:.2}x the baseline); goal: not delayed (< 1 s): {}",
        ms(delay),
        slow.as_secs_f64() / base.as_secs_f64().max(1e-9),
        verdict(delay.as_secs_f64(), 1.0)
    );
    println!("   (load average: {})", load());
}
