#!/usr/bin/env bash
# Peak memory of `mfu enrich` on inputs that are larger than they look, and the factors behind
# --max-memory's estimates (docs/memory.md).
#
# usage: benches/memory.sh [MFU_BINARY [OLD_BINARY]]   (default target/release/mfu; builds nothing)
#
# 1. A long run's repetitive log: LINES (default 20,000,000) identical JSON lines, 3.6 GB decompressed,
#    about 300 KB as zstd -19. Enriched to Parquet by MFU_BINARY, and by OLD_BINARY when given (the same
#    output bytes are checked with cmp).
# 2. A Parquet file written as one row group of 10M rows, streamed batch by batch.
# 3. Whole reads (-o -, the whole-input way): peak RSS over decompressed bytes for JSON Lines and CSV
#    tables (ROWS rows from ../shared/bench/gen_logs.py) and an HF trainer_state.json: the factors
#    TABLE_FACTOR and DOCUMENT_FACTOR in src/read/memory.rs must stay above what this prints.
# Needs: zstd, python3 with polars, numpy and pyarrow, /usr/bin/time (Debian package "time").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${MFU_SHARED_BENCH:-$root/../shared/bench}
mfu=${1:-$root/target/release/mfu}
old=${2:-}
lines=${LINES:-20000000}
rows=${ROWS:-1000000}
dir=${MFU_BENCH_DIR:-/var/tmp/mfu-bench}/memory
mkdir -p "$dir"
[[ -x $mfu ]] || { echo "memory.sh: build first: cargo build --release" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Runs "$@", printing wall seconds and peak RSS (MiB); the command's own stderr goes to $out/stderr.
peak() {
  /usr/bin/time -o "$out/time" -f "%e %M" "$@" >/dev/null 2>"$out/stderr" \
    || { echo "FAILED: $*" >&2; cat "$out/stderr" >&2; return 1; }
  read -r secs kib <"$out/time"
  echo "$secs $((kib / 1024))"
}

log=$dir/repetitive-$lines.jsonl.zst
if [[ ! -s $log ]]; then
  line='{"step":1,"step_time_s":2.9,"tokens":131072,"num_devices":8,"flops_per_token":4.2e10,"device_name":"NVIDIA H100 80GB HBM3","dtype":"bf16","loss":2.25,"lr":0.0003,"grad_norm":1.0}'
  yes "$line" | head -n "$lines" | zstd -q -19 -T2 -o "$log"
fi
printf '== repetitive log: %s lines, %s bytes on disk, %s bytes decompressed\n' \
  "$lines" "$(stat -c %s "$log")" "$(zstd -dc "$log" | wc -c)"
printf '%-14s %8s %10s\n' binary seconds peak_MiB
read -r s m < <(peak "$mfu" enrich "$log" -o "$out/new.parquet" -q)
printf '%-14s %8s %10s\n' mfu "$s" "$m"
if [[ -n $old ]]; then
  read -r s m < <(peak "$old" enrich "$log" -o "$out/old.parquet" -q)
  printf '%-14s %8s %10s\n' old "$s" "$m"
  cmp -s "$out/new.parquet" "$out/old.parquet" && echo "outputs: the same bytes" || echo "outputs: DIFFER"
fi

big=$dir/one-row-group.parquet
if [[ ! -s $big ]]; then
  python3 - "$big" <<'EOF'
import sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
n = 10_000_000
rng = np.random.default_rng(1)
t = pa.table({"step": np.arange(n), "step_time_s": rng.uniform(2, 3, n), "tokens": np.full(n, 131072),
              "num_devices": np.full(n, 8), "flops_per_token": np.full(n, 4.2e10),
              "device_name": pa.array(["NVIDIA H100 80GB HBM3"] * n), "dtype": pa.array(["bf16"] * n),
              "loss": rng.uniform(1, 3, n)})
pq.write_table(t, sys.argv[1], row_group_size=n)
EOF
fi
read -r s m < <(peak "$mfu" enrich "$big" -o "$out/big.parquet" -q)
printf '== one row group of 10M rows (%s bytes of Parquet): %s s, %s MiB peak\n' "$(stat -c %s "$big")" "$s" "$m"

echo "== whole reads (-o -): peak RSS / decompressed bytes (Parquet: / its page bytes, from the footer)"
for fmt in jsonl csv parquet; do
  [[ -s $dir/log-$rows.$fmt ]] || python3 "$bench/gen_logs.py" --rows "$rows" --runs 200 --format $fmt "$dir/log-$rows.$fmt"
done
state=$dir/trainer_state-$rows.json
if [[ ! -s $state ]]; then
  python3 - "$state" "$rows" <<'EOF'
import json, sys
path, rows = sys.argv[1], int(sys.argv[2])
history = [{"epoch": s / rows, "grad_norm": 1.5 + s % 7 * 0.01, "learning_rate": 3e-4, "loss": 2.0 + s % 13 * 0.01,
            "num_input_tokens_seen": s * 131072, "step": s} for s in range(1, rows + 1)]
history.append({"epoch": 1.0, "step": rows, "total_flos": 1e18, "train_loss": 2.1, "train_runtime": rows * 2.9})
json.dump({"global_step": rows, "log_history": history, "max_steps": rows}, open(path, "w"), indent=2)
# The same document without indentation: more of it per byte.
json.dump({"global_step": rows, "log_history": history, "max_steps": rows}, open(path.replace(".json", "-compact.json"), "w"))
EOF
fi
flags=(--device "NVIDIA H100 80GB HBM3" --dtype bf16 --num-devices 8 --flops-per-token 4.2e10)
printf '%-22s %12s %8s %10s %7s\n' input bytes seconds peak_MiB factor
for input in "$dir/log-$rows.jsonl" "$dir/log-$rows.csv" "$dir/log-$rows.parquet" "$state" "${state%.json}-compact.json"; do
  extra=()
  [[ $input == *.json ]] && extra=("${flags[@]}")
  size=$(stat -c %s "$input")
  [[ $input == *.parquet ]] && size=$(python3 -c 'import sys, pyarrow.parquet as pq
m = pq.ParquetFile(sys.argv[1]).metadata
print(sum(m.row_group(i).total_byte_size for i in range(m.num_row_groups)))' "$input")
  read -r s m < <(peak "$mfu" enrich "$input" -o - --output-format parquet -q --max-memory 16G "${extra[@]}")
  printf '%-22s %12s %8s %10s %7.2f\n' "$(basename "$input")" "$size" "$s" "$m" \
    "$(echo "$m * 1048576 / $size" | bc -l)"
done
