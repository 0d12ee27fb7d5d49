#!/usr/bin/env bash
# Output-path benchmark of `execute` (issue 13): for each workload, N interleaved runs of
#   pipe:    sh -c '<pipeline> > /dev/null'
#   call:    aibuddy call execute '{"command": "<pipeline>"}'            (no listening client)
#   stream:  aibuddy call execute ... --stream 2>/dev/null                 (a listening client)
# on the default launch path (namespaces when bubblewrap works). Prints per workload the median
# wall and CPU (user+sys of the whole process tree, from /usr/bin/time), their ratios to the pipe,
# and peak RSS (aibuddy's own VmHWM, polled, and the tree's largest process), each beside its goal
# (wall <= 1.3x, CPU <= 1.4x, RSS <= 64 MiB) marked PASS or MISS. Prints; asserts nothing; not part
# of `make test`. The `fixed` workload (`true`) is the fixed cost of one call (start-up, sandbox
# launch, store, exit): its wall and CPU over the pipe's are the numbers to read there. The
# runner-level numbers (1 GiB through run(), cancel latency) are in
# benches/exec_runner_bench.sh.
#
# Also measured, for reading the ratios: `floor` = `sh -c '<pipeline> | cat > /dev/null'`, what
# any reader of the command's pipe costs (the command's own writes into a pipe cost more kernel CPU
# than writes to /dev/null; no output path can go below that).
# `file` = `sh -c '<pipeline> >> file'` on the data dir's file system: what keeping every byte in
# a file costs when the command writes the file itself (its own small writes, page cache and ext4
# work in its own thread; the design measured and not kept in session 8, see crates/exec/README.md).
# The data dir is created by one warm-up call and kept across runs (as a person's is); with
# EXEC_BENCH_FRESH_DATA=1 every call starts on an empty data dir (store creation included).
#
# Usage: benches/exec_bench.sh            env: EXEC_BENCH_PAIRS (default 5),
#                                              EXEC_BENCH_ONLY (substring of a workload name),
#                                              EXEC_BENCH_BIN (an aibuddy binary: no build),
#                                              EXEC_BENCH_FRESH_DATA (1: empty data dir per call)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PAIRS="${EXEC_BENCH_PAIRS:-5}"
TARGET="${CARGO_TARGET_DIR:-target}"
if [ -n "${EXEC_BENCH_BIN:-}" ]; then
  BIN="$EXEC_BENCH_BIN"
else
  cargo build --release --locked -q --bin aibuddy
  BIN="$TARGET/release/aibuddy"
fi
[ -x /usr/bin/time ] || { echo "exec_bench: needs /usr/bin/time (GNU time)" >&2; exit 2; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/project"

WORKLOADS=(
  'lines|head -c 300000000 /dev/zero | tr '"'\\0'"' a | fold -w 120'
  "binary|head -c 200000000 /dev/urandom"
  "tiny-writes|yes | head -n 5000000"
  "fixed|true"
)

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# measure KIND PIPELINE -> appends "wall cpu tree_rss_kib own_rss_kib" to $WORK/KIND
measure() {
  local kind="$1" pipeline="$2" tf="$WORK/time.out" own=0
  case "$kind" in
    pipe)
      /usr/bin/time -f '%e %U %S %M' -o "$tf" sh -c "$pipeline > /dev/null"
      ;;
    floor)
      /usr/bin/time -f '%e %U %S %M' -o "$tf" sh -c "$pipeline | cat > /dev/null"
      ;;
    file)
      rm -f "$WORK/data/file.out"
      /usr/bin/time -f '%e %U %S %M' -o "$tf" sh -c "$pipeline >> '$WORK/data/file.out'"
      rm -f "$WORK/data/file.out"
      ;;
    call|stream)
      local data="$WORK/data" flag=() project="$WORK/project"
      [ "${EXEC_BENCH_FRESH_DATA:-0}" = 1 ] && rm -rf "$data"
      [ "$kind" = stream ] && flag=(--stream)
      local json
      json="$(printf '{"command": "%s"}' "$(printf '%s' "$pipeline" | sed 's/\\/\\\\/g; s/"/\\"/g')")"
      /usr/bin/time -f '%e %U %S %M' -o "$tf" \
        "$BIN" call execute "$json" --yes "${flag[@]}" --project "$project" --data-dir "$data" \
        >"$WORK/call.out" 2>/dev/null &
      local tpid=$! apid="" hwm
      while kill -0 "$tpid" 2>/dev/null; do
        [ -z "$apid" ] && apid="$(pgrep -P "$tpid" | head -n1 || true)"
        if [ -n "$apid" ] && hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$apid/status" 2>/dev/null)" && [ -n "$hwm" ]; then
          own="$hwm"
        fi
        sleep 0.02
      done
      wait "$tpid" || { echo "exec_bench: aibuddy call failed ($kind): $(head -c 400 "$WORK/call.out")" >&2; exit 1; }
      grep -q '^exit: code 0' "$WORK/call.out" || { echo "exec_bench: unexpected result: $(head -c 400 "$WORK/call.out")" >&2; exit 1; }
      ;;
  esac
  awk -v own="$own" '{printf "%s %.3f %s %s\n", $1, $2 + $3, $4, own}' "$tf" >>"$WORK/$kind"
}

