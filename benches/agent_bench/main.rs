//! Agent-run benchmarks of issue 11 (not part of `make test`; run `bash benches/agent_bench.sh`
//! or `make bench`). Each section prints numbers, a baseline measured in the same run and a goal
//! verdict; nothing is asserted (these machines are shared and noisy).
//!
//! 1. `bytes`: tool-definition bytes in the first request with the 7 real MCP servers, on the
//!    native presentation (Anthropic, `tool_search: "native"`) and activeTools (Chat
//!    Completions), beside what sending every schema would cost. Goal <= 15,000 B.
//! 2. `first`: time to the first request with and without one MCP server that takes 10 s to start
//!    (the CLI, `aibuddy run --json`). Goal: not delayed by it.
//! 3. `step`: per-step overhead of the loop without the provider: a 50-step run against 50 direct
//!    `Runner::call`s of the same tool and the same 51 provider requests made directly.
//!    Goal <= 5 ms/step.
//! 4. `rss`: peak RSS of the CLI over a 50-step run that includes a 50 MB command output, beside
//!    a one-step run, both with the 7 real MCP servers configured. Goal <= 64 MiB.
//! 5. `approvals` (issue 23): asks of a scripted 30-call coding session in `auto` mode against
//!    the same session in `ask` mode (the CLI, a temp git project, a loopback registry on the
//!    allow list). Goal <= 3 asks, each a case still asked in `auto`.
//! 6. `roundtrip` (issue 25): the round trip "search for the time tool -> get_current_time ->
//!    answer" from the very first request, with the 7 real MCP servers starting with the run;
//!    10 runs per route. Goal: 10/10 on each route.
//!
//! Arguments name the sections to run (default: all); cargo's own `--bench` flag is ignored.

mod approvals;
mod common;
mod first_request;
mod round_trip;
mod rss;
mod step_overhead;
mod tool_bytes;

use std::path::PathBuf;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_aibuddy"));
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |s: &str| only.is_empty() || only.iter().any(|o| o == s);
    println!(
        "agent benchmarks (load average at start: {})",
        common::load()
    );
    if want("bytes") {
        tool_bytes::run().await;
    }
    if want("first") {
        first_request::run(&bin).await;
    }
    if want("step") {
        step_overhead::run().await;
    }
    if want("rss") {
        rss::run(&bin).await;
    }
    if want("approvals") {
        approvals::run(&bin).await;
    }
    if want("roundtrip") {
        round_trip::run(&bin).await;
    }
}
