#!/usr/bin/env python3
"""mfu.enrich on an in-memory table against the same enrichment written in pandas, side by side.

Makes a log of N rows with ../shared/bench/gen_logs.py (as Parquet, read into a pyarrow Table), then times,
alternating, K rounds each:
  mfu      mfu.enrich(table)                    pyarrow in, pyarrow out, no pandas anywhere
  pandas   the enrichment a user writes in pandas, from a pandas DataFrame already in memory: peaks
           resolved once per distinct (device_name, dtype) with word-bounded regexes, then the columns
  pandas+  the same starting from the pyarrow table and ending in one, as mfu does: to_pandas(), the
           enrichment, pa.Table.from_pandas() (the round trip mfu does not need)
and reports the median of each and their ratio, plus rows per second per core for mfu in this process
(`jobs` threads) and, with --spark, through Spark local[2] mapInArrow over the same rows.

usage: python_enrich.py [--rows N] [--rounds K] [--spark]
Needs: the mfu wheel built in release (`pip install ./python`), pyarrow, pandas, polars, numpy;
pyspark for --spark.
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import mfu

ROOT = pathlib.Path(__file__).resolve().parents[1]
GEN = ROOT.parent / "shared" / "bench" / "gen_logs.py"

PEAKS = [  # most specific first, word-bounded: what a careful pandas user writes
    (r"\bH100\b.*\bPCIe\b", {"bf16": 756.0e12, "fp16": 756.0e12, "fp32": 51.2e12}),
    (r"\bH100\b", {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 67.0e12}),
    (r"\bH200\b", {"bf16": 989.4e12, "fp16": 989.4e12, "fp32": 67.0e12}),
    (r"\bA100\b", {"bf16": 312.0e12, "fp16": 312.0e12, "fp32": 19.5e12}),
    (r"\bA10G\b", {"bf16": 70.0e12, "fp16": 70.0e12, "fp32": 31.2e12}),
    (r"\bL4\b", {"bf16": 121.0e12, "fp16": 121.0e12, "fp32": 30.3e12}),
    (r"\bMI300X\b", {"bf16": 1307.4e12, "fp16": 1307.4e12, "fp32": 163.4e12}),
]
PATTERNS = [(re.compile(p, re.IGNORECASE), v) for p, v in PEAKS]


def resolve(name, dtype):
    for pattern, peaks in PATTERNS:
        if isinstance(name, str) and pattern.search(name):
            return peaks.get(dtype)
    return None


def pandas_enrich(df: pd.DataFrame) -> pd.DataFrame:
    pairs = df[["device_name", "dtype"]].drop_duplicates()
    pairs["peak_flops_per_device"] = [resolve(n, d) for n, d in pairs.itertuples(index=False)]
    out = df.merge(pairs, on=["device_name", "dtype"], how="left")
    step_s = out["step_time_s"]
    fwd_bwd_s = out["fwd_bwd_time_s"]
    out["tokens_per_second"] = out["tokens"] / step_s
    work = out["tokens"] * out["flops_per_token"] / out["num_devices"]
    out["achieved_flops_per_device"] = work / step_s
    out["mfu_wall_clock"] = out["achieved_flops_per_device"] / out["peak_flops_per_device"]
    out["mfu_fwd_bwd"] = work / fwd_bwd_s / out["peak_flops_per_device"]
    return out


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def spark_rows_per_second(path: str, rows: int) -> float:
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .getOrCreate()
    )
    df = spark.read.parquet(path).repartition(2).cache()
    df.count()
    schema = from_arrow_schema(mfu.output_schema(to_arrow_schema(df.schema)))
    out = df.mapInArrow(lambda batches: mfu.enrich_batches(batches, jobs=1), schema)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        out.write.mode("overwrite").format("noop").save()
        times.append(time.perf_counter() - start)
    spark.stop()
    return rows / statistics.median(times)


def main():
    warnings.simplefilter("ignore", mfu.MfuWarning)  # the log's unknown device, once per call
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--spark", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log.parquet")
        subprocess.run(
            [sys.executable, str(GEN), "--rows", str(args.rows), "--runs", "200", "--format", "parquet", path],
            check=True,
        )
        table = pq.read_table(path)
        frame = table.to_pandas()
        runs = {"mfu": [], "pandas": [], "pandas+": []}
        for _ in range(args.rounds):
            t, enriched = timed(lambda: mfu.enrich(table))
            runs["mfu"].append(t)
            t, _ = timed(lambda: pandas_enrich(frame))
            runs["pandas"].append(t)
            t, _ = timed(
                lambda: pa.Table.from_pandas(pandas_enrich(table.to_pandas()), preserve_index=False)
            )
            runs["pandas+"].append(t)
        mid = {k: statistics.median(v) for k, v in runs.items()}
        cores = os.cpu_count() or 1
        print(f"rows: {table.num_rows}, columns in: {table.num_columns}, out: {enriched.num_columns}")
        for k, v in mid.items():
            print(f"{k:>8}: median {v:.3f}s of {args.rounds} ({table.num_rows / v / 1e6:.1f} M rows/s)")
        print(f"   ratio: pandas / mfu = {mid['pandas'] / mid['mfu']:.1f}x, pandas+ / mfu = {mid['pandas+'] / mid['mfu']:.1f}x")
        print(f"mfu, one process: {table.num_rows / mid['mfu'] / cores / 1e6:.2f} M rows/s per core ({cores} cores)")
        if args.spark:
            rate = spark_rows_per_second(path, table.num_rows)
            print(f"mfu under Spark local[2] (mapInArrow, noop sink): {rate / 1e6:.2f} M rows/s, {rate / 2 / 1e6:.2f} M per core")


if __name__ == "__main__":
    main()
