#!/usr/bin/env bash
# Checkpoint benchmark (issue 23): on a generated 10,000-file, 200 MB tree, the p50 cost of a
# snapshot with nothing changed and the cost of the first snapshot, against a shadow git
# repository (`git add -A` + `git write-tree`, separate GIT_DIR and work tree) on the same tree in
# the same run. Goals: unchanged p50 <= 25 ms and <= 0.5x shadow git; first <= 1x shadow git.
# Each unchanged snapshot opens the store afresh (as each `aibuddy call` process does), so its
# stat cache comes from disk. Prints numbers and ratios; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FILES=${FILES:-10000}
BYTES=${BYTES:-209715200}
N=${N:-21}
cargo build --release --locked -q -p aibuddy-checkpoint --bin aibuddy-checkpoint-bench
BIN="${CARGO_TARGET_DIR:-target}/release/aibuddy-checkpoint-bench"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
"$BIN" gen "$tree" "$FILES" "$BYTES"
echo "tree: $(find "$tree" -type f | wc -l) files, $(du -sm "$tree" | cut -f1) MB"

ms() { echo $(( ($(date +%s%N) - $1) / 1000 )); }   # microseconds since $1 (ns)
p50() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Shadow git: first snapshot, then N unchanged ones.
export GIT_DIR="$work/shadow.git" GIT_WORK_TREE="$tree"
git init -q
git config core.autocrlf false
t=$(date +%s%N); git add -A; git write-tree >/dev/null; git_first=$(ms "$t")
: > "$work/git.txt"
for _ in $(seq "$N"); do
  t=$(date +%s%N); git add -A; git write-tree >/dev/null; ms "$t" >> "$work/git.txt"
done
unset GIT_DIR GIT_WORK_TREE
git_p50=$(p50 < "$work/git.txt")

# Checkpoints: the same.
"$BIN" "$work/data" "$tree" "$N" > "$work/ckpt.out"
ck_first=$(grep '^first_ms=' "$work/ckpt.out" | sed 's/first_ms=\([0-9.]*\).*/\1/' | awk '{printf "%d", $1*1000}')
grep '^unchanged_ms=' "$work/ckpt.out" | sed 's/unchanged_ms=\([0-9.]*\).*/\1/' | awk '{printf "%d\n", $1*1000}' > "$work/ck.txt"
ck_p50=$(p50 < "$work/ck.txt")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "PASS" : "MISS" }'; }
un_ratio=$(ratio "$ck_p50" "$git_p50")
first_ratio=$(ratio "$ck_first" "$git_first")
printf 'shadow git   first %8.1f ms   unchanged p50 %7.2f ms\n' "$(ratio "$git_first" 1000)" "$(ratio "$git_p50" 1000)"
printf 'checkpoints  first %8.1f ms   unchanged p50 %7.2f ms\n' "$(ratio "$ck_first" 1000)" "$(ratio "$ck_p50" 1000)"
printf 'unchanged p50: %.2f ms (goal <= 25 ms: %s), %sx shadow git (goal <= 0.5x: %s)\n' \
  "$(ratio "$ck_p50" 1000)" "$(verdict "$(ratio "$ck_p50" 1000)" 25)" "$un_ratio" "$(verdict "$un_ratio" 0.5)"
printf 'first snapshot: %sx shadow git (goal <= 1x: %s)\n' "$first_ratio" "$(verdict "$first_ratio" 1)"
echo "a checkpointed call takes two snapshots (before and after): per call $(ratio $((2 * ck_p50)) 1000) ms with nothing changed"
