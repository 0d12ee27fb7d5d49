#!/usr/bin/env bash
# The allow-list proxy's cost (issue 22): a 100 MB download and the set-up of an empty request
# through a command's proxy (namespace path) against curl straight to the same loopback server
# and against the cheapest relays with the same hops (splice, copy, socat when installed), all in
# the same run; prints proxy/direct (goal <= 1.1x), floor/direct, proxy/floor, the set-up extra
# (goal <= +5 ms), the CPU time of each transfer and the load average. Run it on a quiet machine.
# Usage: benches/netproxy_bench.sh [rounds] [megabytes]. Not part of `make test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v curl >/dev/null || { echo "netproxy bench: curl is not installed; skipped"; exit 0; }
cargo bench --locked -p aibuddy-exec --bench netproxy -- "${1:-9}" "${2:-100}"
