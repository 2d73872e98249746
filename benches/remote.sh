#!/usr/bin/env bash
# Inputs read from object storage against the same files on local disk: an S3-compatible server on this
# machine (moto's server mode, 127.0.0.1), so the figures show what mfu adds (listing, fetching 16
# objects at a time, staging, upload), not a network.
#
# usage: benches/remote.sh [MFU_BINARY] [ROWS]        (defaults: target/release/mfu, 1000000)
# Inputs come from ../shared/bench/gen_logs.py into $MFU_BENCH_DIR (default /var/tmp/mfu-bench), as
# compare.sh makes them: 2000 per-run JSONL files and one Parquet file of ROWS rows. Each command runs RUNS
# times (default 3) after one warm-up; the table shows median wall seconds and median peak RSS.
# Needs: python3 -m pip install 'moto[server]' boto3 polars numpy; /usr/bin/time (Debian package "time").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mfu=${1:-target/release/mfu}
rows=${2:-1000000}
runs=${RUNS:-3}
gen=$here/../shared/bench/gen_logs.py
dir=${MFU_BENCH_DIR:-/var/tmp/mfu-bench}/$rows
mkdir -p "$dir"
[[ -x $mfu ]] || { echo "remote.sh: no executable at $mfu (build with cargo build --release)" >&2; exit 2; }
[[ -s $dir/log.parquet ]] || python3 "$gen" --rows "$rows" --runs 200 --format parquet "$dir/log.parquet"
[[ -d $dir/many ]] || python3 "$gen" --rows "$rows" --runs 2000 --split-runs --format jsonl "$dir/many"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=http://127.0.0.1:$port
coproc SERVER { python3 "$here/tests/python/s3_server.py" serve "$port" 2>/dev/null; }
read -r ready <&"${SERVER[0]}"
[[ $ready == ready ]] || { echo "remote.sh: the S3 server did not start" >&2; exit 1; }
out=$(mktemp -d)
trap 'exec {SERVER[1]}>&-; wait; rm -rf "$out"' EXIT
python3 "$here/tests/python/s3_server.py" put "$endpoint" bench many "$dir/many" >/dev/null
mkdir -p "$out/one" && cp "$dir/log.parquet" "$out/one/"
python3 "$here/tests/python/s3_server.py" put "$endpoint" bench parquet "$out/one" >/dev/null
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL=$endpoint AWS_ALLOW_HTTP=true

# median wall seconds and median peak KiB of RUNS runs of "$@"
measure() {
  local samples=() rss=() t
  "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; echo "nan nan"; return; }
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -o "$out/time" -f "%e %M" "$@" >/dev/null 2>/dev/null
    t=$(tail -n 1 "$out/time")
    samples+=("${t% *}"); rss+=("${t#* }")
  done
  printf '%s\n' "${samples[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%s ", a[int((NR+1)/2)]}'
  printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

printf '%-22s %9s %9s %7s %9s %9s %9s\n' input local_s s3_s ratio local_MiB s3_MiB extra_MiB
row() {
  local name=$1 local_input=$2 url=$3
  read -r l_s l_k < <(measure "$mfu" enrich "$local_input" -o "$out/l.parquet" --force -q)
  read -r r_s r_k < <(measure "$mfu" enrich "$url" -o "$out/r.parquet" --force -q)
  awk -v n="$name" -v ls="$l_s" -v rs="$r_s" -v lk="$l_k" -v rk="$r_k" 'BEGIN {
    printf "%-22s %9.2f %9.2f %7.2f %9.0f %9.0f %9.0f\n", n, ls, rs, rs / ls, lk / 1024, rk / 1024, (rk - lk) / 1024 }'
}
row "2000 JSONL logs" "$dir/many" "s3://bench/many/"
row "Parquet ($rows rows)" "$dir/log.parquet" "s3://bench/parquet/log.parquet"
read -r u_s u_k < <(measure "$mfu" enrich "$dir/log.parquet" -o "s3://bench/out/log.parquet" --force -q)
printf '%-22s %9s %9.2f %7s %9s %9.0f\n' "Parquet -> s3:// output" - "$u_s" - - "$((u_k / 1024))"
