#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ on the nightly toolchain (see docs/fuzzing.md).
#   scripts/fuzz.sh [TARGET...]          each target for FUZZ_SECONDS (default 60), corpus kept in fuzz/.work
#   scripts/fuzz.sh --smoke [TARGET...]  the checked-in corpus, then FUZZ_SMOKE_SECONDS (default 5) each
# All targets are built once, into one target dir, before any runs. Exits non-zero when any target
# finds a crash, a panic, a timeout (FUZZ_TIMEOUT seconds for one input) or runs out of memory; the
# reproducer is left in fuzz/artifacts/<target>/ (replay: cargo +nightly fuzz run <target> <file>).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

mode=full
if [ "${1:-}" = "--smoke" ]; then
  mode=smoke
  shift
fi
seconds="${FUZZ_SECONDS:-60}"
if [ "$mode" = smoke ]; then seconds="${FUZZ_SMOKE_SECONDS:-5}"; fi

bash scripts/install-fuzz.sh
if [ -n "${CARGO_FUZZ_ROOT:-}" ]; then export PATH="$CARGO_FUZZ_ROOT/bin:$PATH"; fi

# Safe Rust: no sanitizer by default (faster to build and run); FUZZ_SANITIZER=address for C code.
# Debug assertions on, so integer overflow panics instead of wrapping silently.
flags=(--sanitizer "${FUZZ_SANITIZER:-none}" --debug-assertions)
# The smoke (part of `make test`) builds unoptimised: a cold optimised build of the fuzz crate costs
# about 26 CPU-minutes, the dev build a fraction of that; the smoke only replays the corpus and
# explores for a few seconds, where speed per input matters little. FUZZ_DEV=0 forces optimised.
if [ "${FUZZ_DEV:-$([ "$mode" = smoke ] && echo 1 || echo 0)}" = 1 ]; then flags+=(--dev); fi
cd fuzz

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no targets found in fuzz/" >&2
  exit 1
fi

started=$SECONDS
cargo +nightly fuzz build "${flags[@]}"
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - started)) s"

failed=()
for t in "${targets[@]}"; do
  if [ ! -d "corpus/$t" ]; then
    echo "fuzz: no checked-in corpus for $t (fuzz/corpus/$t)" >&2
    failed+=("$t")
    continue
  fi
  if [ "$mode" = smoke ]; then
    work="$(mktemp -d)"
  else
    work=".work/$t"
    mkdir -p "$work"
  fi
  log=".work/$t.log"
  mkdir -p .work
  # New inputs go to the first (scratch) corpus dir; the checked-in seeds are only read.
  if cargo +nightly fuzz run "${flags[@]}" "$t" "$work" "corpus/$t" -- \
      -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=4096 \
      -print_final_stats=1 >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    echo "fuzz: $t: ok, ${runs:-?} inputs in ${seconds} s (seeds: $(ls "corpus/$t" | wc -l))"
  else
    echo "fuzz: $t: FAILED (log: fuzz/$log)" >&2
    tail -n 60 "$log" >&2
    failed+=("$t")
  fi
  if [ "$mode" = smoke ]; then rm -rf "$work"; fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failing targets: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, zero crashes"
