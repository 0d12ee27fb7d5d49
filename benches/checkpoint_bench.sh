#!/usr/bin/env bash
# Checkpoint benchmark (issue 23). The goal, as the issue states it: "Checkpoint cost per mutating
# call on a 10,000-file, 200 MB project with nothing else changed: at most 25 ms p50 added, and at
# most 0.5x of the same snapshot taken with a shadow git repository (`git add -A` + `write-tree`)
# on the same tree; the first snapshot of a fresh project at most 1x of that."
# On a generated 10,000-file, 200 MB tree, against a shadow git repository (separate GIT_DIR and
# work tree) on the same tree in the same run:
#   - unchanged: a snapshot with nothing changed, the store kept open (the stat cache and the
#     folder cache in memory, as in a run or the window). Goals: p50 <= 25 ms, <= 0.5x the same
#     snapshot taken with shadow git.
#   - call: a whole mutating call that changes one file (before- and after-snapshot; the write
#     itself not counted), against two shadow-git snapshots around the same write. Goal: p50 <=
#     25 ms added; its ratio to shadow git is printed (the after-snapshot makes the call's
#     objects and manifest durable, fsync included, which shadow git does not).
#   - cold: the unchanged snapshot from a store opened afresh (as each `aibuddy call` process
#     does: the manifest decoded, every folder listed). No goal.
#   - first: the first snapshot of a fresh project. Goal: <= 1x shadow git.
# Prints numbers, ratios, verdicts and the load average; asserts nothing. ROUNDS (default 3)
# repeats the measures on the same tree and reports the median of the rounds' p50s (a shared
# machine is noisy).
# Environment: FILES, BYTES, N (snapshots per measure), ROUNDS, NO_BUILD, CARGO_TARGET_DIR, BIN
# (a driver binary to measure instead of the one built, e.g. an older build to compare).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FILES=${FILES:-10000}
BYTES=${BYTES:-209715200}
N=${N:-21}
ROUNDS=${ROUNDS:-3}
# NO_BUILD=1: use the binary already built (e.g. while another build holds the target dir).
[ -n "${NO_BUILD:-}${BIN:-}" ] || cargo build --release --locked -q -p aibuddy-checkpoint --bin aibuddy-checkpoint-bench
BIN=${BIN:-"${CARGO_TARGET_DIR:-target}/release/aibuddy-checkpoint-bench"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
"$BIN" gen "$tree" "$FILES" "$BYTES"
echo "tree: $(find "$tree" -type f | wc -l) files, $(du -sm "$tree" | cut -f1) MB"

us() { echo $(( ($(date +%s%N) - $1) / 1000 )); }   # microseconds since $1 (ns)
p50() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { grep "^$1=" "$2" | sed "s/^$1=\([0-9.]*\).*/\1/" | awk '{printf "%d\n", $1*1000}'; }
# CPU time (user + system) of the finished children of this shell, in microseconds, from the
# output of `times` (which must run in this shell, not a subshell); 10 ms ticks, so averaged over
# N runs. Wall time on a loaded machine mostly measures waiting for a CPU.
cpu_of() { tail -1 "$1" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/);
  printf "%d", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "PASS" : "MISS" }'; }

