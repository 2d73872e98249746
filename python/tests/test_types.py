"""The type space through the Python side: a table of corner values (NaN, -0, subnormals, extremes, 64-bit
integer limits, unicode, long text, nulls, an all-null column) enriched by mfu.enrich and by the command
line's Parquet, read back by pyarrow, pandas, polars and DuckDB: every input value as it went in."""

import math
import struct

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import mfu

FLOATS = [float("nan"), -0.0, 5e-324, 1.7976931348623157e308, None, float("inf"), float("-inf"), 1.25]
INTS = [-(2**63), None, 0, 2**63 - 1]
TEXTS = [None, "run-1", 'é, "quoted"; ünïcode ✓', "x" * 300, ""]
ROWS = 2_000


def corner_table() -> pa.Table:
    return pa.table(
        {
            "step": pa.array(range(1, ROWS + 1), pa.int64()),
            "step_time": pa.array([1.5] * ROWS, pa.float64()),
            "tokens": pa.array([131_072] * ROWS, pa.int64()),
            "x_float": pa.array([FLOATS[k % len(FLOATS)] for k in range(ROWS)], pa.float64()),
            "x_int": pa.array([INTS[k % len(INTS)] for k in range(ROWS)], pa.int64()),
            "x_text": pa.array([TEXTS[k % len(TEXTS)] for k in range(ROWS)], pa.string()),
            "x_null": pa.nulls(ROWS, pa.float64()),
        }
    )


OPTIONS = dict(device="NVIDIA H100 80GB HBM3", dtype="bf16", num_devices=8, flops_per_token=4.2e10)


def bits(v):
    """A value compared bit for bit (floats by their IEEE bits, any NaN as one NaN)."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else struct.pack("<d", v)
    return v


def same_columns(got: dict, want: dict):
    for name, values in want.items():
        assert [bits(v) for v in got[name]] == [bits(v) for v in values], name


def test_enrich_passes_every_input_value_through():
    table = corner_table()
    out = mfu.enrich(table, **OPTIONS)
    same_columns(out.select(table.column_names).to_pydict(), table.to_pydict())


def test_the_cli_parquet_of_corner_values_reads_the_same_everywhere(mfu_cli, tmp_path):
    table = corner_table()
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    out = tmp_path / "out.parquet"
    mfu_cli(
        "enrich", str(source), "-o", str(out), "-q",
        "--device", OPTIONS["device"], "--dtype", "bf16", "--num-devices", "8", "--flops-per-token", "4.2e10",
    )
    want = table.to_pydict()
    names = table.column_names
    same_columns(pq.read_table(out).select(names).to_pydict(), want)
    # pandas holds float nulls as NaN and integer columns with nulls as floats: compare the floats and text.
    frame = pq.read_table(out).to_pandas()
    assert [bits(v) for v in frame["x_float"].tolist()] == [
        bits(float("nan") if v is None else v) for v in want["x_float"]
    ]
    text = [None if isinstance(v, float) and math.isnan(v) else v for v in frame["x_text"].tolist()]
    assert text == want["x_text"]  # pandas 3 marks missing text with NaN
    same_columns(pl.read_parquet(out).select(names).to_dict(as_series=False), want)
    rows = duckdb.sql(f"SELECT {', '.join(names)} FROM read_parquet('{out}') ORDER BY step").fetchall()
    same_columns({n: [r[i] for r in rows] for i, n in enumerate(names)}, want)