verdict() {
  if [ "$1" = n/a ]; then echo "n/a: baseline under 50 ms, GNU time's 10 ms resolution"; return; fi
  awk -v v="${1%x}" -v g="$2" 'BEGIN {print (v + 0 <= g + 0) ? "PASS" : "MISS"}'
}
# A ratio against a baseline under 50 ms is noise (GNU time counts in 10 ms steps): "n/a".
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b < 0.05) print "n/a"; else printf "%.2fx", a / b}'; }

echo "exec_bench: $PAIRS interleaved runs per workload; bubblewrap: $(command -v bwrap || echo none); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# Warm-up: creates the data dir (store, migrations) once, as a person's first call does.
"$BIN" call execute '{"command": "true"}' --yes --project "$WORK/project" --data-dir "$WORK/data" >/dev/null 2>&1 \
  || { echo "exec_bench: the warm-up call failed" >&2; exit 1; }
for entry in "${WORKLOADS[@]}"; do
  name="${entry%%|*}"
  pipeline="${entry#*|}"
  if [ -n "${EXEC_BENCH_ONLY:-}" ] && [[ "$name" != *"$EXEC_BENCH_ONLY"* ]]; then continue; fi
  rm -f "$WORK/pipe" "$WORK/floor" "$WORK/file" "$WORK/call" "$WORK/stream"
  kinds=(call stream)
  for _ in $(seq "$PAIRS"); do
    measure pipe "$pipeline"
    measure floor "$pipeline"
    measure file "$pipeline"
    for kind in "${kinds[@]}"; do measure "$kind" "$pipeline"; done
  done
  echo
  echo "== $name: $pipeline"
  pw="$(cut -d' ' -f1 "$WORK/pipe" | median)"
  pc="$(cut -d' ' -f2 "$WORK/pipe" | median)"
  printf '  %-22s wall %7.3f s   cpu %7.3f s\n' "pipe > /dev/null" "$pw" "$pc"
  fw="$(cut -d' ' -f1 "$WORK/floor" | median)"
  fc="$(cut -d' ' -f2 "$WORK/floor" | median)"
  printf '  %-22s wall %7.3f s   cpu %7.3f s   wall %6s   cpu %6s   (any pipe reader; for reading the ratios)\n' \
    "floor: pipe | cat" "$fw" "$fc" "$(ratio "$fw" "$pw")" "$(ratio "$fc" "$pc")"
  lw="$(cut -d' ' -f1 "$WORK/file" | median)"
  lc="$(cut -d' ' -f2 "$WORK/file" | median)"
  printf '  %-22s wall %7.3f s   cpu %7.3f s   wall %6s   cpu %6s   (the command writing the file itself)\n' \
    "file: >> file" "$lw" "$lc" "$(ratio "$lw" "$pw")" "$(ratio "$lc" "$pc")"
  for kind in "${kinds[@]}"; do
    w="$(cut -d' ' -f1 "$WORK/$kind" | median)"
    c="$(cut -d' ' -f2 "$WORK/$kind" | median)"
    tree="$(cut -d' ' -f3 "$WORK/$kind" | sort -g | tail -n1)"
    own="$(cut -d' ' -f4 "$WORK/$kind" | sort -g | tail -n1)"
    wr="$(ratio "$w" "$pw")"
    cr="$(ratio "$c" "$pc")"
    extra="$(awk -v a="$w" -v b="$pw" 'BEGIN {printf "%.3f", a - b}')"
    own_mib="$(awk -v k="$own" 'BEGIN {printf "%.1f", k / 1024}')"
    tree_mib="$(awk -v k="$tree" 'BEGIN {printf "%.1f", k / 1024}')"
    label="aibuddy call"
    [ "$kind" = stream ] && label="aibuddy call --stream"
    printf '  %-22s wall %7.3f s   cpu %7.3f s   wall %6s (goal <= 1.3x: %s)   cpu %6s (goal <= 1.4x: %s)\n' \
      "$label" "$w" "$c" "$wr" "$(verdict "$wr" 1.3)" "$cr" "$(verdict "$cr" 1.4)"
    printf '  %-22s against the floor: wall %6s   cpu %6s   (over the floor: wall %s s, cpu %s s)\n' \
      "" "$(ratio "$w" "$fw")" "$(ratio "$c" "$fc")" \
      "$(awk -v a="$w" -v b="$fw" 'BEGIN {printf "%.3f", a - b}')" \
      "$(awk -v a="$c" -v b="$fc" 'BEGIN {printf "%.3f", a - b}')"
    printf '  %-22s peak RSS aibuddy %6s MiB, largest process of the tree %6s MiB (goal <= 64 MiB: %s); wall over the pipe %s s\n' \
      "" "$own_mib" "$tree_mib" "$(verdict "$own_mib" 64)" "$extra"
  done
done