: > "$work/rounds.txt"
for round in $(seq "$ROUNDS"); do
  rm -rf "$work/shadow.git" "$work/data"
  load=$(cut -d' ' -f1 /proc/loadavg)
  # Shadow git: first snapshot, N unchanged ones, N calls that change one file.
  export GIT_DIR="$work/shadow.git" GIT_WORK_TREE="$tree"
  git init -q
  git config core.autocrlf false
  t=$(date +%s%N); git add -A; git write-tree >/dev/null; git_first=$(us "$t")
  : > "$work/git.txt"; : > "$work/gitcall.txt"
  times > "$work/times0"
  for i in $(seq "$N"); do
    t=$(date +%s%N); git add -A; git write-tree >/dev/null; us "$t" >> "$work/git.txt"
  done
  times > "$work/times1"
  git_cpu=$(( ($(cpu_of "$work/times1") - $(cpu_of "$work/times0")) / N ))
  for i in $(seq "$N"); do
    t=$(date +%s%N); git add -A; git write-tree >/dev/null; a=$(us "$t")
    "$BIN" touch "$tree" "$((i + 1000 * round))"
    t=$(date +%s%N); git add -A; git write-tree >/dev/null; b=$(us "$t")
    echo $((a + b)) >> "$work/gitcall.txt"
  done
  unset GIT_DIR GIT_WORK_TREE
  git_p50=$(p50 < "$work/git.txt"); gitcall_p50=$(p50 < "$work/gitcall.txt")

  # Checkpoints: the same.
  "$BIN" "$work/data" "$tree" "$N" > "$work/ckpt.out"
  ck_first=$(field first_ms "$work/ckpt.out")
  ck_p50=$(field unchanged_ms "$work/ckpt.out" | p50)
  ck_cpu=$(grep '^unchanged_ms=' "$work/ckpt.out" | sed 's/.*cpu_ms=\([0-9.]*\).*/\1/' | awk '{ s += $1 * 1000 } END { printf "%d", s / NR }')
  cold_p50=$(field cold_ms "$work/ckpt.out" | p50)
  call_p50=$(field call_ms "$work/ckpt.out" | p50)
  load_end=$(cut -d' ' -f1 /proc/loadavg)
  echo "$git_first $git_p50 $gitcall_p50 $ck_first $ck_p50 $cold_p50 $call_p50 $git_cpu $ck_cpu" >> "$work/rounds.txt"
  printf 'round %s (load %s -> %s): git first %.1f ms, unchanged %.2f ms (cpu %.1f), call %.2f ms | checkpoints first %.1f ms, unchanged %.2f ms (cpu %.1f), cold %.2f ms, call %.2f ms\n' \
    "$round" "$load" "$load_end" "$(ratio "$git_first" 1000)" "$(ratio "$git_p50" 1000)" "$(ratio "$git_cpu" 1000)" "$(ratio "$gitcall_p50" 1000)" \
    "$(ratio "$ck_first" 1000)" "$(ratio "$ck_p50" 1000)" "$(ratio "$ck_cpu" 1000)" "$(ratio "$cold_p50" 1000)" "$(ratio "$call_p50" 1000)"
done

med() { awk -v c="$1" '{print $c}' "$work/rounds.txt" | p50; }
git_first=$(med 1); git_p50=$(med 2); gitcall_p50=$(med 3)
ck_first=$(med 4); ck_p50=$(med 5); cold_p50=$(med 6); call_p50=$(med 7)
git_cpu=$(med 8); ck_cpu=$(med 9)
un_ratio=$(ratio "$ck_p50" "$git_p50")
cold_ratio=$(ratio "$cold_p50" "$git_p50")
call_ratio=$(ratio "$call_p50" "$gitcall_p50")
first_ratio=$(ratio "$ck_first" "$git_first")
echo "median of $ROUNDS rounds:"
printf 'shadow git   first %8.1f ms   unchanged p50 %7.2f ms   call p50 %7.2f ms\n' "$(ratio "$git_first" 1000)" "$(ratio "$git_p50" 1000)" "$(ratio "$gitcall_p50" 1000)"
printf 'checkpoints  first %8.1f ms   unchanged p50 %7.2f ms   call p50 %7.2f ms   cold p50 %7.2f ms\n' "$(ratio "$ck_first" 1000)" "$(ratio "$ck_p50" 1000)" "$(ratio "$call_p50" 1000)" "$(ratio "$cold_p50" 1000)"
echo "goals (issue 23):"
printf '  unchanged snapshot p50: %.2f ms (goal <= 25 ms: %s)\n' \
  "$(ratio "$ck_p50" 1000)" "$(verdict "$(ratio "$ck_p50" 1000)" 25)"
printf '  unchanged snapshot: %sx the same snapshot with shadow git (goal <= 0.5x: %s)\n' \
  "$un_ratio" "$(verdict "$un_ratio" 0.5)"
printf '  mutating call that changes one file, nothing else changed (two snapshots): %.2f ms added (goal <= 25 ms: %s)\n' \
  "$(ratio "$call_p50" 1000)" "$(verdict "$(ratio "$call_p50" 1000)" 25)"
printf '  first snapshot of a fresh project: %sx shadow git (goal <= 1x: %s)\n' "$first_ratio" "$(verdict "$first_ratio" 1)"
echo "information (no goal):"
printf '  unchanged CPU time (every thread): %.1f ms against shadow git %.1f ms: %sx\n' \
  "$(ratio "$ck_cpu" 1000)" "$(ratio "$git_cpu" 1000)" "$(ratio "$ck_cpu" "$git_cpu")"
printf '  call: %sx two shadow-git snapshots around the same write\n' "$call_ratio"
printf '  cold store (a new process): %.2f ms, %sx shadow git\n' "$(ratio "$cold_p50" 1000)" "$cold_ratio"
