#!/usr/bin/env bash
# `mfu summary`, `goodput` and `audit` of a large torchtitan-style console log, which they fold window by
# window: wall time and peak RSS of each, side by side with a BEFORE binary where one is given (each
# command's two runs one after the other), and whether their outputs are the same bytes.
#   cargo build --release --locked && SIZE_MB=1024 KIND=gen bash benches/folds.sh
#   BEFORE=/path/to/older/mfu SIZE_MB=4096 KIND=gen-noisy bash benches/folds.sh
# KIND is benches/console_log.py's generator: gen (a few values repeated), gen-noisy (each step's time
# and rate drawn at random: thousands of distinct values), gen-distinct (nearly every row's differ).
# LOG=path reuses a log instead of generating one.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB="${SIZE_MB:-1024}"
KIND="${KIND:-gen}"
MFU="${MFU:-target/release/mfu}"
BEFORE="${BEFORE:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="${LOG:-}"
if [ -z "$log" ]; then
  log="$work/train.log"
  python3 benches/console_log.py "$KIND" "$log" "$SIZE_MB"
fi
echo "log: $(( $(stat -c %s "$log") / 1048576 )) MiB ($KIND)"
binaries=()
[ -n "$BEFORE" ] && binaries+=("before=$BEFORE")
binaries+=("now=$MFU")
for command in summary goodput audit; do
  for named in "${binaries[@]}"; do
    name="${named%%=*}"
    binary="${named#*=}"
    /usr/bin/time -f "%e %M" -o "$work/time" "$binary" "$command" "$log" --quiet \
      --dtype bf16 --flops-per-token 1e9 --format csv --max-memory 20G > "$work/$command.$name.csv"
    read -r t m < "$work/time"
    printf "%-8s %-7s %7.2f s  peak RSS %7.1f MiB\n" "$command" "$name" "$t" "$(echo "$m / 1024" | bc -l)"
  done
  if [ -n "$BEFORE" ]; then
    if cmp -s "$work/$command.before.csv" "$work/$command.now.csv"; then
      echo "$command: the same bytes"
    else
      echo "$command: the outputs differ"
    fi
  fi
done
