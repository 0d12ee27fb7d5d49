#!/usr/bin/env bash
# Filesystem search benchmark: sandbox grep/glob vs rg/fdfind on a large real tree (not part of make test),
# as library calls and end to end through the release CLI (`aibuddy call grep|glob`).
# Prints medians, ratios (goal at most 1.1x, issue 24) and peak memory of a grep matching millions of lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v rg >/dev/null && command -v fdfind >/dev/null || { echo "install ripgrep and fd-find (scripts/setup.sh)"; exit 1; }
cargo build --release --locked -q -p aibuddy --bin aibuddy
AIBUDDY_CLI="$(realpath "${CARGO_TARGET_DIR:-target}")/release/aibuddy" exec cargo bench -p aibuddy-sandbox --bench fs_search "$@"
