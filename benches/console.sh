#!/usr/bin/env bash
# The general console reader against a Python `re` loop that pulls the same fields (and against the
# minimal loop of the first measurements), side by side in one run: a torchtitan-style log of SIZE_MB
# megabytes (colour codes, the batch line, a step line a step), `mfu enrich` to Parquet in the release
# build. Prints seconds, MB/s and peak RSS for each, and the ratio.
#   cargo build --release --locked && SIZE_MB=1024 RUNS=3 bash benches/console.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB="${SIZE_MB:-1024}"
RUNS="${RUNS:-3}"
MFU="${MFU:-target/release/mfu}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 benches/console_log.py gen "$work/train.log" "$SIZE_MB"
bytes=$(stat -c %s "$work/train.log")
best() { sort -n | head -1; }
run() { # label, command...: the best of RUNS wall times and the largest peak RSS
  local label="$1"; shift
  local times=() rss=0
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/stderr" || { cat "$work/stderr"; exit 1; }
    read -r t m < "$work/time"
    times+=("$t"); (( m > rss )) && rss=$m
  done
  local t; t=$(printf '%s\n' "${times[@]}" | best)
  echo "$label $t $rss" >> "$work/results"
  awk -v l="$label" -v t="$t" -v r="$rss" -v b="$bytes" \
    'BEGIN { printf "%-12s %8.2f s  %8.1f MB/s  peak RSS %7.1f MiB\n", l, t, b / 1048576 / t, r / 1024 }'
}
echo "log: $((bytes / 1048576)) MiB, best of $RUNS"
run mfu "$MFU" enrich "$work/train.log" -o "$work/out.parquet" --force --quiet \
  --dtype bf16 --flops-per-token 1e9
run python-re python3 benches/console_log.py re "$work/train.log"
run re-minimal python3 benches/console_log.py re-minimal "$work/train.log"
awk '{ t[$1] = $2 } END {
  printf "mfu is %.1fx the Python re loop (the same fields), %.1fx the minimal loop (3 fields, no wall time)\n",
    t["python-re"] / t["mfu"], t["re-minimal"] / t["mfu"] }' "$work/results"
