#!/usr/bin/env python3
"""Compares mfu's reading of TensorBoard event files with TensorBoard's own EventAccumulator.

usage: check_tfevents.py MFU_BINARY RUNS_FOLDER [MFU_FLAG...]   (needs: pip install tensorboard)

Every run folder under RUNS_FOLDER is loaded by EventAccumulator (simple values as Scalars, TF2 tensor
summaries as Tensors); mfu enriches the folder to JSON Lines; each (run, step, tag) value must be the
same, and mfu must have no other scalar.
"""
import json
import math
import os
import subprocess
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

FLAGS = ["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16", "--num-devices", "8",
         "--flops-per-token", "4.2e10", "--quiet"]
NOT_TAGS = {"step", "wall_time", "run_id", "source_file", "resolved_device", "peak_flops_per_device",
            "tokens_per_second", "achieved_flops_per_device", "mfu_wall_clock", "mfu_fwd_bwd"}


def accumulated(folder):
    ea = EventAccumulator(folder, size_guidance={"scalars": 0, "tensors": 0, "histograms": 1})
    ea.Reload()
    values = {}
    for tag in ea.Tags()["scalars"]:
        for e in ea.Scalars(tag):
            values[(e.step, tag)] = float(e.value)
    for tag in ea.Tags()["tensors"]:
        meta = ea.SummaryMetadata(tag)
        if meta.plugin_data.plugin_name not in ("", "scalars"):
            continue
        for e in ea.Tensors(tag):
            array = tensor_util.make_ndarray(e.tensor_proto)
            if array.ndim == 0:
                values[(e.step, tag)] = float(array)
    return values


def main(mfu, runs, extra):
    out = subprocess.run([mfu, "enrich", runs, "-o", "-", "--output-format", "jsonl", *FLAGS, *extra],
                         check=True, capture_output=True, text=True).stdout
    ours = {}
    for line in out.splitlines():
        row = json.loads(line)
        for tag, value in row.items():
            if tag not in NOT_TAGS and value is not None:
                ours[(row["run_id"], row["step"], tag)] = value
    theirs = {}
    for run in sorted(os.listdir(runs)):
        for (step, tag), value in accumulated(os.path.join(runs, run)).items():
            theirs[(run, step, tag)] = value
    assert theirs, "EventAccumulator read nothing"
    missing = sorted(set(theirs) - set(ours))
    extra = sorted(set(ours) - set(theirs))
    assert not missing and not extra, (missing[:5], extra[:5])
    for key, value in theirs.items():
        assert math.isclose(ours[key], value, rel_tol=0, abs_tol=0) or (math.isnan(value) and math.isnan(ours[key])), (key, ours[key], value)
    print(f"python check: {runs}: mfu reads the same {len(theirs)} scalar values as TensorBoard's EventAccumulator")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
