#!/usr/bin/env bash
# The allow-list proxy's cost (issue 22): a 100 MB download and the set-up of an empty request
# through a command's proxy (namespace path) against curl straight to the same loopback server,
# measured in the same run; ratios printed with their goals (<= 1.1x, <= +5 ms).
# Usage: benches/netproxy_bench.sh [rounds] [megabytes]. Not part of `make test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v curl >/dev/null || { echo "netproxy bench: curl is not installed; skipped"; exit 0; }
cargo bench --locked -p aibuddy-exec --bench netproxy -- "${1:-9}" "${2:-100}"
