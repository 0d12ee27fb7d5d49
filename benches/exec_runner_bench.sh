#!/usr/bin/env bash
# Benchmark of the execute runner (aibuddy-exec): 1 GiB through run() vs `cat > /dev/null`,
# peak RSS, and cancel-to-exit latency p50/p99 over 50 cancellations. Not part of `make test`.
# Usage: benches/exec_runner_bench.sh [bytes]   (default 1 GiB)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --locked -q -p aibuddy-exec --bench runner -- "${1:-1073741824}"
