//! `fake-provider SCENARIO.json [--report FILE]`: the protocol-checking fake provider
//! (`aibuddy_provider::testing::FakeServer`) as a process, serving the scripted conversation of a
//! JSON file (see `aibuddy_provider::testing::scenario`) on 127.0.0.1, so a real app (the desktop
//! window in the end-to-end test) can run against it with `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`.
//!
//! Prints the base URL for the scenario's format as the first line of stdout, then serves until
//! stdin closes, SIGTERM or SIGINT. At the end it prints a summary to stderr (and, with `--report`,
//! writes it as JSON) and exits 0 when every step was answered, no request came after the script
//! and no request broke the protocol; 1 otherwise (the violations are listed); 2 when it could not
//! start.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use aibuddy_common::term;
use aibuddy_provider::testing::{FakeServer, Scenario, Verdict};
use tokio::io::AsyncReadExt as _;
use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: fake-provider SCENARIO.json [--report FILE]";

struct Args {
    scenario: PathBuf,
    report: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut scenario = None;
    let mut report = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--report" => report = Some(args.next().ok_or("--report needs a file")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            s if scenario.is_none() => scenario = Some(PathBuf::from(s)),
            _ => return Err(USAGE.into()),
        }
    }
    Ok(Args {
        scenario: scenario.ok_or(USAGE)?,
        report,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fake-provider: {}", term::block(&e));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fake-provider: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> ExitCode {
    let scenario = match std::fs::read_to_string(&args.scenario)
        .map_err(|e| e.to_string())
        .and_then(|t| Scenario::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            let path = args.scenario.display().to_string();
            eprintln!("fake-provider: {}: {}", term::line(&path), term::block(&e));
            return ExitCode::from(2);
        }
    };
    let server = match FakeServer::start().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-provider: cannot listen on 127.0.0.1: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(key) = &scenario.key {
        server.expect_key(key);
    }
    server.check_replay(scenario.check_replay);
    if scenario.conversations_by_first_user_text {
        server.conversations_by_first_user_text();
    }
    for reply in scenario.replies() {
        server.push(reply);
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{}", server.base_url(scenario.kind))
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    drop(out);

    wait_for_end().await;

    let verdict = scenario.judge(server.requests().len(), &server.violations());
    summarize(&verdict);
    if let Some(path) = &args.report {
        let written = serde_json::to_vec_pretty(&verdict)
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(path, json));
        if let Err(e) = written {
            eprintln!("fake-provider: cannot write the report: {e}");
            return ExitCode::from(2);
        }
    }
    if verdict.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Until stdin reaches its end (the driving test closed it or exited), SIGTERM or SIGINT.
async fn wait_for_end() {
    let stdin_closed = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 256];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    let term_signal = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = stdin_closed => {}
        () = term_signal => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn summarize(v: &Verdict) {
    eprintln!(
        "fake-provider: {} request(s) for {} step(s): {} unanswered, {} beyond the script, {} protocol violation(s)",
        v.requests,
        v.steps,
        v.unanswered,
        v.beyond_script,
        v.violations.len()
    );
    for violation in &v.violations {
        eprintln!("fake-provider: {}", term::line(violation));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Args, String> {
        parse_args(v.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments_name_the_scenario_and_an_optional_report() {
        let a = parse(&["s.json", "--report", "r.json"]).unwrap();
        assert_eq!(a.scenario, PathBuf::from("s.json"));
        assert_eq!(a.report, Some(PathBuf::from("r.json")));
        assert!(parse(&[]).is_err());
        assert!(parse(&["a", "b"]).is_err());
        assert!(parse(&["a", "--report"]).is_err());
        assert!(parse(&["a", "--nope"]).is_err());
    }
}
