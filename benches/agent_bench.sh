#!/usr/bin/env bash
# Agent runs (issue 11): tool-definition bytes of the first request with the 7 real MCP servers
# on both presentations, time to the first request with a 10 s MCP server, per-step loop
# overhead, peak RSS of a 50-step run with a 50 MB output, and (issue 23) the asks of a 30-call
# coding session in auto mode (also benches/approvals_bench.sh). Prints numbers, baselines
# measured in the same run and goal verdicts; asserts nothing. Sections: bytes first step rss
# approvals (default all).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench --locked -q -p aibuddy --bench agent_bench -- "$@"
