#!/usr/bin/env bash
# tool_search ranking: recall@1/@5 on the labelled query fixture, latency over 10,000 tools.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench -q -p aibuddy --bench tool_search
