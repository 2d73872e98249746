#!/usr/bin/env bash
# `mfu goodput` on one run of ROWS rows over ATTEMPTS attempts (each resuming 100 steps before the last
# one stopped, 60 s down between them), a CSV of step, wall_time, step_time_s and tokens, release build.
# Prints the wall time and peak RSS of `mfu goodput` and, for the share the reading takes, of `mfu
# enrich` on the same file.
#   cargo build --release --locked && ROWS=1000000 ATTEMPTS=25 bash benches/goodput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-1000000}"
ATTEMPTS="${ATTEMPTS:-25}"
MFU="${MFU:-target/release/mfu}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$work/run.csv" "$ROWS" "$ATTEMPTS" <<'PY'
import sys
path, rows, attempts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = rows // attempts
clock, step = 1_700_000_000.0, 0
with open(path, "w") as out:
    out.write("step,wall_time,step_time_s,tokens\n")
    for a in range(attempts):
        step = max(0, step - 100)
        clock += 60.0
        for k in range(per):
            step += 1
            t = 0.5 + (7.0 if k == 0 else 0.0) + (step % 7) * 0.001
            clock += t
            out.write(f"{step},{clock:.3f},{t:.3f},65536\n")
PY
for command in goodput enrich; do
  out=/dev/null
  extra=()
  [ "$command" = enrich ] && extra=(-o "$work/out.parquet" --force)
  /usr/bin/time -f "%e %M" -o "$work/time" "$MFU" "$command" "$work/run.csv" --quiet \
    --num-devices 8 --flops-per-token 1e9 --device H100 --dtype bf16 "${extra[@]}" > "$out"
  read -r t m < "$work/time"
  printf "mfu %-8s %d rows, %d attempts: %6.2f s, peak RSS %6.1f MiB\n" "$command" "$ROWS" "$ATTEMPTS" "$t" "$(echo "$m / 1024" | bc -l)"
done
