#!/usr/bin/env bash
# mfu against TensorBoard's own EventAccumulator, side by side in one run, median of RUNS (default 3)
# after a warm-up, on two runs:
# - scalars: SCALARS scalar values (default 1,000,000: 250,000 steps of 4 tags), written with TensorBoard's
#   own record writer;
# - images: a run whose bytes are mostly images and histograms, as real runs' are: IMAGE_STEPS steps
#   (default 20,000) of 4 scalars, and every 10th step a 128x128 RGB image and a histogram of 10,000
#   values, written with tensorboardX's SummaryWriter.
#
# usage: benches/tfevents.sh [MFU_BINARY]      (default target/release/mfu; builds nothing)
# Needs: pip install tensorboard tensorboardX numpy; /usr/bin/time (Debian package "time").
# EventAccumulator only loads the values; mfu also enriches them and writes Parquet, so the ratio is
# conservative.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mfu=${1:-$root/target/release/mfu}
scalars=${SCALARS:-1000000}
image_steps=${IMAGE_STEPS:-20000}
runs=${RUNS:-3}
dir=${MFU_BENCH_DIR:-/var/tmp/mfu-bench}/tfevents-$scalars
images=${MFU_BENCH_DIR:-/var/tmp/mfu-bench}/tfevents-images-$image_steps
[[ -x $mfu ]] || { echo "tfevents.sh: build first: cargo build --release" >&2; exit 2; }
if [[ ! -d $dir/run ]]; then
  mkdir -p "$dir/run"
  python3 - "$dir/run" "$scalars" <<'PY'
import os, sys
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter
folder, scalars = sys.argv[1], int(sys.argv[2])
tags = ["train/loss", "perf/step_time_s", "tokens", "lr"]
with open(os.path.join(folder, "events.out.tfevents.1700000000.bench.1.0"), "wb") as f:
    w = RecordWriter(f)
    w.write(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())
    for step in range(scalars // len(tags)):
        values = [summary_pb2.Summary.Value(tag=t, simple_value=v)
                  for t, v in zip(tags, (3.0 - step * 1e-6, 2.5 + (step % 7) * 0.01, 131072.0, 3e-4))]
        w.write(event_pb2.Event(wall_time=1.7e9 + 2.5 * step, step=step,
                                summary=summary_pb2.Summary(value=values)).SerializeToString())
    w.flush()
PY
fi
if [[ ! -d $images/run ]]; then
  mkdir -p "$images/run"
  python3 - "$images/run" "$image_steps" <<'PY'
import sys
import numpy as np
from tensorboardX import SummaryWriter
folder, steps = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
w = SummaryWriter(folder)
for step in range(steps):
    w.add_scalar("train/loss", 3.0 - step * 1e-5, step, walltime=1.7e9 + 2.5 * step)
    w.add_scalar("perf/step_time_s", 2.5 + (step % 7) * 0.01, step, walltime=1.7e9 + 2.5 * step)
    w.add_scalar("tokens", 131072.0, step, walltime=1.7e9 + 2.5 * step)
    w.add_scalar("lr", 3e-4, step, walltime=1.7e9 + 2.5 * step)
    if step % 10 == 0:
        w.add_image("samples", rng.integers(0, 255, (3, 128, 128), dtype=np.uint8), step,
                    walltime=1.7e9 + 2.5 * step)
        w.add_histogram("weights", rng.normal(size=10000), step, walltime=1.7e9 + 2.5 * step)
w.close()
PY
fi
cat > "$dir/accumulate.py" <<'PY'
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
ea = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
ea.Reload()
print(sum(len(ea.Scalars(t)) for t in ea.Tags()["scalars"]))
PY
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
measure() {
  local samples=() rss=()
  "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -o "$out/time" -f "%e %M" "$@" >/dev/null 2>&1
    read -r s k < "$out/time"
    samples+=("$s"); rss+=("$k")
  done
  printf '%s\n' "${samples[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%s ", a[int((NR+1)/2)]}'
  printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
compare() {
  local run=$1 label=$2
  printf '%s: %s bytes of events\n' "$label" "$(du -b "$run" | cut -f1)"
  read -r m_s m_k < <(measure "$mfu" enrich "$run" -o "$out/m.parquet" --force --quiet \
    --device "NVIDIA H100 80GB HBM3" --dtype bf16 --num-devices 8 --flops-per-token 4.2e10)
  read -r e_s e_k < <(measure python3 "$dir/accumulate.py" "$run")
  awk -v m="$m_s" -v e="$e_s" -v mk="$m_k" -v ek="$e_k" 'BEGIN {
    printf "  mfu enrich -> Parquet  %8.2f s %8.0f MiB\n", m, mk / 1024
    printf "  EventAccumulator       %8.2f s %8.0f MiB\n", e, ek / 1024
    printf "  mfu is %.1fx faster\n", e / m }'
}
compare "$dir/run" "$scalars scalars"
compare "$images/run" "$image_steps steps of scalars, with images and histograms"
