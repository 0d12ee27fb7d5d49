//! Peak RSS of the `aibuddy` process (`/usr/bin/time -f %M`) over `aibuddy run --json --yes`
//! with 50 tool steps, one of which prints 50 MB (`head -c 50000000 /dev/urandom | base64`, about
//! 67 MB of text streamed live as `tool_output` events), against a one-step text run measured in
//! the same run. Goal <= 64 MiB.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::json;

use crate::common::{load, project, verdict};

const STEPS: usize = 50;
const BIG_STEP: usize = 25;
const BIG: &str = "head -c 50000000 /dev/urandom | base64";
const GOAL_MIB: f64 = 64.0;
const TIME: &str = "/usr/bin/time";

/// Peak RSS in KiB of one `aibuddy run` over `turns`, and the requests the provider received.
async fn peak_rss(bin: &Path, turns: &[Turn]) -> Result<(u64, usize), String> {
    let p = project();
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    for t in turns {
        server.push(t.reply(ProviderKind::OpenAiChat));
    }
    p.chat_settings(&server);
    let aibuddy = p.cli(bin, &["run", "--json", "--yes", "--max-steps", "100", "go"]);
    let mut cmd = tokio::process::Command::new(TIME);
    cmd.arg("-f")
        .arg("%M")
        .arg(aibuddy.get_program())
        .args(aibuddy.get_args())
        .env_remove("AIBUDDY_LOG")
        .env_remove("AIBUDDY_DATA_DIR")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .map_err(|_| "the run did not end within 600 s".to_string())?
        .map_err(|e| format!("{TIME}: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "aibuddy run ended {}: {}",
            out.status,
            stderr.trim()
        ));
    }
    let kib = stderr
        .lines()
        .rev()
        .find_map(|l| l.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no RSS in the output of {TIME}: {stderr}"))?;
    if let Some(v) = server.violations().first() {
        return Err(format!("protocol violation [{}] {}", v.rule, v.detail));
    }
    Ok((kib, server.requests().len()))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn run(bin: &Path) {
    println!("\n-- peak RSS of `aibuddy run` over {STEPS} steps with a 50 MB command output (CLI)");
    if !Path::new(TIME).exists() {
        return println!(
            "   skipped: {TIME} (GNU time) is not installed (`make setup` installs it)"
        );
    }
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
    let base = match peak_rss(bin, &[Turn::text("hello")]).await {
        Ok((k, _)) => k,
        Err(e) => return println!("   skipped: {e}"),
    };
    let (big, requests) = match peak_rss(bin, &turns).await {
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
