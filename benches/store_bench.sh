#!/usr/bin/env bash
# Store benchmark: pipeline per-call overhead vs a bare INSERT, history/FTS over 100,000 calls,
# recovery of a 10 MB raw output. Prints numbers and ratios; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench --locked -p aibuddy --bench store_bench
