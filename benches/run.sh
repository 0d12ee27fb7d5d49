#!/usr/bin/env bash
# Runs every benchmark. Each prints its own ratios against a baseline measured in the same run.
# Not part of `make test`: these machines are shared and noisy, so numbers are read, not asserted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for b in benches/*.sh; do
  [ "$(basename "$b")" = run.sh ] && continue
  printf '\n==> %s\n' "$b"
  bash "$b"
done
