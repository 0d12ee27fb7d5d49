#!/usr/bin/env bash
# Benchmark of the container sandbox (aibuddy-container): per-call overhead of `execute` (`true`)
# through the adapter vs `podman exec` of the same command in the same container, and vs the bare
# Engine API exec, ratios in one run. Starts its own podman API service (crates/container/tests/
# all/support.rs); needs podman (scripts/setup.sh). Not part of `make test`.
# Usage: benches/container_bench.sh [calls]   (default 40)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench -q -p aibuddy-container --bench exec_overhead -- "${1:-40}"
