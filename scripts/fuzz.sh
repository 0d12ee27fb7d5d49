#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ on the nightly toolchain (see docs/fuzzing.md).
#   scripts/fuzz.sh [TARGET...]          each target for FUZZ_SECONDS (default 60), corpus kept in fuzz/.work
#   scripts/fuzz.sh --smoke [TARGET...]  the checked-in corpus, then FUZZ_SMOKE_SECONDS (default 5) each
#   scripts/fuzz.sh [--smoke] --build-only  install and build what that mode runs, run nothing
#                                        (`make test` builds in the background, scripts/test.sh)
# All targets are built once, into one target dir, before any runs. Exits non-zero when any target
# finds a crash, a panic, a timeout (FUZZ_TIMEOUT seconds for one input) or runs out of memory; the
# reproducer is left in fuzz/artifacts/<target>/ (replay: cargo +nightly fuzz run <target> <file>).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

mode=full
build_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) mode=smoke ;;
    --build-only) build_only=1 ;;
    *) break ;;
  esac
  shift
done
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
if [ "$build_only" = 1 ]; then exit 0; fi

# One target: its result line on stdout, its log in .work/<target>.log; non-zero when it failed.
run_target() {
  local t="$1" work log runs
  if [ ! -d "corpus/$t" ]; then
    echo "fuzz: no checked-in corpus for $t (fuzz/corpus/$t)" >&2
    return 1
  fi
  if [ "$mode" = smoke ]; then
    work="$(mktemp -d)"
  else
    work=".work/$t"
    mkdir -p "$work"
  fi
  log=".work/$t.log"
  # New inputs go to the first (scratch) corpus dir; the checked-in seeds are only read. The
  # fuzzer binary is started directly: it is built, and `cargo fuzz run` would check the build
  # again per target (and take cargo's build lock, serialising parallel targets).
  local status=0
  mkdir -p "artifacts/$t"
  "$bin_dir/$t" -artifact_prefix="artifacts/$t/" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=4096 \
    -print_final_stats=1 "$work" "corpus/$t" >"$log" 2>&1 || status=$?
  if [ "$mode" = smoke ]; then rm -rf "$work"; fi
  if [ "$status" = 0 ]; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    echo "fuzz: $t: ok, ${runs:-?} inputs in ${seconds} s (seeds: $(ls "corpus/$t" | wc -l))"
  else
    echo "fuzz: $t: FAILED (exit $status; log: fuzz/$log)" >&2
    tail -n 60 "$log" >&2
    return 1
  fi
}

# Where `cargo fuzz build` left the binaries: <target dir>/<triple>/<profile>/.
profile_dir=release
if [[ " ${flags[*]} " == *" --dev "* ]]; then profile_dir=debug; fi
bin_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/$(rustc +nightly -vV | sed -n 's/^host: //p')/$profile_dir"
mkdir -p .work

# Targets run side by side, FUZZ_JOBS at a time (default: one per core); each is single-threaded
# and runs for a fixed time, so the wall time divides by the jobs. Results print as each ends.
jobs="${FUZZ_JOBS:-$(nproc)}"
failed=()
declare -A running=()
reap() {
  local pid
  wait -n -p pid "${!running[@]}" && true
  local status=$?
  if [ -n "${pid:-}" ]; then
    if [ "$status" != 0 ]; then failed+=("${running[$pid]}"); fi
    unset "running[$pid]"
  fi
}
for t in "${targets[@]}"; do
  while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
  run_target "$t" &
  running[$!]="$t"
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failing targets: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, zero crashes"
