#!/usr/bin/env bash
# Side-by-side timing of `mfu enrich` against the Python Polars and DuckDB anchors of ../shared/bench on the
# same inputs, in one run. Same method as ../shared/bench/compare.sh (median of RUNS runs after a warm-up,
# median peak RSS), with two differences: /usr/bin/time reports to a file (the shared script sends its
# report to /dev/null with the command's stderr, so every figure reads 0), and mfu runs with --force since
# each run writes the same output again.
#
# usage: benches/compare.sh [ROWS]     (default 1000000; builds nothing: run cargo build --release first)
# Needs: python3 -m pip install polars duckdb numpy; /usr/bin/time (Debian package "time").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${MFU_SHARED_BENCH:-$root/../shared/bench}
mfu=$root/target/release/mfu
rows=${1:-1000000}
runs=${RUNS:-5}
dir=${MFU_BENCH_DIR:-/var/tmp/mfu-bench}/$rows
mkdir -p "$dir"
[[ -x $mfu ]] || { echo "compare.sh: build first: cargo build --release" >&2; exit 2; }
for fmt in jsonl csv parquet; do
  [[ -s $dir/log.$fmt ]] || python3 "$bench/gen_logs.py" --rows "$rows" --runs 200 --format $fmt "$dir/log.$fmt"
done
[[ -d $dir/many ]] || python3 "$bench/gen_logs.py" --rows "$rows" --runs 2000 --split-runs --format jsonl "$dir/many"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# median wall seconds and median peak KiB of RUNS runs of "$@"
measure() {
  local samples=() rss=()
  "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; echo "nan nan"; return; }
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -o "$out/time" -f "%e %M" "$@" >/dev/null 2>&1
    read -r s k < "$out/time"
    samples+=("$s"); rss+=("$k")
  done
  printf '%s\n' "${samples[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%s ", a[int((NR+1)/2)]}'
  printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

printf '%-14s %10s %10s %10s %9s %9s %9s %8s %8s\n' input mfu_s polars_s duckdb_s mfu_MiB pol_MiB duck_MiB vs_pol vs_duck
for input in log.jsonl log.csv log.parquet many; do
  read -r m_s m_k < <(measure "$mfu" enrich "$dir/$input" -o "$out/m.parquet" --force --quiet)
  read -r p_s p_k < <(measure python3 "$bench/anchor_polars.py" "$dir/$input" "$out/p.parquet")
  read -r d_s d_k < <(measure python3 "$bench/anchor_duckdb.py" "$dir/$input" "$out/d.parquet")
  awk -v i="$input" -v m="$m_s" -v p="$p_s" -v d="$d_s" -v mk="$m_k" -v pk="$p_k" -v dk="$d_k" 'BEGIN {
    printf "%-14s %10.3f %10.3f %10.3f %9.0f %9.0f %9.0f %8.2f %8.2f\n", i, m, p, d, mk/1024, pk/1024, dk/1024, p/m, d/m }'
done
