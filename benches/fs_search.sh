#!/usr/bin/env bash
# Filesystem search benchmark: sandbox grep/glob vs rg/fdfind on a large real tree (not part of make test).
# Prints medians, ratios (target within 1.3x) and peak memory of a grep matching millions of lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v rg >/dev/null && command -v fdfind >/dev/null || { echo "install ripgrep and fd-find (scripts/setup.sh)"; exit 1; }
exec cargo bench -p aibuddy-sandbox --bench fs_search "$@"
