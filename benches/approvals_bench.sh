#!/usr/bin/env bash
# Approval modes (issue 23): a scripted coding session of 30 calls (listing, reading, grep, edits,
# cargo build and test, git status/diff/commit/push, a pip install from a loopback registry on the
# person's allow list) through the real `aibuddy run` against the fake provider, in `auto` mode
# and, as the baseline of the same run, in `ask` mode. Prints each ask of `auto` with its reason
# and the count against the goal (<= 3); asserts nothing (tests/all/cli_run.rs asserts the bound).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench --locked -q -p aibuddy --bench agent_bench -- approvals "$@"
